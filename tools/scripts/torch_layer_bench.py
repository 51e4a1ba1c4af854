#!/usr/bin/env python3
"""Eager-PyTorch transformer layers on one GPU, measured the way training runs them.

For each case (a GPT/MPT-style layer: LayerNorm, biased linears, GELU; and a Llama-style layer:
RMSNorm, SwiGLU, no bias; causal scaled_dot_product_attention), bf16 autocast-free weights and
activations, this script times a stack of layers forward and backward with CUDA events, records
one iteration's kernels with torch.profiler (name, calls, GPU time), and times each of the layer's
GEMM shapes alone with torch.matmul. The output (parasim.layer_bench/1) is what
tools/scripts/compare_layer_bench.py holds against `parasim run --kernels`: per-layer time,
GEMM time, and everything else, so the gap between simulated and measured training runs can be
put on kernels instead of on a factor.

Run on the GPU machine: python3 tools/scripts/torch_layer_bench.py -o out/layer_bench.json
(about a minute on an H100-class GPU; --quick halves the cases).
"""
import argparse
import datetime
import json
import platform
import subprocess
import sys
import time


def cuda_torch(prog):
    """PyTorch with a CUDA device, or None after saying why (prog names the script)."""
    try:
        import torch
    except ImportError:
        print("%s: PyTorch is not installed here" % prog, file=sys.stderr)
        return None
    if not torch.cuda.is_available():
        print("%s: no CUDA device" % prog, file=sys.stderr)
        return None
    return torch


def gpu_context(torch):
    props = torch.cuda.get_device_properties(0)
    ctx = {"gpu": props.name, "sms": props.multi_processor_count, "memory_bytes": props.total_memory,
           "torch": torch.__version__, "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version(),
           "python": platform.python_version(), "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
           "command": " ".join(sys.argv)}
    try:
        ctx["driver"] = subprocess.run(["nvidia-smi", "--query-gpu=driver_version,clocks.max.sm,power.limit",
                                        "--format=csv,noheader"], capture_output=True, text=True, timeout=20).stdout.strip()
    except Exception as e:  # the context is informative; the measurement does not depend on it
        ctx["driver"] = "unknown (%s)" % e
    return ctx


def build_block(torch, arch, h, heads, ffn, gate_split=False):
    nn = torch.nn
    F = torch.nn.functional

    class RMSNorm(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(dim))

        def forward(self, x):
            return F.rms_norm(x, (x.shape[-1],), self.weight) if hasattr(F, "rms_norm") else \
                x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            gpt = arch == "gpt"
            self.gpt = gpt
            self.heads = heads
            self.norm1 = nn.LayerNorm(h) if gpt else RMSNorm(h)
            self.norm2 = nn.LayerNorm(h) if gpt else RMSNorm(h)
            self.qkv = nn.Linear(h, 3 * h, bias=gpt)
            self.proj = nn.Linear(h, h, bias=gpt)
            # Llama-style: one up projection of 2 x ffn split into gate and up halves (strided views:
            # PyTorch runs their elementwise kernels unvectorized), or, with gate_split, separate
            # gate and up linears as the Llama reference code, Hugging Face and torchtitan build them.
            self.gate_split = gate_split and not gpt
            self.up = nn.Linear(h, ffn if gpt or self.gate_split else 2 * ffn, bias=gpt)
            if self.gate_split:
                self.gate = nn.Linear(h, ffn, bias=False)
            self.down = nn.Linear(ffn, h, bias=gpt)

        def forward(self, x):
            b, s, _ = x.shape
            q, k, v = self.qkv(self.norm1(x)).view(b, s, 3, self.heads, h // self.heads).unbind(2)
            o = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)
            x = x + self.proj(o.transpose(1, 2).reshape(b, s, h))
            n2 = self.norm2(x)
            u = self.up(n2)
            if self.gpt:
                y = F.gelu(u)
            elif self.gate_split:
                y = F.silu(self.gate(n2)) * u
            else:
                g, u2 = u.chunk(2, dim=-1)
                y = F.silu(g) * u2
            return x + self.down(y)

    return Block


def event_times_s(torch, fn, n):
    """Each of n calls of fn bracketed by CUDA events and synchronised: its GPU time in seconds."""
    out = []
    for _ in range(n):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        out.append(a.elapsed_time(b) / 1e3)
    return out


