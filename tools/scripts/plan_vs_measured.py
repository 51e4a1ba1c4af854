#!/usr/bin/env python3
"""Compares `parasim plan`'s best layout with the layouts of the same model and GPU that
scenarios/measured/ holds, all predicted by parasim for the plan's job.

Each measured run's parallel block (tp, pp, vpp, cp, schedule, recompute, sharding, sequence
parallel, TP overlap) is moved onto the plan's job (its GPU count, sequence length, global batch
and bf16; dp derived from the GPU count, micro-batch kept when it divides the batch) and simulated
with `parasim run --json`; the plan's best must be at least as fast.

usage: plan_vs_measured.py PARASIM PLAN_JSON MODEL_NAME_SUBSTRING [MORE...]
  e.g. plan_vs_measured.py build/tools/parasim plan.json "llama 3 70b" "llama 3.1 70b"
"""
import glob
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
KEEP = ("tp", "pp", "vpp", "cp", "cp_impl", "schedule", "recompute", "recompute_modules", "recompute_num_layers",
        "sequence_parallel", "tp_comm_overlap", "zero_stage", "fsdp", "zero_impl")


def main():
    parasim, plan_file, names = sys.argv[1], sys.argv[2], [n.lower() for n in sys.argv[3:]]
    plan = json.load(open(plan_file))
    job = plan["job"]
    best = next(r for r in plan["rows"] if r["status"] == "ok")
    print(f"plan best: {best['settings']}  {best['tokens_per_s_per_gpu']:.1f} tokens/s/GPU  step {best['step_s']:.3f} s")
    worse = 0
    for f in sorted(glob.glob(os.path.join(ROOT, "scenarios", "measured", "*.json"))):
        m = json.load(open(f))
        sc = m.get("scenario")
        if not isinstance(sc, dict) or sc.get("cluster", {}).get("gpu") != job["gpu"]:
            continue
        model = sc["model"] if isinstance(sc["model"], dict) else {"name": sc["model"]}
        if not any(n in model.get("name", "").lower() for n in names):
            continue
        par = {k: v for k, v in sc["parallel"].items() if k in KEEP}
        shape = par.get("tp", 1) * par.get("pp", 1) * par.get("cp", 1)
        if job["gpus"] % shape:
            print(f"{os.path.basename(f)}: tp*pp*cp = {shape} does not divide {job['gpus']} GPUs; skipped")
            continue
        par["dp"] = job["gpus"] // shape
        mb = sc["training"].get("micro_batch", 1)
        if job["global_batch"] % (mb * par["dp"]):
            mb = 1
        s = {"schema": "parasim.scenario/1", "name": "measured-layout", "model": job["model"],
             "cluster": {"gpu": job["gpu"], "nodes": job["gpus"] // 8, "gpus_per_node": 8},
             "training": {"global_batch": job["global_batch"], "micro_batch": mb, "seq_len": job["seq"]},
             "parallel": par}
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as t:
            json.dump(s, t)
        r = subprocess.run([parasim, "run", "--json", t.name], capture_output=True, text=True)
        os.unlink(t.name)
        if r.returncode != 0:
            print(f"{os.path.basename(f)}: {r.stderr.strip()}")
            continue
        res = json.loads(r.stdout)
        tps = res["tokens_per_s"] / job["gpus"]
        fits = res.get("fits_in_memory", True)
        ok = best["tokens_per_s_per_gpu"] >= tps or not fits
        worse += 0 if ok else 1
        print(f"{os.path.basename(f)}: {json.dumps({k: par[k] for k in par if k != 'fsdp'})} mb {mb}"
              f"{' fsdp' if par.get('fsdp') else ''}: {tps:.1f} tokens/s/GPU{'' if fits else ' (out of memory)'}"
              f" -> plan best {'>=' if ok else '<'}")
    sys.exit(1 if worse else 0)


if __name__ == "__main__":
    main()
