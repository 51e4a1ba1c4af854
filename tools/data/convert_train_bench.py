#!/usr/bin/env python3
"""Converts whole-step training measurements (parasim.train_bench/1, written on a GPU machine by
tools/scripts/torch_train_step.py) into parasim measured runs (parasim.measured/1) under
scenarios/measured/, one per case: the scenario the benchmark ran, its median step time,
tokens per second and torch.cuda.max_memory_allocated peak.

Usage: python3 tools/data/convert_train_bench.py calibrate/measurements/<dir>/train_bench-run1.json
(writes scenarios/measured/own-<gpu>-<date>-<case>.json; existing files of the same name are replaced)
"""
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "scenarios", "measured")
# The PyTorch release the benchmark ran (the context's torch 2.11.0+cu130), eager, no FSDP.
STACK = "pytorch-fsdp2@2.11"
PROFILES = {"H200": "h200-sxm-141g", "H100": "h100-sxm5-80g", "B200": "b200-sxm-180g"}


def profile_of(gpu):
    for key, prof in PROFILES.items():
        if key in gpu:
            return prof
    raise SystemExit("no profile for GPU %r" % gpu)


def scenario_of(case, gpu_profile):
    gpt = case["arch"] == "gpt"
    return {
        "schema": "parasim.scenario/1",
        "name": "own-%s-%s" % (gpu_profile, case["name"]),
        "stack": STACK,
        "model": {"name": case["name"], "layers": case["layers"], "hidden": case["hidden"], "heads": case["heads"],
                  "kv_heads": case["heads"], "ffn_hidden": case["ffn_hidden"], "vocab": case["vocab"],
                  "activation": "gelu" if gpt else "swiglu", "norm": "layernorm" if gpt else "rmsnorm",
                  "bias": gpt, "dropout": False, "tied_embeddings": True,
                  "position_embedding": "learned", "max_positions": case["seq_len"]},
        "cluster": {"gpu": gpu_profile, "nodes": 1, "gpus_per_node": 1},
        "training": {"global_batch": case["micro_batch"] * case["accum"], "micro_batch": case["micro_batch"],
                     "seq_len": case["seq_len"], "dtype": "bf16", "optimizer": "adam", "flash_attention": True,
                     # The stack's eager F.cross_entropy, native norms (two backward kernels) and
                     # AccumulateGrad; the benchmark passes fused=True to AdamW.
                     "optimizer_impl": "fused"},
        "parallel": {"dp": 1, "tp": 1, "pp": 1, "schedule": "ddp", "recompute": case.get("recompute", "none")},
    }


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    path = sys.argv[1]
    with open(path) as f:
        bench = json.load(f)
    if bench.get("schema") != "parasim.train_bench/1":
        print("%s: /schema: expected \"parasim.train_bench/1\"" % path, file=sys.stderr)
        return 2
    ctx = bench["context"]
    prof = profile_of(ctx["gpu"])
    date = ctx["date"][:10]
    rel = os.path.relpath(os.path.abspath(path), ROOT)
    n = 0
    for i, case in enumerate(bench["cases"]):
        if "error" in case:
            print("%s: skipped (%s)" % (case["name"], case["error"][:80]), file=sys.stderr)
            continue
        run_id = "own-%s-%s-%s" % (prof, date, case["name"])
        run = {
            "schema": "parasim.measured/1",
            "id": run_id,
            "scenario": scenario_of(case, prof),
            "measured": {"step_time_s": case["step_s_median"], "tokens_per_s_per_gpu": case["tokens_per_s"],
                         "peak_mem_gib": {"value": round(case["peak_allocated_bytes"] / 2**30, 3), "read": "framework"}},
            "source": {"title": "parasim device measurement: whole eager-PyTorch training steps (tools/scripts/torch_train_step.py)",
                       "where": "%s, /cases/%d (%s)" % (rel, i, case["name"]),
                       "address": "this repository: %s" % rel},
            "confidence": "high",
            "family": "single GPU",
            "hardware_note": "%s, driver %s; torch %s, CUDA %s, cuDNN %s; %s" % (
                ctx["gpu"], ctx.get("driver", "?"), ctx["torch"], ctx["cuda"], ctx["cudnn"], ctx["date"]),
            "notes": ("median of %d timed steps (CUDA events); %d microbatches of %d x %d tokens per step; PyTorch's "
                      "FlashAttention backend (forced); bf16 weights and gradients, fp32 master weights and fused AdamW "
                      "(the gradients cast to fp32 a chunk at a time, the master copied back to bf16: 40 bytes moved per "
                      "parameter, where parasim's fused step counts 28); forward-backward alone %.4f s, optimizer alone %.4f s"
                      % (len(case["step_s"]), case["accum"], case["micro_batch"], case["seq_len"],
                         sorted(case["fwd_bwd_s"])[len(case["fwd_bwd_s"]) // 2], sorted(case["optimizer_s"])[len(case["optimizer_s"]) // 2])),
        }
        out = os.path.join(OUT, re.sub(r"[^A-Za-z0-9._-]", "_", run_id) + ".json")
        with open(out, "w") as f:
            json.dump(run, f, indent=1)
            f.write("\n")
        n += 1
    print("wrote %d measured runs" % n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