def profiled_kernels(prof, key="us", scale=1.0):
    """The CUDA kernels a torch.profiler run recorded: name, calls and GPU time in us (times scale) under key."""
    kernels = []
    for e in prof.key_averages():
        t = getattr(e, "device_time_total", None)
        if t is None:
            t = getattr(e, "cuda_time_total", 0)
        if t and t > 0:
            kernels.append({"name": e.key[:160], "calls": e.count, key: t * scale})
    return kernels


def time_ms(torch, fn, iters):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    for _ in range(iters):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / iters


def run_case(torch, c, iters):
    h, heads, ffn, b, s, layers = c["hidden"], c["heads"], c["ffn_hidden"], c["micro_batch"], c["seq_len"], c["layers"]
    Block = build_block(torch, c["arch"], h, heads, ffn)
    model = torch.nn.Sequential(*[Block() for _ in range(layers)]).to(device="cuda", dtype=torch.bfloat16)
    x = torch.randn(b, s, h, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    grad = torch.randn(b, s, h, device="cuda", dtype=torch.bfloat16)
    holder = {}

    def fwd():
        holder["y"] = model(x)

    def fwd_bwd():
        model(x).backward(grad)

    for _ in range(3):
        fwd_bwd()
    fwd_ms = time_ms(torch, fwd, iters)
    holder.clear()
    step_ms = time_ms(torch, fwd_bwd, iters)
    out = dict(c)
    out["fwd_ms_per_layer"] = fwd_ms / layers
    out["bwd_ms_per_layer"] = (step_ms - fwd_ms) / layers
    # One iteration's kernels (GPU time per kernel name, summed over the stack, per layer).
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fwd_bwd()
        torch.cuda.synchronize()
    kernels = profiled_kernels(prof, "us_per_layer", 1.0 / layers)
    out["kernels"] = sorted(kernels, key=lambda k: -k["us_per_layer"])[:60]
    # The layer's GEMMs alone: y[m, n] = x[m, k] @ w[k, n] in bf16, forward shapes.
    t = b * s
    shapes = [(t, 3 * h, h), (t, h, h), (t, ffn if c["arch"] == "gpt" else 2 * ffn, h), (t, h, ffn)]
    gemms = []
    for m, n, k in shapes:
        a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
        for _ in range(3):
            torch.matmul(a, w)
        ms = time_ms(torch, lambda: torch.matmul(a, w), max(iters, 10))
        gemms.append({"m": m, "n": n, "k": k, "ms": ms, "tflops": 2.0 * m * n * k / ms / 1e9})
        del a, w
    out["gemms"] = gemms
    del model, x, grad
    torch.cuda.empty_cache()
    return out


CASES = [
    # MPT/GPT-style (llm-foundry's MPT-125M, 1B and 7B widths at their benchmark microbatches)
    {"arch": "gpt", "hidden": 768, "heads": 12, "ffn_hidden": 3072, "micro_batch": 16, "seq_len": 2048, "layers": 4},
    {"arch": "gpt", "hidden": 2048, "heads": 16, "ffn_hidden": 8192, "micro_batch": 8, "seq_len": 2048, "layers": 4},
    {"arch": "gpt", "hidden": 4096, "heads": 32, "ffn_hidden": 16384, "micro_batch": 4, "seq_len": 2048, "layers": 2},
    # Llama-style (Llama 3 8B width)
    {"arch": "llama", "hidden": 4096, "heads": 32, "ffn_hidden": 14336, "micro_batch": 2, "seq_len": 4096, "layers": 2},
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--quick", action="store_true", help="two cases, fewer iterations")
    ap.add_argument("--iters", type=int, default=10)
    args = ap.parse_args()
    torch = cuda_torch("torch_layer_bench")
    if torch is None:
        return 2
    torch.backends.cuda.matmul.allow_tf32 = False
    cases = CASES[::2] if args.quick else CASES
    result = {"schema": "parasim.layer_bench/1", "context": gpu_context(torch), "dtype": "bf16", "cases": []}
    t0 = time.time()
    for c in cases:
        try:
            result["cases"].append(run_case(torch, c, args.iters))
        except Exception as e:  # an out-of-memory case must not lose the others
            result["cases"].append(dict(c, error=repr(e)[:300]))
            torch.cuda.empty_cache()
        with open(args.output, "w") as f:  # written after each case: a timeout keeps what finished
            json.dump(result, f, indent=1)
        print("case %s h=%d done at %.0f s" % (c["arch"], c["hidden"], time.time() - t0), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
