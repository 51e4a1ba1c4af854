#!/usr/bin/env python3
"""Mixture-of-experts kernels and training steps in eager PyTorch on one GPU (issue 45).

Sections (one per run, each bounded by --budget-s, results written after every measurement so a
timeout keeps what finished):
  launch   PyTorch eager's launch rate: back-to-back 1-element kernels per second from the host,
           and the same kernels replayed from a CUDA graph (the GPU's own per-kernel time).
  gemm     the zoo's expert GEMMs (models/*.json with experts; E/ep experts on this GPU, a range
           of tokens per expert, fc1 = gate+up [t,h]x[h,2f] and fc2 = down [t,f]x[f,h]), forward
           and forward+backward (autograd: data and weight gradients), as torch._grouped_mm (where
           this PyTorch has it) and as a loop of one matmul per expert (Megatron-Core's
           SequentialMLP), with one dense GEMM of all the rows and one expert's GEMM alone beside.
  kernels  the router (linear, softmax or sigmoid in fp32, top-k, a Switch-style aux loss) and
           permute / unpermute (argsort by expert, gather, weighted index_add back), forward and
           forward+backward, at the zoo models' widths.
  graph    GPU time alone (CUDA-graph replay, no host launch cost) of the router, argsort, gather,
           index_add and a gather-based unpermute, and of grouped expert GEMMs with forward, data
           gradient and weight gradient timed apart.
  train    whole training steps (forward, backward, AdamW) of few-layer MoE models, the cases in
           TRAIN_CASES, whose parasim scenarios are calibrate/measurements/<dir>/scenarios/.

Timing: CUDA events around n back-to-back calls (n chosen so one batch runs >= 10 ms), 5 batches
after 3 warm-up calls, the median per call. No L2 flush: the operands of the GEMMs here are mostly
larger than the 60 MB L2, and back-to-back calls are how a training step runs them. Operands are
random normal bf16 (never zeros). Output: JSON (schema parasim.moe_bench/1), rewritten after every
measurement.

Run on the GPU machine: python3 tools/scripts/torch_moe_bench.py SECTION -o out/SECTION.json
"""
import argparse
import datetime
import gc
import json
import math
import platform
import statistics
import sys
import time
import traceback

# The zoo's MoE models (models/<name>.json): hidden h, expert FFN width f, experts E, top-k, score
# function, and the expert-parallel degrees whose E/ep local experts are measured.
MODELS = [
    {"name": "qwen3-30b-a3b", "h": 2048, "f": 768, "E": 128, "k": 8, "score": "softmax", "eps": [1, 8, 32]},
    {"name": "qwen3-235b-a22b", "h": 4096, "f": 1536, "E": 128, "k": 8, "score": "softmax", "eps": [8, 32]},
    {"name": "gpt-oss-20b", "h": 2880, "f": 2880, "E": 32, "k": 4, "score": "softmax", "eps": [8]},
    {"name": "gpt-oss-120b", "h": 2880, "f": 2880, "E": 128, "k": 4, "score": "softmax", "eps": [8, 32]},
    {"name": "deepseek-v2-lite", "h": 2048, "f": 1408, "E": 64, "k": 6, "score": "softmax", "eps": [8]},
    {"name": "deepseek-v3", "h": 7168, "f": 2048, "E": 256, "k": 8, "score": "sigmoid", "eps": [8, 64]},
    {"name": "mixtral-8x7b", "h": 4096, "f": 14336, "E": 8, "k": 2, "score": "softmax", "eps": [1, 8]},
]
TOKENS_FIRST = [128, 512, 2048, 8192]   # tokens per expert, first pass over all models
TOKENS_SECOND = [64, 256, 1024, 4096]   # then these, while the budget lasts
MAX_ROWS = 262144                        # local experts x tokens per expert, at most

