#!/usr/bin/env python3
"""Holds the expert GEMMs measured by torch_moe_bench.py (gemm section, parasim.moe_bench/1) against
parasim's prices for the same shapes: for each measured (model widths, experts on the GPU, tokens per
expert) it writes a one-layer scenario whose expert GEMMs have exactly that shape (ep ranks, tokens
per rank T = t E / (k ep), balanced routing), runs `parasim run --kernels` on it and reads the prices of
experts.gate_up / experts.down and their data and weight gradients.

The graph section's rows (CUDA-graph replays: forward, data gradient and weight gradient timed apart,
without the host's launch cost) are compared kernel by kernel; the gemm section's rows (eager, back to back,
autograd for the backward) as forward and forward+backward.

Usage: python3 tools/scripts/compare_moe_gemm.py PARASIM_BINARY GEMM_OR_GRAPH_JSON [--profile h200-sxm-141g] [--csv OUT]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

KERNEL = re.compile(r"^\s+mlp (fwd|bwd)\s+(experts\.(?:gate_up|down)(?:\.dgrad|\.wgrad)?)\s+\S+ x\d+\s+[\d.]+\s+([\d.]+)\s+[\d.]+ TFLOP/s")


def scenario(row, profile):
    h, f, E, ep, t = row["hidden"], row["expert_ffn"], row["experts"], row["ep"], row["tokens_per_expert"]
    k = {"qwen3-30b-a3b": 8, "qwen3-235b-a22b": 8, "gpt-oss-20b": 4, "gpt-oss-120b": 4, "deepseek-v2-lite": 6,
         "deepseek-v3": 8, "mixtral-8x7b": 2}[row["model"]]
    T = t * E // (k * ep)
    if T * k * ep != t * E:
        return None
    heads = h // 64
    return {"schema": "parasim.scenario/1", "name": "moe-gemm-%s-ep%d-t%d" % (row["model"], ep, t),
            "model": {"name": row["model"] + "-1layer", "layers": 1, "hidden": h, "heads": heads, "kv_heads": heads,
                      "ffn_hidden": f, "vocab": 32000, "activation": "swiglu", "norm": "rmsnorm", "bias": False,
                      "dropout": False, "tied_embeddings": False, "position_embedding": "rope", "max_positions": T,
                      "moe": {"experts": E, "top_k": k, "expert_ffn_hidden": f}},
            "cluster": {"gpu": profile, "nodes": max(1, ep // 8), "gpus_per_node": min(ep, 8)},
            "training": {"global_batch": ep, "micro_batch": 1, "seq_len": T, "dtype": "bf16"},
            "parallel": {"dp": ep, "tp": 1, "pp": 1, "ep": ep}}


def parasim_prices(binary, sc, tmp):
    path = os.path.join(tmp, sc["name"] + ".json")
    with open(path, "w") as fh:
        json.dump(sc, fh)
    out = subprocess.run([binary, "run", path, "--kernels"], capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        raise RuntimeError(out.stderr.strip()[:300])
    prices = {}
    for line in out.stdout.splitlines():
        m = KERNEL.match(line)
        if m:
            prices[m.group(2)] = float(m.group(3)) * 1e-6
    return prices


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("binary")
    ap.add_argument("gemm_json")
    ap.add_argument("--profile", default="h200-sxm-141g")
    ap.add_argument("--csv")
    args = ap.parse_args()
    doc = json.load(open(args.gemm_json))
    graph = doc.get("section") == "graph"
    rows = [r for r in doc["rows"] if "gemm" in r]
    if graph:
        lines = ["model,ep,local_experts,tokens_per_expert,gemm,flops_fwd,measured_fwd_s,parasim_fwd_s,measured_dgrad_s,"
                 "parasim_dgrad_s,measured_wgrad_s,parasim_wgrad_s,fwd_ratio,dgrad_ratio,wgrad_ratio"]
    else:
        lines = ["model,ep,local_experts,tokens_per_expert,gemm,flops_fwd,measured_grouped_fwd_s,parasim_fwd_s,"
                 "measured_grouped_fwd_bwd_s,parasim_fwd_bwd_s,measured_loop_fwd_bwd_s,fwd_ratio,fwd_bwd_ratio"]
    cache = {}
    with tempfile.TemporaryDirectory() as tmp:
        for r in sorted(rows, key=lambda r: (r["model"], r["ep"], r["tokens_per_expert"], r["gemm"])):
            if ("fwd_s" if graph else "grouped_fwd_s") not in r:
                continue
            if graph:
                r = dict(r, hidden=r["k"] if r["gemm"] == "fc1" else r["n"],
                         expert_ffn=(r["n"] // 2) if r["gemm"] == "fc1" else r["k"],
                         experts=r["local_experts"] * r["ep"])
            key = (r["model"], r["ep"], r["tokens_per_expert"])
            if key not in cache:
                sc = scenario(r, args.profile)
                try:
                    cache[key] = parasim_prices(args.binary, sc, tmp) if sc else None
                except Exception as e:  # one scenario parasim refuses must not stop the table
                    print("%s: %s" % (key, e), file=sys.stderr)
                    cache[key] = None
            p = cache[key]
            if not p:
                continue
            name = "experts.gate_up" if r["gemm"] == "fc1" else "experts.down"
            fwd = p.get(name)
            if graph:
                pd, pw = p.get(name + ".dgrad"), p.get(name + ".wgrad")
                lines.append("%s,%d,%d,%d,%s,%.4g,%.4g,%.4g,%.4g,%.4g,%.4g,%.4g,%.3f,%.3f,%.3f" % (
                    r["model"], r["ep"], r["local_experts"], r["tokens_per_expert"], r["gemm"], r["flops_fwd"],
                    r["fwd_s"], fwd, r["dgrad_s"], pd, r["wgrad_s"], pw, fwd / r["fwd_s"], pd / r["dgrad_s"], pw / r["wgrad_s"]))
                continue
            fb = sum(p.get(name + s, 0) for s in ("", ".dgrad", ".wgrad"))
            lines.append("%s,%d,%d,%d,%s,%.4g,%.4g,%.4g,%.4g,%.4g,%.4g,%.3f,%.3f" % (
                r["model"], r["ep"], r["local_experts"], r["tokens_per_expert"], r["gemm"], r["flops_fwd"],
                r["grouped_fwd_s"], fwd, r["grouped_fwd_bwd_s"], fb, r.get("loop_fwd_bwd_s", float("nan")),
                fwd / r["grouped_fwd_s"], fb / r["grouped_fwd_bwd_s"]))
    text = "\n".join(lines) + "\n"
    if args.csv:
        with open(args.csv, "w") as fh:
            fh.write(text)
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
