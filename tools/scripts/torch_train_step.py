#!/usr/bin/env python3
"""Whole single-GPU training steps in eager PyTorch, measured for parasim's validation set.

Each case is a decoder-only language model (token and learned position embeddings, the layers of
torch_layer_bench.py, a final norm, the output layer tied to the token embedding, F.cross_entropy
on fp32 logits) trained with the mixed precision parasim's memory model describes: bf16 weights
and bf16 gradients kept between steps (zeroed, not freed), an fp32 master copy of the weights and
fp32 Adam moments (torch.optim.AdamW, fused), 16 bytes per parameter. A step is `accum`
microbatches forward and backward, the gradients cast to fp32 for the master copy, the Adam step
and the copy back to bf16. Attention runs PyTorch's FlashAttention backend (forced, so the
kernel is known; its name is in the recorded kernels).

Recorded per case (parasim.train_bench/1): step time (median of timed steps, CUDA events), the
forward-backward and optimizer parts timed alone, torch.cuda.max_memory_allocated over the timed
steps, the bytes held before the first forward (weights, gradients, optimizer states), one step's
kernels from torch.profiler, and the parameter count. tools/data/convert_train_bench.py turns the
file into measured runs (scenarios/measured) with the scenario each case corresponds to.

Run on the GPU machine: python3 tools/scripts/torch_train_step.py -o out/train_bench.json
"""
import argparse
import gc
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_layer_bench import build_block, cuda_torch, event_times_s, gpu_context, profiled_kernels  # noqa: E402  (same directory)

# llm-foundry's MPT widths (scripts/train/yamls/pretrain/mpt-<size>.yaml: d_model, n_heads,
# n_layers, expansion_ratio 4, vocab 50368) and a Llama-style 1B (SwiGLU, Llama 3's vocabulary).
CASES = [
    {"name": "mpt-125m", "arch": "gpt", "hidden": 768, "heads": 12, "ffn_hidden": 3072, "layers": 12,
     "vocab": 50368, "seq_len": 2048, "micro_batch": 16, "accum": 2},
    {"name": "mpt-1b", "arch": "gpt", "hidden": 2048, "heads": 16, "ffn_hidden": 8192, "layers": 24,
     "vocab": 50368, "seq_len": 2048, "micro_batch": 8, "accum": 2},
    {"name": "mpt-3b", "arch": "gpt", "hidden": 2560, "heads": 20, "ffn_hidden": 10240, "layers": 32,
     "vocab": 50368, "seq_len": 2048, "micro_batch": 8, "accum": 1},
    {"name": "llama-1b", "arch": "llama", "hidden": 2048, "heads": 16, "ffn_hidden": 8192, "layers": 16,
     "vocab": 128256, "seq_len": 4096, "micro_batch": 4, "accum": 2},
    {"name": "mpt-7b", "arch": "gpt", "hidden": 4096, "heads": 32, "ffn_hidden": 16384, "layers": 32,
     "vocab": 50368, "seq_len": 2048, "micro_batch": 2, "accum": 2},
]
# Held out from the H200 profile's calibration (which read the FlashAttention kernels of CASES):
# other widths, sequence lengths (1k, 8k), full activation recompute, separate gate and up linears.
HELD_OUT = [
    {"name": "mpt-350m", "arch": "gpt", "hidden": 1024, "heads": 16, "ffn_hidden": 4096, "layers": 24,
     "vocab": 50368, "seq_len": 2048, "micro_batch": 16, "accum": 1},
    {"name": "mpt-760m-s8k", "arch": "gpt", "hidden": 1536, "heads": 12, "ffn_hidden": 6144, "layers": 24,
     "vocab": 50368, "seq_len": 8192, "micro_batch": 2, "accum": 1},
    {"name": "mpt-1b-s1k", "arch": "gpt", "hidden": 2048, "heads": 16, "ffn_hidden": 8192, "layers": 24,
     "vocab": 50368, "seq_len": 1024, "micro_batch": 16, "accum": 2},
    {"name": "mpt-3b-recompute", "arch": "gpt", "hidden": 2560, "heads": 20, "ffn_hidden": 10240, "layers": 32,
     "vocab": 50368, "seq_len": 2048, "micro_batch": 16, "accum": 1, "recompute": "full"},
    {"name": "llama-3b-split", "arch": "llama", "hidden": 3072, "heads": 24, "ffn_hidden": 8192, "layers": 28,
     "vocab": 128256, "seq_len": 4096, "micro_batch": 2, "accum": 2, "gate_split": True},
]


