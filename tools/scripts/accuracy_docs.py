#!/usr/bin/env python3
"""Writes the current figures of docs/accuracy.md and the accuracy table of README.md (each between
its accuracy markers; the hand-written notes around them stay) from
`parasim validate scenarios/measured --json`.
Usage: tools/scripts/accuracy_docs.py [PARASIM_BINARY]   (run from anywhere; about 90 s)"""
import json
import math
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
BEGIN, END = "<!-- accuracy:begin (tools/scripts/generate-docs.sh --accuracy) -->", "<!-- accuracy:end -->"


def pct(x, signed=False):
    return f"{100 * x:+.1f} %" if signed else f"{100 * x:.1f} %"


def band(b):
    return f"{math.exp(b['p10']):.2f}x .. {math.exp(b['p90']):.2f}x"


def stats_row(name, s):
    return f"| {name} | {s['n']} | {pct(s['mape'])} | {pct(s['median'])} | {pct(s['max'])} | {pct(s['bias'], True)} |"


def group_table(title, groups):
    rows = [f"### {title}", "", "| group | runs | throughput MAPE | bias | memory runs | memory MAPE |", "|---|---|---|---|---|---|"]
    for name, g in sorted(groups.items(), key=lambda kv: -kv[1]["throughput"]["n"]):
        t, m = g["throughput"], g["memory"]
        if t["n"] == 0 and m["n"] == 0:
            continue
        mem = (str(m["n"]), pct(m["mape"])) if m["n"] else ("0", "-")
        rows.append(f"| {name} | {t['n']} | {pct(t['mape']) if t['n'] else '-'} | {pct(t['bias'], True) if t['n'] else '-'} | {mem[0]} | {mem[1]} |")
    return "\n".join(rows)


def readme_table(v):
    t, m, o, e = v["throughput"], v["memory"], v["oom"], v["model_error"]
    lines = ["| figure | runs | error (MAPE) | bias |", "|---|---|---|---|",
             f"| throughput (step time, tokens/s, MFU) | {t['n']} | {pct(t['mape'])} | {pct(t['bias'], True)} |",
             f"| peak memory per GPU | {m['n']} | {pct(m['mape'])} | {pct(m['bias'], True)} |",
             f"| out of memory or not | {o['total']} | {o['total'] - o['agree']} wrong | |"]
    for cls, b in sorted(e["classes"].items()):
        lines.append(f"| measured / predicted step, {cls} models (p10 .. p90) | {b['runs']} | {band(b)} | |")
    return "\n".join(lines)


def accuracy_md(v):
    t, o, e = v["throughput"], v["oom"], v["model_error"]
    out = [
        f"parasim's predictions against {v['runs']} measured training runs in `scenarios/measured/`: published runs "
        "(Megatron-LM, NeMo and Megatron-Bridge, llm-foundry, torchtitan, BigScience, the Llama 3 paper and others, each file "
        "naming its source) and the project's own single-GPU steps. No figure in the profiles is tuned to these runs. Error = "
        "predicted / measured - 1 on throughput (step time inverted) and on peak memory; MAPE is the mean absolute error, "
        "bias the mean signed error (positive: parasim predicts faster, or more memory). The full report, with the error "
        "attributed to classes of priced time, is [validation.md](validation.md) "
        "(`parasim validate scenarios/measured -o docs/validation.md`).", "",
        "| figure | runs | MAPE | median | max | bias |", "|---|---|---|---|---|---|",
        stats_row("throughput", t), stats_row("peak memory", v["memory"]),
        f"| out-of-memory verdict | {o['total']} | {o['agree']} agree | | | |", "",
        "## How far to trust one prediction", "",
        "r = ln(measured step / predicted step) over the runs; its p10 .. p90 is the band `parasim run` prints under its "
        "summary and `run --interval` combines with the profile's spread (`calibrate/model_error.json`). Held out by source: "
        "the share of runs inside the band computed from the other sources' runs alone.", "",
        "| model class | runs | sources | measured / predicted step (p10 .. p90) | held out by source |", "|---|---|---|---|---|",
        f"| all | {e['runs']} | {e['sources']} | {band(e)} | {pct(e['held_out_coverage'])} |"]
    for cls, b in sorted(e["classes"].items()):
        out.append(f"| {cls} | {b['runs']} | {b['sources']} | {band(b)} | {pct(b['held_out_coverage'])} |")
    out += ["", "## By group", "", group_table("By source", v["by_source"]), "", group_table("By GPU", v["by_gpu"]), "",
            group_table("By job size (GPUs)", v["by_job_size"])]
    return "\n".join(out)


def replace_between(path, text):
    """Replaces what lies between BEGIN and END in the file at `path` with `text`."""
    doc = path.read_text()
    if BEGIN not in doc or END not in doc:
        sys.exit(f"{path}: no {BEGIN} ... {END} markers")
    head, rest = doc.split(BEGIN, 1)
    path.write_text(head + BEGIN + "\n" + text + "\n" + END + rest.split(END, 1)[1])


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else str(ROOT / "build/tools/parasim")
    proc = subprocess.run([binary, "--data-dir", str(ROOT), "validate", str(ROOT / "scenarios/measured"), "--json", "--no-attribution"],
                          capture_output=True, text=True, check=True)
    v = json.loads(proc.stdout)
    replace_between(ROOT / "docs/accuracy.md", accuracy_md(v))
    replace_between(ROOT / "README.md", readme_table(v))
    print("wrote docs/accuracy.md and the README's accuracy table")


if __name__ == "__main__":
    main()
