#!/usr/bin/env python3
"""PyTorch's memory-bound training kernels alone: achieved bandwidth per kind of kernel.

A training step's memory-bound work is not one kernel: the H200 steps of torch_train_step.py ran
residual adds near 0.87 of the HBM peak and LayerNorm's forward near 0.41. This script times each
kind alone, in bf16 on [tokens, hidden] activations (fp32 for the loss's row kernels), forward and
backward through autograd where the op has one, and writes parasim.memory_bench/1: per op and
shape the median time of timed iterations (CUDA events) and the bytes the op must move at least
(its inputs read once and its outputs written once), so bandwidth = bytes / time.

Run on the GPU machine: python3 tools/scripts/torch_memory_bench.py -o out/memory_bench.json
(about 20 s on an H200).
"""
import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_layer_bench import cuda_torch, event_times_s, gpu_context  # noqa: E402  (same directory)

SHAPES = [(8192, 1024), (16384, 2048), (16384, 4096), (8192, 8192), (32768, 2048)]


def median_ms(torch, fn, iters):
    for _ in range(3):
        fn()
    return 1e3 * statistics.median(event_times_s(torch, fn, iters))


def ops_for(torch, t, h):
    """(name, bytes, fn) for one [t, h] shape; bytes = inputs read once + outputs written once."""
    F = torch.nn.functional
    e = 2
    n = t * h
    x = torch.randn(t, h, device="cuda", dtype=torch.bfloat16)
    y = torch.randn(t, h, device="cuda", dtype=torch.bfloat16)
    g = torch.randn(t, h, device="cuda", dtype=torch.bfloat16)
    w = torch.ones(h, device="cuda", dtype=torch.bfloat16)
    bias = torch.zeros(h, device="cuda", dtype=torch.bfloat16)
    xr = x.clone().requires_grad_()
    wr = w.clone().requires_grad_()
    br = bias.clone().requires_grad_()

    def fwd_bwd(f):
        def run():
            out = f()
            out.backward(g)
            xr.grad = wr.grad = br.grad = None
        return run

    ln = lambda: F.layer_norm(xr, (h,), wr, br)  # noqa: E731
    rms = lambda: F.rms_norm(xr, (h,), wr)  # noqa: E731
    gelu = lambda: F.gelu(xr)  # noqa: E731
    return [
        ("copy", 2 * e * n, lambda: x.clone()),
        ("add", 3 * e * n, lambda: x + y),
        ("cast_to_fp32", (e + 4) * n, lambda: x.float()),
        ("layer_norm", 2 * e * n, lambda: F.layer_norm(x, (h,), w, bias)),
        ("layer_norm.fwd_bwd", (2 + 5) * e * n, fwd_bwd(ln)),
        ("rms_norm", 2 * e * n, lambda: F.rms_norm(x, (h,), w)),
        ("rms_norm.fwd_bwd", (2 + 5) * e * n, fwd_bwd(rms)),
        ("gelu", 2 * e * n, lambda: F.gelu(x)),
        ("gelu.fwd_bwd", (2 + 3) * e * n, fwd_bwd(gelu)),
        ("silu_mul", 3 * e * n, lambda: F.silu(x) * y),
        ("bias_grad_sum", e * n, lambda: g.sum(0)),
    ]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--iters", type=int, default=20)
    args = ap.parse_args()
    torch = cuda_torch("torch_memory_bench")
    if torch is None:
        return 2
    result = {"schema": "parasim.memory_bench/1", "context": gpu_context(torch), "rows": []}
    t0 = time.time()
    for t, h in SHAPES:
        for name, nbytes, fn in ops_for(torch, t, h):
            try:
                ms = median_ms(torch, fn, args.iters)
                result["rows"].append({"op": name, "tokens": t, "hidden": h, "bytes": nbytes, "ms": ms,
                                       "gbps": nbytes / ms / 1e6})
            except Exception as ex:  # an op missing from this PyTorch must not lose the others
                result["rows"].append({"op": name, "tokens": t, "hidden": h, "error": repr(ex)[:200]})
        torch.cuda.empty_cache()
    # The loss's fp32 row kernels over a vocabulary: log_softmax forward and backward.
    for t, v in [(8192, 50368), (4096, 128256)]:
        z = torch.randn(t, v, device="cuda", dtype=torch.float32, requires_grad=True)
        gz = torch.randn(t, v, device="cuda", dtype=torch.float32)
        n = t * v
        result["rows"].append({"op": "log_softmax_fp32", "tokens": t, "hidden": v, "bytes": 8 * n,
                               "ms": median_ms(torch, lambda: torch.log_softmax(z, -1), args.iters)})

        def ls_fwd_bwd():
            torch.log_softmax(z, -1).backward(gz)
            z.grad = None
        result["rows"].append({"op": "log_softmax_fp32.fwd_bwd", "tokens": t, "hidden": v, "bytes": (8 + 12) * n,
                               "ms": median_ms(torch, ls_fwd_bwd, args.iters)})
        for r in result["rows"][-2:]:
            r["gbps"] = r["bytes"] / r["ms"] / 1e6
        del z, gz
        torch.cuda.empty_cache()
    with open(args.output, "w") as f:
        json.dump(result, f, indent=1)
    print("torch_memory_bench: %d rows in %.0f s" % (len(result["rows"]), time.time() - t0), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