# Few-layer training models: the zoo model's widths with fewer layers. "experts": grouped =
# torch._grouped_mm over the expert weights (token groups padded to 16 rows), loop = one matmul per
# expert (SequentialMLP). The scenario of each is calibrate/measurements/<dir>/scenarios/<name>.json.
TRAIN_CASES = [
    {"name": "qwen3-30b-a3b-l4-mb2", "layers": 4, "hidden": 2048, "heads": 32, "kv_heads": 4, "head_dim": 128,
     "qk_norm": True, "vocab": 151936, "E": 128, "k": 8, "f": 768, "seq_len": 4096, "micro_batch": 2, "experts": "grouped"},
    {"name": "qwen3-30b-a3b-l4-mb1", "layers": 4, "hidden": 2048, "heads": 32, "kv_heads": 4, "head_dim": 128,
     "qk_norm": True, "vocab": 151936, "E": 128, "k": 8, "f": 768, "seq_len": 4096, "micro_batch": 1, "experts": "grouped"},
    {"name": "mixtral-8x7b-l2-mb1", "layers": 2, "hidden": 4096, "heads": 32, "kv_heads": 8, "head_dim": 128,
     "qk_norm": False, "vocab": 32000, "E": 8, "k": 2, "f": 14336, "seq_len": 4096, "micro_batch": 1, "experts": "grouped"},
    {"name": "qwen3-30b-a3b-l4-mb2-loop", "layers": 4, "hidden": 2048, "heads": 32, "kv_heads": 4, "head_dim": 128,
     "qk_norm": True, "vocab": 151936, "E": 128, "k": 8, "f": 768, "seq_len": 4096, "micro_batch": 2, "experts": "loop"},
]
# Second run (after the first showed where the time went): the first case again, and variants of it
# that parasim's scenario does not distinguish: per-expert parameters (SequentialMLP, the first run's
# loop sliced one stacked parameter, whose backward materialised a full-size gradient per expert),
# routing forced balanced, and permute/unpermute without atomics.
_Q = dict(TRAIN_CASES[0])
TRAIN_CASES_2 = [
    dict(_Q),
    dict(_Q, name="qwen3-30b-a3b-l4-mb2-gatherperm", permute="gather"),
    dict(_Q, name="qwen3-30b-a3b-l4-mb2-balanced", routing="balanced"),
    dict(_Q, name="qwen3-30b-a3b-l4-mb2-balanced-gatherperm", routing="balanced", permute="gather"),
    dict(TRAIN_CASES[2], name="mixtral-8x7b-l2-mb1-gatherperm", permute="gather"),
    dict(_Q, name="qwen3-30b-a3b-l4-mb2-seqmlp", experts="seqmlp"),
]
ALIGN = 16  # rows per token group for torch._grouped_mm (torchtitan pads groups to 8/16)


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def context(torch):
    p = torch.cuda.get_device_properties(0)
    return {"gpu": p.name, "sms": p.multi_processor_count, "memory_bytes": p.total_memory,
            "torch": torch.__version__, "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version(),
            "python": platform.python_version(), "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
            "command": " ".join(sys.argv), "has_grouped_mm": hasattr(torch, "_grouped_mm")}


class Results:
    def __init__(self, path, torch, section):
        self.path = path
        self.doc = {"schema": "parasim.moe_bench/1", "section": section, "context": context(torch), "rows": [], "errors": []}
        self.save()

    def add(self, row):
        self.doc["rows"].append(row)
        self.save()

    def error(self, what, e):
        self.doc["errors"].append({"what": what, "error": repr(e)[:400]})
        log("ERROR", what, repr(e)[:300])
        self.save()

    def save(self):
        with open(self.path, "w") as f:
            json.dump(self.doc, f, indent=1)


