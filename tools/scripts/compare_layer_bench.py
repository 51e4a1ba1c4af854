#!/usr/bin/env python3
"""Holds a layer benchmark (parasim.layer_bench/1, from torch_layer_bench.py) against parasim.

For each measured case it writes the equivalent one-GPU scenario, runs `parasim run --json
--kernels` on it and prints, per layer: measured and predicted forward and backward time, and
each forward GEMM shape measured alone against the GEMM kernel model. The difference between the
layer time and its GEMMs is what the simulator's attention and memory-bound kernels must explain.

  python3 tools/scripts/compare_layer_bench.py out/layer_bench.json --gpu h200-sxm-141g
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))


def scenario_of(case, gpu):
    gpt = case["arch"] == "gpt"
    return {
        "schema": "parasim.scenario/1",
        "name": "layer-bench-%s-h%d" % (case["arch"], case["hidden"]),
        "model": {"name": "bench %s h%d" % (case["arch"], case["hidden"]), "layers": case["layers"],
                  "hidden": case["hidden"], "heads": case["heads"], "kv_heads": case["heads"],
                  "ffn_hidden": case["ffn_hidden"], "vocab": 256,
                  "activation": "gelu" if gpt else "swiglu", "norm": "layernorm" if gpt else "rmsnorm",
                  "bias": gpt, "dropout": False, "tied_embeddings": True,
                  # The benchmark's layers apply no position embedding inside the layer.
                  "position_embedding": "learned", "max_positions": case["seq_len"]},
        "cluster": {"gpu": gpu, "nodes": 1, "gpus_per_node": 1},
        "training": {"global_batch": case["micro_batch"], "micro_batch": case["micro_batch"],
                     "seq_len": case["seq_len"], "dtype": "bf16", "flash_attention": True},
        "parallel": {"dp": 1, "schedule": "ddp", "recompute": "none"},
    }


def predict(parasim, scenario):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(scenario, f)
        path = f.name
    try:
        r = subprocess.run([parasim, "run", "--json", "--kernels", path], capture_output=True, text=True)
    finally:
        os.unlink(path)
    if r.returncode != 0:
        raise RuntimeError("parasim run failed: " + r.stderr.strip())
    return json.loads(r.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("bench", help="parasim.layer_bench/1 file")
    ap.add_argument("--gpu", required=True, help="profile to predict with (name or path)")
    ap.add_argument("--parasim", default=os.path.join(ROOT, "build", "tools", "parasim"))
    args = ap.parse_args()
    with open(args.bench) as f:
        bench = json.load(f)
    if bench.get("schema") != "parasim.layer_bench/1":
        print("%s: /schema: expected \"parasim.layer_bench/1\"" % args.bench, file=sys.stderr)
        return 2
    ctx = bench.get("context", {})
    print("# %s (%s, torch %s, CUDA %s) against parasim, profile %s\n" % (
        args.bench, ctx.get("gpu", "?"), ctx.get("torch", "?"), ctx.get("cuda", "?"), args.gpu))
    print("| case | tokens | fwd ms measured | fwd ms predicted | bwd ms measured | bwd ms predicted | layer error |")
    print("|---|---|---|---|---|---|---|")
    gemm_rows = []
    for i, case in enumerate(bench.get("cases", [])):
        if "error" in case:
            print("| %s h%d | | %s | | | | |" % (case.get("arch"), case.get("hidden", 0), case["error"][:60]))
            continue
        res = predict(args.parasim, scenario_of(case, args.gpu))
        fwd = sum(k["seconds"] for k in res["kernels"] if k["block"] in ("attention fwd", "mlp fwd")) * 1e3
        bwd = sum(k["seconds"] for k in res["kernels"] if k["block"] in ("attention bwd", "mlp bwd")) * 1e3
        mf, mb = case["fwd_ms_per_layer"], case["bwd_ms_per_layer"]
        err = (fwd + bwd) / (mf + mb) - 1
        print("| %s h%d | %d | %.3f | %.3f | %.3f | %.3f | %+.1f %% |" % (
            case["arch"], case["hidden"], case["micro_batch"] * case["seq_len"], mf, fwd, mb, bwd, 100 * err))
        predicted = {tuple(k["mnk_batch"][:3]): k["seconds"] for k in res["kernels"]
                     if k["block"] in ("attention fwd", "mlp fwd") and "mnk_batch" in k}
        for g in case.get("gemms", []):
            p = predicted.get((g["m"], g["n"], g["k"]))
            if p is not None:
                gemm_rows.append((case["arch"], case["hidden"], g, p * 1e3))
    if gemm_rows:
        print("\n| case | GEMM m x n x k | measured ms | TFLOP/s | predicted ms | error |")
        print("|---|---|---|---|---|---|")
        for arch, h, g, p in gemm_rows:
            print("| %s h%d | %dx%dx%d | %.3f | %.0f | %.3f | %+.1f %% |" % (
                arch, h, g["m"], g["n"], g["k"], g["ms"], g["tflops"], p, 100 * (p / g["ms"] - 1)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
