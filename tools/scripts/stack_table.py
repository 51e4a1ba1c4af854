#!/usr/bin/env python3
"""The two stack tables of docs/stacks.md, from the simulator:
- every stack on one job (COMPARE_SCENARIO), from `parasim stack compare --json`;
- each stack on its own job: one representative scenario per stack simulated as it stands (naming
  the stack) and with the stack taken out (parasim's defaults for every stack-dependent field the
  scenario does not set itself), and the step-time difference.

Usage: python3 tools/scripts/stack_table.py [path/to/parasim] [--write]
  prints the Markdown tables; --write replaces them between their markers in docs/stacks.md.
Every stack in stacks/ needs a representative below (the script fails otherwise).
"""
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOC = os.path.join(ROOT, "docs", "stacks.md")
COMPARE_SCENARIO = "scenarios/fsdp-llama3-8b-8xh100.json"

# stack -> (scenario or measured run, why it represents the stack). A measured run of the stack where there is one
# (the job as the framework ran it); otherwise an example scenario with the layout the stack's values apply to.
REPRESENTATIVE = {
    "deepspeed-zero3@0.3": ("scenarios/measured/pub-sc21-table2-zero3-175B-384gpu.json", "SC'21's ZeRO-3 baseline, GPT-3 175B on 384 A100"),
    "deepspeed@0.16": ("scenarios/moe-qwen3-30b-a3b-16xh100-fp8.json", "no measured run: a ZeRO-1 data-parallel example (16 H100)"),
    "llm-foundry@0.0.4": ("scenarios/measured/pub-llmfoundry-h10080-7b-s2048-g256-amp_bf16-11.json", "MPT-7B, FSDP on 8 H100"),
    "megatron-bridge@26.04": ("scenarios/measured/pub-mbridge-26.04-dgx-h100-llama3_70b-fp8-64gpu-tp4pp8cp1.json",
                              "the Llama 3 70B FP8 preset on 64 H100"),
    "megatron-core@0.8": ("scenarios/default.json", "no measured run: parasim's default scenario (interleaved 3D, H100)"),
    "megatron-deepspeed@2022-02": ("scenarios/measured/pub-bloom-prequel-0228-h14336l70a64-dp8tp4pp12mbs2gbs2048.json",
                                   "a BLOOM prequel layout, 384 A100"),
    "megatron-lm@2020": ("scenarios/measured/pub-sc21-table2-ptdp-175B-384gpu.json", "SC'21's PTD-P GPT-3 175B on 384 A100"),
    "nemo@24.07": ("scenarios/measured/pub-nemo2407-llama3-70b-64gpu.json", "Llama 3 70B on 64 H100"),
    "pytorch-fsdp1@2.4": ("scenarios/fsdp-llama2-70b-64xh100.json", "no measured run: FSDP Llama 2 70B on 64 H100"),
    "pytorch-fsdp2@2.11": ("scenarios/measured/own-h200-sxm-141g-2026-11-30-llama-1b.json", "parasim's own Llama 1B run on one H200"),
    "torchtitan@2024-04": ("scenarios/measured/pub-torchtitan-2404-13b-bs2-selective-op.json", "Llama 2 13B, FSDP2 on 64 A100"),
    "torchtitan@2024-12": ("scenarios/measured/pub-torchtitan-2412docs-8b-64a100-selective-op.json", "Llama 3 8B, FSDP2 on 64 A100"),
}


def scenario_of(path):
    j = json.load(open(os.path.join(ROOT, path)))
    return j["scenario"] if j.get("schema") == "parasim.measured/1" else j


def step_time(binary, scenario, tmp):
    with open(tmp, "w") as f:
        json.dump(scenario, f)
    out = subprocess.run([binary, "--data-dir", ROOT, "run", tmp, "--json"], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)["step_time_s"]


def rows(binary):
    names = sorted(f[:-5] for f in os.listdir(os.path.join(ROOT, "stacks")) if f.endswith(".json"))
    missing = [n for n in names if n not in REPRESENTATIVE]
    if missing:
        sys.exit("stack_table.py: no representative scenario for " + ", ".join(missing))
    with tempfile.TemporaryDirectory() as d:
        tmp = os.path.join(d, "scenario.json")
        for name in names:
            path, why = REPRESENTATIVE[name]
            with_stack = dict(scenario_of(path), stack=name)
            without = {k: v for k, v in with_stack.items() if k != "stack"}
            yield name, path, why, step_time(binary, with_stack, tmp), step_time(binary, without, tmp)


def compare_table(binary):
    out = subprocess.run([binary, "--data-dir", ROOT, "stack", "compare", os.path.join(ROOT, COMPARE_SCENARIO), "--json"],
                         check=True, capture_output=True, text=True)
    lines = ["| stack | step time | vs parasim's defaults |", "|---|---|---|"]
    for r in json.loads(out.stdout):
        lines.append("| %s | %.4f s | %+.1f%% |" % (r["stack"], r["step_time_s"], 100 * r["vs_none"]) if "error" not in r
                     else "| %s | does not apply: %s |  |" % (r["stack"], r["error"]))
    return "\n".join(lines) + "\n"


def own_job_table(binary):
    lines = ["| stack | representative scenario | step time, naming the stack | with parasim's defaults | defaults vs stack |",
             "|---|---|---|---|---|"]
    for name, path, why, s, d in rows(binary):
        lines.append("| `%s` | `%s` (%s) | %.4f s | %.4f s | %+.1f%% |" % (name, os.path.basename(path), why, s, d, 100 * (d / s - 1)))
    return "\n".join(lines) + "\n"


def main():
    args = [a for a in sys.argv[1:] if a != "--write"]
    binary = args[0] if args else os.path.join(ROOT, "build", "tools", "parasim")
    tables = {"compare": compare_table(binary), "own job": own_job_table(binary)}
    if "--write" not in sys.argv:
        sys.stdout.write("\n".join(tables.values()))
        return
    doc = open(DOC).read()
    for name, text in tables.items():
        begin, end = "<!-- stack_table.py %s: begin -->" % name, "<!-- stack_table.py %s: end -->" % name
        head, rest = doc.split(begin + "\n", 1)
        doc = head + begin + "\n" + text + end + rest.split(end, 1)[1]
    with open(DOC, "w") as f:
        f.write(doc)


if __name__ == "__main__":
    main()