def per_call_s(torch, fn, min_batch_s=0.010, batches=5, warmup=3):
    """Median seconds per call of fn over `batches` batches of back-to-back calls timed with CUDA events."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    fn()
    b.record()
    torch.cuda.synchronize()
    t1 = max(a.elapsed_time(b) / 1e3, 1e-6)
    n = int(min(200, max(1, math.ceil(min_batch_s / t1))))
    out = []
    for _ in range(batches):
        a.record()
        for _ in range(n):
            fn()
        b.record()
        torch.cuda.synchronize()
        out.append(a.elapsed_time(b) / 1e3 / n)
    return statistics.median(out), n


# ---------------------------------------------------------------------------------------- launch
def section_launch(torch, res, budget_s):
    x = torch.zeros(1, device="cuda")
    N = 20000
    for name, fn in [("add_ inplace 1 elem", lambda: x.add_(1.0)),
                     ("torch.add out-of-place 1 elem", lambda: torch.add(x, 1.0)),
                     ("mm 16x16 bf16", None)]:
        try:
            if fn is None:
                m = torch.randn(16, 16, device="cuda", dtype=torch.bfloat16)
                fn = lambda: torch.mm(m, m)  # noqa: E731
            for _ in range(200):
                fn()
            torch.cuda.synchronize()
            ev0, ev1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            t0 = time.perf_counter()
            ev0.record()
            for _ in range(N):
                fn()
            t_issue = time.perf_counter() - t0
            ev1.record()
            torch.cuda.synchronize()
            t_all = time.perf_counter() - t0
            res.add({"kind": "eager", "op": name, "launches": N, "host_issue_s": t_issue, "wall_s": t_all,
                     "gpu_span_s": ev0.elapsed_time(ev1) / 1e3, "us_per_launch_host": 1e6 * t_issue / N,
                     "launches_per_s": N / t_all})
            log("launch eager %s: %.2f us/launch host, %.0f /s" % (name, 1e6 * t_issue / N, N / t_all))
        except Exception as e:
            res.error("launch eager " + name, e)
    # The same 1-element add captured in a CUDA graph and replayed: no host launch per kernel.
    try:
        K, R = 1000, 20
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                x.add_(1.0)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(K):
                x.add_(1.0)
        g.replay()
        torch.cuda.synchronize()
        ev0, ev1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        t0 = time.perf_counter()
        ev0.record()
        for _ in range(R):
            g.replay()
        t_issue = time.perf_counter() - t0
        ev1.record()
        torch.cuda.synchronize()
        gpu = ev0.elapsed_time(ev1) / 1e3
        res.add({"kind": "cuda_graph", "op": "add_ inplace 1 elem", "kernels_per_graph": K, "replays": R,
                 "host_issue_s": t_issue, "gpu_span_s": gpu, "us_per_kernel_gpu": 1e6 * gpu / (K * R),
                 "launches_per_s": K * R / gpu})
        log("launch graph: %.2f us/kernel on the GPU" % (1e6 * gpu / (K * R)))
    except Exception as e:
        res.error("launch graph", e)
    # Host cost of an autograd step of a small Linear forward+backward (eager, per op).
    try:
        lin = torch.nn.Linear(64, 64, device="cuda", dtype=torch.bfloat16)
        inp = torch.randn(16, 64, device="cuda", dtype=torch.bfloat16, requires_grad=True)

        def fb():
            lin(inp).sum().backward()
        for _ in range(50):
            fb()
        torch.cuda.synchronize()
        n = 2000
        t0 = time.perf_counter()
        for _ in range(n):
            fb()
        t_issue = time.perf_counter() - t0
        torch.cuda.synchronize()
        res.add({"kind": "eager_autograd", "op": "Linear(64,64) fwd+sum+bwd", "iters": n, "host_issue_s": t_issue,
                 "wall_s": time.perf_counter() - t0, "us_per_iter_host": 1e6 * t_issue / n})
    except Exception as e:
        res.error("launch autograd", e)


# ------------------------------------------------------------------------------------------ gemm
def grouped_offsets(torch, G, t):
    return torch.arange(1, G + 1, device="cuda", dtype=torch.int32) * t


def gemm_case(torch, res, mdl, ep, t, have_grouped):
    h, f, E = mdl["h"], mdl["f"], mdl["E"]
    G = max(1, E // ep)
    rows = G * t
    base = {"model": mdl["name"], "hidden": h, "expert_ffn": f, "experts": E, "ep": ep, "local_experts": G,
            "tokens_per_expert": t}
    for gemm, K, N in (("fc1", h, 2 * f), ("fc2", f, h)):
        flops_fwd = 2.0 * rows * K * N
        row = dict(base, gemm=gemm, m=t, n=N, k=K, flops_fwd=flops_fwd)
        try:
            x = torch.randn(rows, K, device="cuda", dtype=torch.bfloat16).requires_grad_()
            w = (torch.randn(G, N, K, device="cuda", dtype=torch.bfloat16) * 0.02).requires_grad_()  # [E, out, in]
            dy = torch.randn(rows, N, device="cuda", dtype=torch.bfloat16)
            wt = w.transpose(-2, -1)
            if have_grouped:
                offs = grouped_offsets(torch, G, t)
                try:
                    ref = torch.mm(x[:t].detach(), wt[0].detach())
                    got = torch._grouped_mm(x.detach(), wt.detach(), offs=offs)[:t]
                    row["grouped_rel_err"] = float((got.float() - ref.float()).norm() / ref.float().norm())
                    with torch.no_grad():
                        row["grouped_fwd_s"], _ = per_call_s(torch, lambda: torch._grouped_mm(x, wt, offs=offs))
                    def gfb():
                        y = torch._grouped_mm(x, w.transpose(-2, -1), offs=offs)
                        torch.autograd.grad(y, (x, w), dy)
                    row["grouped_fwd_bwd_s"], _ = per_call_s(torch, gfb)
                except Exception as e:
                    row["grouped_error"] = repr(e)[:300]
            xs = list(x.split(t))
            dys = list(dy.split(t))
            ws = [w[i] for i in range(G)]
            with torch.no_grad():
                def lf():
                    for i in range(G):
                        torch.mm(xs[i], ws[i].t())
                row["loop_fwd_s"], _ = per_call_s(torch, lf)
                row["dense_fwd_s"], _ = per_call_s(torch, lambda: torch.mm(x, w[0].t()))
                row["single_expert_fwd_s"], _ = per_call_s(torch, lambda: torch.mm(xs[0], ws[0].t()))
                # The backward GEMMs of one expert alone: dgrad [t,N]x[N,K], wgrad [N,t]x[t,K].
                row["single_expert_dgrad_s"], _ = per_call_s(torch, lambda: torch.mm(dys[0], ws[0]))
                row["single_expert_wgrad_s"], _ = per_call_s(torch, lambda: torch.mm(dys[0].t(), xs[0]))

            def lfb():  # views made inside: each autograd.grad frees the graph it walked
                xv, wv = x.split(t), w.unbind(0)
                ys = [torch.mm(xv[i], wv[i].t()) for i in range(G)]
                torch.autograd.grad(ys, (x, w), dys)
            row["loop_fwd_bwd_s"], _ = per_call_s(torch, lfb)
            for key in ("grouped_fwd_s", "loop_fwd_s", "dense_fwd_s"):
                if key in row:
                    row[key.replace("_s", "_tflops")] = flops_fwd / row[key] / 1e12
            for key in ("grouped_fwd_bwd_s", "loop_fwd_bwd_s"):
                if key in row:
                    row[key.replace("_s", "_tflops")] = 3 * flops_fwd / row[key] / 1e12
            res.add(row)
            log("gemm %s ep%d G%d t%d %s: grouped %.1f / loop %.1f / dense %.1f TFLOP/s fwd; fwd+bwd grouped %.1f loop %.1f" % (
                mdl["name"], ep, G, t, gemm, row.get("grouped_fwd_tflops", 0), row.get("loop_fwd_tflops", 0),
                row.get("dense_fwd_tflops", 0), row.get("grouped_fwd_bwd_tflops", 0), row.get("loop_fwd_bwd_tflops", 0)))
        except Exception as e:
            res.error("gemm %s ep%d t%d %s" % (mdl["name"], ep, t, gemm), e)
        finally:
            x = w = dy = wt = xs = ws = dys = None
            gc.collect()
            torch.cuda.empty_cache()


def section_gemm(torch, res, budget_s):
    t_end = time.time() + budget_s
    have = hasattr(torch, "_grouped_mm")
    for tokens in (TOKENS_FIRST, TOKENS_SECOND):
        for mdl in MODELS:
            for ep in mdl["eps"]:
                for t in tokens:
                    if max(1, mdl["E"] // ep) * t > MAX_ROWS:
                        continue
                    if time.time() > t_end:
                        res.doc["stopped"] = "budget %d s spent" % budget_s
                        res.save()
                        return
                    gemm_case(torch, res, mdl, ep, t, have)


# ----------------------------------------------------------------------------------------- graph
def graph_s(torch, fn, copies=4, reps=5):
    """GPU seconds per call of fn, captured `copies` times in one CUDA graph and replayed: no host launch cost."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(copies):
            fn()
    g.replay()
    torch.cuda.synchronize()
    out = []
    for _ in range(3):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(reps):
            g.replay()
        b.record()
        torch.cuda.synchronize()
        out.append(a.elapsed_time(b) / 1e3 / (reps * copies))
    del g
    return statistics.median(out)