def build_model(torch, c):
    from torch.utils.checkpoint import checkpoint
    nn = torch.nn
    F = torch.nn.functional
    Block = build_block(torch, c["arch"], c["hidden"], c["heads"], c["ffn_hidden"], c.get("gate_split", False))
    full_recompute = c.get("recompute", "none") == "full"
    gpt = c["arch"] == "gpt"

    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(c["vocab"], c["hidden"])
            self.wpe = nn.Embedding(c["seq_len"], c["hidden"])
            self.blocks = nn.ModuleList([Block() for _ in range(c["layers"])])
            self.norm = nn.LayerNorm(c["hidden"]) if gpt else nn.RMSNorm(c["hidden"])

        def forward(self, ids, labels):
            pos = torch.arange(ids.shape[1], device=ids.device)
            x = self.wte(ids) + self.wpe(pos)
            for b in self.blocks:
                # Full recompute: each layer keeps only its input and replays its forward in backward.
                x = checkpoint(b, x, use_reentrant=False) if full_recompute else b(x)
            logits = F.linear(self.norm(x), self.wte.weight)
            return F.cross_entropy(logits.float().view(-1, c["vocab"]), labels.view(-1))

    with torch.device("cuda"):  # initialised on the GPU: a 7B model's CPU init takes minutes
        return LM().to(dtype=torch.bfloat16)


def run_case(torch, c, steps):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.profiler import ProfilerActivity, profile
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    model = build_model(torch, c)
    params = list(model.parameters())
    n_params = sum(p.numel() for p in params)
    for p in params:
        p.grad = torch.zeros_like(p)  # bf16 gradients held between steps, as a framework's buffers are
    master = [p.detach().float().requires_grad_() for p in params]
    # The fp32 gradients the Adam step reads exist for one chunk of parameters (<= 2**28
    # elements, 1 GiB) at a time, so the step adds at most that to the 16 bytes per parameter.
    chunks, cur, size = [], [], 0
    for i, p in enumerate(params):
        if cur and size + p.numel() > 2**28:
            chunks.append(cur)
            cur, size = [], 0
        cur.append(i)
        size += p.numel()
    chunks.append(cur)
    opt = torch.optim.AdamW(master, lr=1e-4, weight_decay=0.0, fused=True)
    gen = torch.Generator(device="cuda").manual_seed(0)
    shape = (c["micro_batch"], c["seq_len"])
    data = [(torch.randint(0, c["vocab"], shape, device="cuda", generator=gen),
             torch.randint(0, c["vocab"], shape, device="cuda", generator=gen)) for _ in range(c["accum"])]

    def fwd_bwd():
        for p in params:
            p.grad.zero_()
        for ids, labels in data:
            (model(ids, labels) / c["accum"]).backward()

    def optimizer_step():
        for chunk in chunks:
            for i in chunk:
                master[i].grad = params[i].grad.float()
            opt.step()
            for i in chunk:
                master[i].grad = None
        with torch.no_grad():
            torch._foreach_copy_(params, master)

    def step():
        fwd_bwd()
        optimizer_step()

    def timed(fn, n):
        return event_times_s(torch, fn, n)

    with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
        optimizer_step()  # creates the Adam moments before the states are counted
        torch.cuda.synchronize()
        states_bytes = torch.cuda.memory_allocated()
        for _ in range(2):
            step()
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        step_s = timed(step, steps)
        peak_alloc = torch.cuda.max_memory_allocated()
        peak_reserved = torch.cuda.max_memory_reserved()
        fwd_bwd_s = timed(fwd_bwd, max(2, steps // 2))
        opt_s = timed(optimizer_step, max(2, steps // 2))
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            step()
            torch.cuda.synchronize()
    kernels = profiled_kernels(prof)
    out = dict(c)
    tokens = c["micro_batch"] * c["seq_len"] * c["accum"]
    med = statistics.median(step_s)
    out.update({"params": n_params, "tokens_per_step": tokens, "step_s": step_s, "step_s_median": med,
                "tokens_per_s": tokens / med, "fwd_bwd_s": fwd_bwd_s, "optimizer_s": opt_s,
                "states_bytes": states_bytes, "peak_allocated_bytes": peak_alloc, "peak_reserved_bytes": peak_reserved,
                "kernels": sorted(kernels, key=lambda k: -k["us"])[:60]})
    del model, params, master, opt, data
    torch.cuda.empty_cache()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--steps", type=int, default=6, help="timed steps per case")
    ap.add_argument("--cases", nargs="*", help="case names (default: all of CASES)")
    ap.add_argument("--held-out", action="store_true", help="run HELD_OUT instead of CASES")
    args = ap.parse_args()
    torch = cuda_torch("torch_train_step")
    if torch is None:
        return 2
    torch.backends.cuda.matmul.allow_tf32 = False
    result = {"schema": "parasim.train_bench/1", "context": gpu_context(torch), "cases": []}
    t0 = time.time()
    for c in HELD_OUT if args.held_out else CASES:
        if args.cases and c["name"] not in args.cases:
            continue
        try:
            result["cases"].append(run_case(torch, c, args.steps))
        except Exception as e:  # an out-of-memory case must not lose the others
            result["cases"].append(dict(c, error=repr(e)[:300]))
        gc.collect()  # the exception's frames held the case's tensors until here
        torch.cuda.empty_cache()
        with open(args.output, "w") as f:  # written after each case: a timeout keeps what finished
            json.dump(result, f, indent=1)
        r = result["cases"][-1]
        print("%s: %s at %.0f s" % (c["name"], r.get("error") or "%.4f s/step, %.0f tokens/s, peak %.2f GiB" % (
            r["step_s_median"], r["tokens_per_s"], r["peak_allocated_bytes"] / 2**30), time.time() - t0), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