GRAPH_MODELS = [("qwen3-30b-a3b", [1, 8, 32]), ("deepseek-v3", [8]), ("gpt-oss-120b", [8]), ("mixtral-8x7b", [1]),
                ("qwen3-235b-a22b", [8])]


def graph_gemm_case(torch, res, mdl, ep, t):
    """One group of expert GEMMs as CUDA-graph replays: forward, data gradient and weight gradient apart."""
    h, f, E = mdl["h"], mdl["f"], mdl["E"]
    G = max(1, E // ep)
    rows = G * t
    offs = grouped_offsets(torch, G, t)
    for gemm, K, N in (("fc1", h, 2 * f), ("fc2", f, h)):
        row = {"model": mdl["name"], "ep": ep, "local_experts": G, "tokens_per_expert": t, "gemm": gemm,
               "m": t, "n": N, "k": K, "flops_fwd": 2.0 * rows * K * N}
        try:
            x = torch.randn(rows, K, device="cuda", dtype=torch.bfloat16)
            w = torch.randn(G, N, K, device="cuda", dtype=torch.bfloat16) * 0.02
            dy = torch.randn(rows, N, device="cuda", dtype=torch.bfloat16)
            wt = w.transpose(-2, -1)
            xT = x.t()
            steps = {"fwd": lambda: torch._grouped_mm(x, wt, offs=offs),
                     "dgrad": lambda: torch._grouped_mm(dy, w, offs=offs),
                     "wgrad": lambda: torch._grouped_mm(xT, dy, offs=offs),
                     "dense_fwd": lambda: torch.mm(x, w[0].t())}
            for name, fn in steps.items():
                try:
                    row[name + "_s"] = graph_s(torch, fn)
                    row[name + "_tflops"] = row["flops_fwd"] / row[name + "_s"] / 1e12
                except Exception as e:
                    row[name + "_error"] = repr(e)[:200]
            # The weight gradient checked against one expert's x^T dy.
            try:
                ref = (xT[:, :t].float() @ dy[:t].float())
                got = torch._grouped_mm(xT, dy, offs=offs)[0].float()
                row["wgrad_rel_err"] = float((got - ref).norm() / ref.norm())
            except Exception as e:
                row["wgrad_check_error"] = repr(e)[:200]
            res.add(row)
            log("graph %s ep%d G%d t%d %s: fwd %s dgrad %s wgrad %s TFLOP/s" % (
                mdl["name"], ep, G, t, gemm, *("%.0f" % row.get(n + "_tflops", -1) for n in ("fwd", "dgrad", "wgrad"))))
        except Exception as e:
            res.error("graph gemm %s ep%d t%d %s" % (mdl["name"], ep, t, gemm), e)
        finally:
            x = w = dy = wt = xT = steps = None
            gc.collect()
            torch.cuda.empty_cache()


def graph_router_case(torch, res, mdl, T):
    h, E, k = mdl["h"], mdl["E"], mdl["k"]
    row = {"model": mdl["name"], "tokens": T, "hidden": h, "experts": E, "top_k": k, "op": "router+permute (graph)"}
    try:
        x = torch.randn(T, h, device="cuda", dtype=torch.bfloat16)
        wr = torch.randn(E, h, device="cuda", dtype=torch.bfloat16) * 0.02
        with torch.no_grad():
            row["router_fwd_s"] = graph_s(torch, lambda: router_fn(torch, x, wr, k, mdl["score"], E))
            top_w, top_i, _ = router_fn(torch, x, wr, k, mdl["score"], E)
            flat = top_i.reshape(-1)
            row["argsort_s"] = graph_s(torch, lambda: torch.argsort(flat, stable=True))
            idx = torch.argsort(flat, stable=True)
            src = idx // k
            row["gather_s"] = graph_s(torch, lambda: x.index_select(0, src))
            yp = torch.randn(T * k, h, device="cuda", dtype=torch.bfloat16)
            row["index_add_s"] = graph_s(torch, lambda: torch.zeros(T, h, device="cuda", dtype=torch.bfloat16).index_add_(0, src, yp))
            inv = torch.empty_like(idx).scatter_(0, idx, torch.arange(T * k, device="cuda"))
            wt = top_w.to(torch.bfloat16).unsqueeze(-1)
            row["gather_unpermute_s"] = graph_s(torch, lambda: (yp.index_select(0, inv).view(T, k, h) * wt).sum(1))
        res.add(row)
        log("graph router %s T%d: router %.0f us, argsort %.0f, gather %.0f, index_add %.0f, gather-unpermute %.0f" % (
            mdl["name"], T, *(1e6 * row.get(n, -1e-6) for n in ("router_fwd_s", "argsort_s", "gather_s", "index_add_s", "gather_unpermute_s"))))
    except Exception as e:
        res.error("graph router %s T%d" % (mdl["name"], T), e)


def section_graph(torch, res, budget_s):
    t_end = time.time() + budget_s
    models = {m["name"]: m for m in MODELS}
    for T in (4096, 16384):
        for m in MODELS:
            if time.time() < t_end:
                graph_router_case(torch, res, m, T)
    for t in (64, 256, 1024, 4096):
        for name, eps in GRAPH_MODELS:
            for ep in eps:
                mdl = models[name]
                if max(1, mdl["E"] // ep) * t > MAX_ROWS:
                    continue
                if time.time() > t_end:
                    res.doc["stopped"] = "budget %d s spent" % budget_s
                    res.save()
                    return
                graph_gemm_case(torch, res, mdl, ep, t)


# --------------------------------------------------------------------------------------- kernels
def router_fn(torch, x, wr, k, score, E):
    F = torch.nn.functional
    logits = F.linear(x, wr)
    s = logits.float()
    s = torch.softmax(s, dim=-1) if score == "softmax" else torch.sigmoid(s)
    top_w, top_i = torch.topk(s, k, dim=-1)
    if score == "sigmoid":
        top_w = top_w / top_w.sum(-1, keepdim=True)
    # Switch-style load-balancing loss: E * sum_e f_e * P_e.
    frac = torch.zeros(E, device=x.device, dtype=torch.float32).scatter_add_(
        0, top_i.reshape(-1), torch.ones(top_i.numel(), device=x.device)) / top_i.numel()
    aux = E * (frac * s.mean(0)).sum()
    return top_w, top_i, aux


def section_kernels(torch, res, budget_s):
    t_end = time.time() + budget_s
    for T in (4096, 16384):
        for mdl in MODELS:
            if time.time() > t_end:
                res.doc["stopped"] = "budget %d s spent" % budget_s
                res.save()
                return
            h, E, k = mdl["h"], mdl["E"], mdl["k"]
            base = {"model": mdl["name"], "tokens": T, "hidden": h, "experts": E, "top_k": k, "score": mdl["score"]}
            try:
                x = torch.randn(T, h, device="cuda", dtype=torch.bfloat16).requires_grad_()
                wr = (torch.randn(E, h, device="cuda", dtype=torch.bfloat16) * 0.02).requires_grad_()
                with torch.no_grad():
                    fwd, _ = per_call_s(torch, lambda: router_fn(torch, x, wr, k, mdl["score"], E))

                def rfb():
                    top_w, _, aux = router_fn(torch, x, wr, k, mdl["score"], E)
                    torch.autograd.grad(top_w.sum() + aux, (x, wr))
                fb, _ = per_call_s(torch, rfb)
                res.add(dict(base, op="router", fwd_s=fwd, fwd_bwd_s=fb, gemm_flops=2.0 * T * h * E))
                with torch.no_grad():
                    top_w, top_i, _ = router_fn(torch, x, wr, k, mdl["score"], E)
                flat = top_i.reshape(-1)
                tok = torch.arange(T, device="cuda").repeat_interleave(k)
                wflat = top_w.reshape(-1).to(torch.bfloat16)

                def order():
                    return torch.argsort(flat, stable=True)
                with torch.no_grad():
                    t_sort, _ = per_call_s(torch, order)
                idx = order()
                src = tok[idx]
                with torch.no_grad():
                    t_gather, _ = per_call_s(torch, lambda: x.index_select(0, src))

                gp = torch.randn(T * k, h, device="cuda", dtype=torch.bfloat16)

                def perm_fb():
                    torch.autograd.grad(x.index_select(0, src), x, gp)
                t_perm_fb, _ = per_call_s(torch, perm_fb)
                yp = torch.randn(T * k, h, device="cuda", dtype=torch.bfloat16).requires_grad_()
                wsorted = wflat[idx].unsqueeze(1)

                def unperm():
                    return torch.zeros(T, h, device="cuda", dtype=torch.bfloat16).index_add_(0, src, yp * wsorted)
                with torch.no_grad():
                    t_unperm, _ = per_call_s(torch, unperm)
                go = torch.randn(T, h, device="cuda", dtype=torch.bfloat16)

                def unperm_fb():
                    torch.autograd.grad(unperm(), yp, go)
                t_unperm_fb, _ = per_call_s(torch, unperm_fb)
                copy_bytes = 2.0 * T * k * h * 2  # read + write T k h bf16
                res.add(dict(base, op="permute", argsort_s=t_sort, gather_fwd_s=t_gather, gather_fwd_bwd_s=t_perm_fb,
                             gather_gbps=copy_bytes / t_gather / 1e9, unpermute_fwd_s=t_unperm,
                             unpermute_fwd_bwd_s=t_unperm_fb, copy_bytes=copy_bytes))
                log("kernels %s T%d: router %.0f/%.0f us, argsort %.0f us, gather %.0f us (%.0f GB/s), unpermute %.0f/%.0f us" % (
                    mdl["name"], T, fwd * 1e6, fb * 1e6, t_sort * 1e6, t_gather * 1e6, copy_bytes / t_gather / 1e9,
                    t_unperm * 1e6, t_unperm_fb * 1e6))
            except Exception as e:
                res.error("kernels %s T%d" % (mdl["name"], T), e)
            finally:
                x = wr = yp = go = gp = None
                gc.collect()
                torch.cuda.empty_cache()


# ----------------------------------------------------------------------------------------- train
def permute_functions(torch):
    class PermuteIn(torch.autograd.Function):
        """xt [T, h] -> padded expert-ordered rows [P, h]; backward: one gather and a sum over the k copies."""
        @staticmethod
        def forward(ctx, xt, src, dest, dest_tok, P, k):
            ctx.save_for_backward(dest_tok)
            ctx.k = k
            return xt.new_zeros(P, xt.shape[1]).index_copy_(0, dest, xt.index_select(0, src))

        @staticmethod
        def backward(ctx, g):
            (dest_tok,) = ctx.saved_tensors
            return g.index_select(0, dest_tok).view(-1, ctx.k, g.shape[1]).sum(1), None, None, None, None, None

    class UnpermuteOut(torch.autograd.Function):
        """padded expert rows [P, h] -> token-major copies [T k, h]; backward: a plain scatter (no atomics)."""
        @staticmethod
        def forward(ctx, ys, dest_tok, P):
            ctx.save_for_backward(dest_tok)
            ctx.P = P
            return ys.index_select(0, dest_tok)

        @staticmethod
        def backward(ctx, g):
            (dest_tok,) = ctx.saved_tensors
            return g.new_zeros(ctx.P, g.shape[1]).index_copy_(0, dest_tok, g), None, None

    return PermuteIn, UnpermuteOut


def build_model(torch, c, gqa_native):
    PermuteIn, UnpermuteOut = permute_functions(torch)
    nn = torch.nn
    F = torch.nn.functional
    h, H, KV, D, E, k, f = c["hidden"], c["heads"], c["kv_heads"], c["head_dim"], c["E"], c["k"], c["f"]
    S = c["seq_len"]
    stats = {"max_over_mean": []}

    def rope_cache():
        inv = 1.0 / (1e6 ** (torch.arange(0, D, 2, device="cuda").float() / D))
        ang = torch.outer(torch.arange(S, device="cuda").float(), inv)
        return torch.polar(torch.ones_like(ang), ang)  # [S, D/2] complex64

    freqs = rope_cache()

    def rope(x):  # x [b, s, heads, D]: the Llama reference code's complex multiply in fp32
        xc = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
        return torch.view_as_real(xc * freqs[: x.shape[1]].view(1, x.shape[1], 1, -1)).flatten(3).type_as(x)

    class Experts(nn.Module):
        def __init__(self):
            super().__init__()
            if c["experts"] == "seqmlp":  # one parameter per expert, as Megatron-Core's SequentialMLP
                self.w13 = nn.ParameterList([nn.Parameter(torch.randn(2 * f, h) * 0.02) for _ in range(E)])
                self.w2 = nn.ParameterList([nn.Parameter(torch.randn(h, f) * 0.02) for _ in range(E)])
            else:
                self.w13 = nn.Parameter(torch.randn(E, 2 * f, h) * 0.02)  # [E, out, in]: gate and up fused
                self.w2 = nn.Parameter(torch.randn(E, h, f) * 0.02)

        def forward(self, xs, counts):
            if c["experts"] == "grouped":
                offs = torch.cumsum(counts, 0).to(torch.int32)
                u = torch._grouped_mm(xs, self.w13.transpose(-2, -1), offs=offs)
                g1, u1 = u.chunk(2, dim=-1)
                return torch._grouped_mm(F.silu(g1) * u1, self.w2.transpose(-2, -1), offs=offs)
            outs = []
            for i, xi in enumerate(xs.split(counts.tolist())):
                if xi.shape[0] == 0:
                    continue
                g1, u1 = F.linear(xi, self.w13[i]).chunk(2, dim=-1)
                outs.append(F.linear(F.silu(g1) * u1, self.w2[i]))
            return torch.cat(outs)

    class MoE(nn.Module):
        def __init__(self):
            super().__init__()
            self.router = nn.Linear(h, E, bias=False)
            self.experts = Experts()

        def forward(self, x):
            b, s, _ = x.shape
            xt = x.reshape(-1, h)
            T = xt.shape[0]
            top_w, top_i, aux = router_fn(torch, xt, self.router.weight, k, "softmax", E)
            flat = top_i.reshape(-1)
            if c.get("routing") == "balanced":
                # Every expert gets T k / E copies (parasim's assumption); the router still runs and
                # its weights still scale the outputs, so its backward is unchanged.
                flat = torch.arange(T * k, device="cuda") % E
            idx = torch.argsort(flat, stable=True)
            src = idx // k  # token of each sorted copy
            counts = torch.bincount(flat, minlength=E)
            if c["experts"] == "grouped" and c.get("permute") == "gather":
                # Permute and unpermute as gathers whose backward is a gather or a plain scatter
                # (no atomics), as fused permute kernels do: custom autograd functions.
                cl = counts.tolist()
                padded = [((n + ALIGN - 1) // ALIGN) * ALIGN for n in cl]
                starts = [0] * E
                pstarts = [0] * E
                for i in range(1, E):
                    starts[i] = starts[i - 1] + cl[i - 1]
                    pstarts[i] = pstarts[i - 1] + padded[i - 1]
                shift = torch.tensor([p - q for p, q in zip(pstarts, starts)], device="cuda")
                dest = torch.arange(T * k, device="cuda") + shift[flat[idx]]  # padded row of sorted copy
                inv = torch.empty_like(idx).scatter_(0, idx, torch.arange(T * k, device="cuda"))
                dest_tok = dest.index_select(0, inv)  # padded row of token-major copy
                P = sum(padded)
                xs = PermuteIn.apply(xt, src, dest, dest_tok, P, k)
                ys = self.experts(xs, torch.tensor(padded, device="cuda"))
                y_tok = UnpermuteOut.apply(ys, dest_tok, P).view(T, k, h)
                stats["max_over_mean"].append(max(cl) * E / (T * k))
                out = (y_tok * top_w.to(x.dtype).unsqueeze(-1)).sum(1)
                return out.view(b, s, h), aux
            if c["experts"] == "grouped":
                # Pad each expert's group to ALIGN rows (torchtitan's token-group alignment).
                cl = counts.tolist()  # host sync, as the frameworks' dispatchers do
                padded = [((n + ALIGN - 1) // ALIGN) * ALIGN for n in cl]
                starts = [0] * E
                pstarts = [0] * E
                for i in range(1, E):
                    starts[i] = starts[i - 1] + cl[i - 1]
                    pstarts[i] = pstarts[i - 1] + padded[i - 1]
                shift = torch.tensor([p - q for p, q in zip(pstarts, starts)], device="cuda")
                dest = torch.arange(T * k, device="cuda") + shift[flat[idx]]
                xs = torch.zeros(sum(padded), h, device="cuda", dtype=x.dtype).index_copy(0, dest, xt.index_select(0, src))
                ys = self.experts(xs, torch.tensor(padded, device="cuda")).index_select(0, dest)
                stats["max_over_mean"].append(max(cl) * E / (T * k))
            else:
                xs = xt.index_select(0, src)
                ys = self.experts(xs, counts)
            w = top_w.reshape(-1)[idx].to(x.dtype).unsqueeze(1)
            out = torch.zeros_like(xt).index_add(0, src, ys * w)
            return out.view(b, s, h), aux

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.n1, self.n2 = nn.RMSNorm(h), nn.RMSNorm(h)
            self.q = nn.Linear(h, H * D, bias=False)
            self.kv = nn.Linear(h, 2 * KV * D, bias=False)
            self.o = nn.Linear(H * D, h, bias=False)
            self.qn, self.kn = (nn.RMSNorm(D), nn.RMSNorm(D)) if c["qk_norm"] else (None, None)
            self.moe = MoE()

        def forward(self, x):
            b, s, _ = x.shape
            n = self.n1(x)
            q = self.q(n).view(b, s, H, D)
            kk, v = self.kv(n).view(b, s, 2, KV, D).unbind(2)
            if self.qn is not None:
                q, kk = self.qn(q), self.kn(kk)
            q, kk = rope(q), rope(kk)
            q, kk, v = q.transpose(1, 2), kk.transpose(1, 2), v.transpose(1, 2)
            if gqa_native:
                o = F.scaled_dot_product_attention(q, kk, v, is_causal=True, enable_gqa=True)
            else:
                o = F.scaled_dot_product_attention(q, kk.repeat_interleave(H // KV, 1), v.repeat_interleave(H // KV, 1),
                                                   is_causal=True)
            x = x + self.o(o.transpose(1, 2).reshape(b, s, H * D))
            m, aux = self.moe(self.n2(x))
            return x + m, aux

    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(c["vocab"], h)
            self.blocks = nn.ModuleList([Block() for _ in range(c["layers"])])
            self.norm = nn.RMSNorm(h)
            self.out = nn.Linear(h, c["vocab"], bias=False)

        def forward(self, ids, labels):
            x = self.emb(ids)
            aux_total = 0.0
            for blk in self.blocks:
                x, aux = blk(x)
                aux_total = aux_total + aux
            logits = self.out(self.norm(x))
            return F.cross_entropy(logits.float().view(-1, c["vocab"]), labels.view(-1)) + 1e-3 * aux_total

    with torch.device("cuda"):
        return LM().to(dtype=torch.bfloat16), stats


def gqa_probe(torch):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    q = torch.randn(1, 8, 256, 128, device="cuda", dtype=torch.bfloat16)
    kv = torch.randn(1, 2, 256, 128, device="cuda", dtype=torch.bfloat16)
    try:
        with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
            torch.nn.functional.scaled_dot_product_attention(q, kv, kv, is_causal=True, enable_gqa=True)
        torch.cuda.synchronize()
        return True
    except Exception as e:
        log("flash attention with enable_gqa unavailable (%r): K and V heads repeated" % (e,))
        return False


def train_case(torch, c, steps, gqa_native):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.profiler import ProfilerActivity, profile
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    model, stats = build_model(torch, c, gqa_native)
    params = list(model.parameters())
    n_params = sum(p.numel() for p in params)
    for p in params:
        p.grad = torch.zeros_like(p)
    master = [p.detach().float().requires_grad_() for p in params]
    chunks, cur, size = [], [], 0  # fp32 gradients for one chunk (<= 2**28 elements) at a time
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
    ids = torch.randint(0, c["vocab"], shape, device="cuda", generator=gen)
    labels = torch.randint(0, c["vocab"], shape, device="cuda", generator=gen)

    def fwd_bwd():
        for p in params:
            p.grad.zero_()
        model(ids, labels).backward()

    def optimizer_step():
        for chunk in chunks:
            for i in chunk:
                master[i].grad = params[i].grad.float()
            opt.step()
            for i in chunk:
                master[i].grad = None
        with torch.no_grad():
            torch._foreach_copy_(params, master)

    def timed(fn, n):
        out, host = [], []
        for _ in range(n):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            a.record()
            fn()
            b.record()
            host.append(time.perf_counter() - t0)
            torch.cuda.synchronize()
            out.append(a.elapsed_time(b) / 1e3)
        return out, host

    with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
        optimizer_step()
        torch.cuda.synchronize()
        states_bytes = torch.cuda.memory_allocated()
        for _ in range(2):
            fwd_bwd()
            optimizer_step()
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        stats["max_over_mean"].clear()
        step_s, step_host_s = timed(lambda: (fwd_bwd(), optimizer_step()), steps)
        peak = torch.cuda.max_memory_allocated()
        fb_s, fb_host_s = timed(fwd_bwd, max(2, steps // 2))
        opt_s, _ = timed(optimizer_step, max(2, steps // 2))
        kernels, n_launch = [], None
        try:
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                fwd_bwd()
                optimizer_step()
                torch.cuda.synchronize()
            n_launch = 0
            for e in prof.key_averages():
                t = getattr(e, "device_time_total", None) or getattr(e, "cuda_time_total", 0)
                if t and t > 0:
                    kernels.append({"name": e.key[:160], "calls": e.count, "us": t})
                    n_launch += e.count
        except Exception as e:
            kernels = [{"error": repr(e)[:200]}]
    imb = stats["max_over_mean"]
    out = dict(c)
    tokens = c["micro_batch"] * c["seq_len"]
    med = statistics.median(step_s)
    out.update({"params": n_params, "tokens_per_step": tokens, "step_s": step_s, "step_s_median": med,
                "step_host_s": step_host_s, "tokens_per_s": tokens / med, "fwd_bwd_s": fb_s, "fwd_bwd_host_s": fb_host_s,
                "optimizer_s": opt_s, "states_bytes": states_bytes, "peak_allocated_bytes": peak,
                "gqa_native": gqa_native, "expert_load_max_over_mean": (statistics.mean(imb) if imb else None),
                "profiled_device_entries": n_launch, "kernels": sorted(kernels, key=lambda r: -r.get("us", 0))[:80]})
    del model, params, master, opt
    return out


def section_train(torch, res, budget_s, steps, cases=1):
    torch.backends.cuda.matmul.allow_tf32 = False
    t_end = time.time() + budget_s
    gqa = gqa_probe(torch)
    for c in (TRAIN_CASES_2 if cases == 2 else TRAIN_CASES):
        if time.time() > t_end:
            res.doc["stopped"] = "budget %d s spent" % budget_s
            res.save()
            return
        if c["experts"] == "grouped" and not hasattr(torch, "_grouped_mm"):
            res.add(dict(c, error="torch._grouped_mm missing"))
            continue
        t0 = time.time()
        try:
            r = train_case(torch, c, steps, gqa)
            res.add(r)
            log("train %s: %.4f s/step (fwd+bwd %.4f, opt %.4f), %.0f tokens/s, peak %.2f GiB, %s device entries, load max/mean %s, %.0f s" % (
                c["name"], r["step_s_median"], statistics.median(r["fwd_bwd_s"]), statistics.median(r["optimizer_s"]),
                r["tokens_per_s"], r["peak_allocated_bytes"] / 2**30, r["profiled_device_entries"],
                r["expert_load_max_over_mean"], time.time() - t0))
        except Exception as e:
            res.add(dict(c, error=repr(e)[:400], trace=traceback.format_exc()[-1500:]))
            log("train %s failed: %r" % (c["name"], e))
        gc.collect()
        torch.cuda.empty_cache()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("section", choices=["launch", "gemm", "kernels", "train", "graph"])
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--budget-s", type=float, default=120)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--cases", type=int, default=1, choices=[1, 2], help="train: TRAIN_CASES (1) or TRAIN_CASES_2 (2)")
    args = ap.parse_args()
    try:
        import torch
    except ImportError:
        log("no PyTorch here")
        return 2
    if not torch.cuda.is_available():
        log("no CUDA device")
        return 2
    res = Results(args.output, torch, args.section)
    try:
        if args.section == "launch":
            section_launch(torch, res, args.budget_s)
        elif args.section == "gemm":
            section_gemm(torch, res, args.budget_s)
        elif args.section == "kernels":
            section_kernels(torch, res, args.budget_s)
        elif args.section == "graph":
            section_graph(torch, res, args.budget_s)
        else:
            section_train(torch, res, args.budget_s, args.steps, args.cases)
    except Exception as e:
        res.error("section " + args.section, e)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
