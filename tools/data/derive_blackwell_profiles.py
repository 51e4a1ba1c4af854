#!/usr/bin/env python3
"""Derive the Grace-Blackwell NVL72 profiles (GB200, GB300) and the HGX B300 profile from the B200
profile, and add the Blackwell-only figures (MXFP8 and NVFP4 GEMMs, cuDNN fused attention) to all four.

Every figure that differs from the B200's names its own source (datasheet or published
measurement); every figure carried over from the B200 says so and is marked "assumed" unless the
reason it carries over is itself a fact (same die, same HBM3e stacks). Run from the repository root, after tools/data/fit_attention_shapes.py:

    python3 tools/data/derive_blackwell_profiles.py

It rewrites calibrate/profiles/{b200-sxm-180g,gb200-nvl72-186g,gb300-nvl72-288g,b300-sxm-288g}.json; the output
is deterministic (the B200 file is the only input besides the constants below).
"""
import copy
import json
import os

from fit_attention_shapes import CUDNN_B200_913, NVL72_BF16_PEAK, cudnn_blackwell, cudnn_shape, shapes

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROFILES = os.path.join(ROOT, "calibrate", "profiles")
DATE = "2026-11-30"
MB = "shared/validation/published_microbench.json"
# cuBLAS block-scaled FP4 GEMMs on B200: the 'cBLT TFLOPS' column of deepseek-ai/DeepGEMM PR #348 (checked against the
# kernel model in tests/cost/gemm_model_test.cpp with tests/data/cublas_b200_fp4_gemm.json).
FP4_CUBLAS = ("cuBLAS block-scaled FP4 GEMM on B200 (the 'cBLT TFLOPS' column, 'cublasTest 13.3 direct binary', CUDA 12.9) in "
              "deepseek-ai/DeepGEMM pull request #348 (github.com/deepseek-ai/DeepGEMM/pull/348, 'feat: support mxfp4 x mxfp4 "
              "gemm on sm100', 2026-06-01): 5239 TFLOP/s at 8192x8192x8192 = 0.5821 of the 9000 TFLOP/s dense FP4 peak; the "
              "same table's smaller shapes (338 / 745 / 1422 / 1190 / 1399 / 3939 TFLOP/s at 128x2048x7168, 128x24576x1536, "
              "512x2048x7168, 512x7168x2048, 1024x7168x2048, 4096x4096x7168) come out of the kernel model anchored at 8192^3 "
              "within -9..+16 %% except 1024x7168x2048 (+37 %%) [tests/data/cublas_b200_fp4_gemm.json]. MXFP4 (E8M0 scale per "
              "32 elements) and NVFP4 (E4M3 scale per 16) run on the same block-scaled tcgen05 MMA at the FP4 rate")
FP4_TABLE = os.path.join(ROOT, "tests", "data", "cublas_b200_fp4_gemm.json")
FP4_SHAPE = [8192, 8192, 8192]
B200_FP4_PEAK = 9000  # TFLOP/s dense (HGX B200 datasheet, below)


def fp4_efficiency():
    """The cuBLAS table's FP4_SHAPE point as a fraction of the B200's dense FP4 peak."""
    t = json.load(open(FP4_TABLE))
    assert t["columns"] == ["b", "m", "n", "k", "flops_per_s"]
    (row,) = [r for r in t["rows"] if r[0] == 1 and r[1:4] == FP4_SHAPE]
    return round(row[4] / 1e12 / B200_FP4_PEAK, 4)

GB200_SHEET = ("NVIDIA GB200 NVL72 datasheet (rack of 36 Grace CPUs and 72 Blackwell GPUs): FP16/BF16 Tensor Core 360 "
               "PFLOPS and FP8/FP6 720 PFLOPS with sparsity, i.e. %s per GPU dense")
GB300_SHEET = ("NVIDIA GB300 NVL72 datasheet (36 Grace CPUs, 72 Blackwell Ultra GPUs): FP16/BF16 Tensor Core 360 PFLOPS and "
               "FP8/FP6 720 PFLOPS with sparsity (unchanged from GB200; Blackwell Ultra raises FP4 only), i.e. %s per GPU dense")
NVL72_NODE = ("Scenarios model the NVLink domain as the node: an NVL72 rack, or the part of it a job uses (jobs commonly "
              "take 64 of its 72 GPUs, 16 of the 18 compute trays), is one node of up to 72 GPUs whose every pair of GPUs "
              "talks over NVLink 5 through the rack's NVLink switch trays; NICs: one per GPU.")


# HybridEP's published rates inside one NVLink domain (github.com/deepseek-ai/DeepEP branch hybrid-ep,
# docs/README_Hybrid-EP.md, 'B200 Platform' and 'GB200 Platform' tables: 4,096 tokens of hidden 7,168 per rank,
# top-8 of 8 local experts per rank, uniform random routing; the 'Torch API' columns, which time what Megatron-Core
# calls: the kernel, the copy out of HybridEP's buffer and the flag updates), GB/s of 'algorithm bandwidth':
# (ranks, SMs): (dispatch BF16, combine).
HYBRIDEP_DOC = "github.com/deepseek-ai/DeepEP branch hybrid-ep, docs/README_Hybrid-EP.md"
HYBRIDEP_GB200 = {(8, 16): (550.10, 538.44), (8, 32): (545.71, 568.94), (16, 16): (472.84, 474.48), (16, 32): (523.48, 521.55),
                  (24, 16): (441.89, 444.40), (24, 32): (507.32, 483.76), (32, 16): (485.50, 423.19), (32, 32): (484.22, 464.54),
                  (36, 16): (469.96, 418.27), (36, 32): (479.02, 447.89)}
HYBRIDEP_B200 = {(8, 16): (535.94, 530.86)}
NVLINK5_GBPS = 900  # per direction (NVLink 5)
# Megatron-Bridge's performance runs give HybridEP 32 SMs (scripts/performance/utils/overrides.py, v0.4.0 on:
# moe_hybridep_num_sms = 32 whenever the backend is hybridep; perf_recipes/_common.py at v0.6.0 the same).
HYBRIDEP_SMS = 32


def hybridep_efficiency(ranks, dispatch, combine):
    """A published (dispatch, combine) pair as a fraction of the NVLink line rate. tests/test_hybrid_ep.py counts the
    copies a rank receives (dispatched_hidden.numel() x 2 bytes), its own tokens included, so the NVLink carries
    (ranks - 1) / ranks of them; a dispatch and a combine together run at their harmonic mean."""
    off = (ranks - 1) / ranks
    return round(2 / (1 / (dispatch * off) + 1 / (combine * off)) / NVLINK5_GBPS, 4)


def hybridep_nvlink_points(table, platform):
    """network.moe_dispatch_nvlink.hybridep: one point per published rank count, at the presets' SM count where the
    table has it (else its largest), the range over the SM counts it gives."""
    points = []
    for ranks in sorted({r for r, _ in table}):
        rows = {sm: v for (r, sm), v in table.items() if r == ranks}
        sm = HYBRIDEP_SMS if HYBRIDEP_SMS in rows else max(rows)
        effs = {k: hybridep_efficiency(ranks, *v) for k, v in rows.items()}
        d, c = rows[sm]
        src = ("published: %s, '%s Platform' table, %d ranks, %d SMs, Torch API: dispatch (BF16) %.2f GB/s, combine %.2f "
               "GB/s of 'algorithm bandwidth', which tests/test_hybrid_ep.py counts as the copies a rank receives, its own "
               "tokens included: the NVLink carries %d/%d of them, %.1f and %.1f GB/s, %.1f GB/s for a dispatch and a combine "
               "together (their harmonic mean) = %.4f of the %d GB/s NVLink 5 line rate per direction%s"
               % (HYBRIDEP_DOC, platform, ranks, sm, d, c, ranks - 1, ranks, d * (ranks - 1) / ranks, c * (ranks - 1) / ranks,
                  effs[sm] * NVLINK5_GBPS, effs[sm], NVLINK5_GBPS,
                  "" if sm == HYBRIDEP_SMS else "; Megatron-Bridge's runs give it %d SMs, which the table does not cover" % HYBRIDEP_SMS))
        # No range: the presets' SM count is known, and the table's other SM count is another configuration.
        points.append({"ranks": ranks, "efficiency": fig(effs[sm], "published", src)})
    return points


def carried_points(points, why, frm="B200"):
    return [{"ranks": pt["ranks"], "efficiency": carried(pt["efficiency"], why, frm)} for pt in points]


def fig(value, how, source, rng=None, range_source=None, **extra):
    f = {"value": value, "how": how, "source": source}
    if rng:
        f["range"] = list(rng)
        f["range_source"] = range_source
    f.update(extra)
    return f


def carried(f, why, frm="B200"):
    """A figure of another profile (the B200's unless `frm` names another) carried over: same value and range, 'assumed'
    with the reason in front."""
    g = copy.deepcopy(f)
    g["how"] = "assumed"
    g["source"] = "assumed: the %s profile's figure (%s); %s: %s" % (frm, why, frm, f["source"])
    return g


def carry_shared_compute(c, clock_why):
    """The B200 compute figures every derived Blackwell profile shares (tiles, GEMM fixed time and epilogue, attention,
    launch overhead, overlap slowdown), marked carried; the B200's clock derating carried with `clock_why` and widened
    to no derating, as the derived parts run at higher power limits."""
    for k, why in (("gemm_tile_m", "same tensor cores"), ("gemm_tile_n", "same tensor cores"),
                   ("gemm_unaligned_ratio", "same tensor cores"),
                   ("gemm_fixed_us", "same Blackwell SMs; the B200 fit to OpenXLA's sm_100 table"),
                   ("gemm_epilogue_gbps", "same SMs and the same 8 TB/s HBM3e"),
                   ("attention_fwd_efficiency", "same SMs"), ("attention_bwd_efficiency", "same SMs"),
                   ("attention_fwd_seq_overhead", "same SMs"), ("attention_bwd_seq_overhead", "same SMs"),
                   ("attention_fwd_causal_overhead", "same SMs"), ("attention_bwd_causal_overhead", "same SMs"),
                   ("attention_fwd_head_dim_overhead", "same SMs"), ("attention_bwd_head_dim_overhead", "same SMs"),
                   ("kernel_overhead_us", "same runtime"), ("overlap_compute_slowdown", "no Blackwell measurement")):
        if c[k]["how"] != "assumed":
            c[k] = carried(c[k], why)
    c["sustained_clock_ratio"] = carried(c["sustained_clock_ratio"], clock_why)
    c["sustained_clock_ratio"]["range"] = [c["sustained_clock_ratio"]["value"], 1.0]
    c["sustained_clock_ratio"]["range_source"] = "from the B200's measured MSMF/MAMF to no derating"


def blackwell_additions(p, gpu, fp8_peak, fp8_eff, fp8_how, fp8_src, fp4_peak, fp4_src, cudnn, fp4_why=None):
    """MXFP8 and NVFP4 GEMMs and cuDNN fused attention, on any Blackwell profile. cudnn: the attention kernel's figures
    (cudnn_kernel); fp4_why: why the B200's FP4 GEMM figure applies (None on the B200 itself)."""
    c = p["compute"]
    c["peak_tflops"]["mxfp8"] = fig(fp8_peak, "datasheet",
                                    "Blackwell's fifth-generation tensor cores run the OCP MX formats (MXFP8: E4M3/E5M2 with one "
                                    "E8M0 scale per 32 elements) at the FP8 rate; NVIDIA's %s datasheet lists one 'FP8/FP6' figure "
                                    "for both: %s TFLOP/s dense" % (gpu, fp8_peak))
    fp8 = c["gemm_max_efficiency"]["fp8"]
    c["gemm_max_efficiency"]["mxfp8"] = fig(
        fp8_eff, "assumed",
        "assumed: the per-tensor FP8 figure (%s: %s); no published MXFP8 GEMM sweep found. The block-scaled MMA "
        "(tcgen05.mma with scale factors) runs at the FP8 rate, its scales read from tensor memory" % (fp8_how, fp8_src))
    if "shape_mnk" in fp8:
        c["gemm_max_efficiency"]["mxfp8"]["shape_mnk"] = fp8["shape_mnk"]
    c["peak_tflops"]["nvfp4"] = fig(fp4_peak, "datasheet",
                                    fp4_src + "; NVFP4 (E2M1 with one E4M3 scale per 16 elements) runs on the block-scaled FP4 "
                                    "MMA at that rate")
    c["gemm_max_efficiency"]["nvfp4"] = fig(
        fp4_efficiency(), "published" if fp4_why is None else "assumed",
        ("published: " if fp4_why is None else "assumed: %s: " % fp4_why) + FP4_CUBLAS,
        (round(fp8_eff * 0.5, 4), fp8_eff),
        "from half the per-tensor FP8 efficiency to the per-tensor FP8 efficiency (the FP4 figure's former assumption)",
        shape_mnk=FP4_SHAPE)
    c["attention_kernels"] = {"cudnn": cudnn}


def cudnn_kernel(fit_gpu, why=None, low=None, low_src=None, measured_gpu=False, restate=None):
    """cuDNN fused attention fitted to NVIDIA's sweep on fit_gpu (a profile name: "gb200-nvl72-186g" or "gb300-nvl72-288g"), as fractions of each part's own
    BF16 peak; why: the reason another part takes that fit (None on the measured part); low: per pass, the efficiency
    range's low end and its source when older software on the part itself ran slower; restate: (ratio, why) when the
    part's sustained_clock_ratio is the B200's times ratio, so that its efficiencies, over ratio, keep the measured
    kernel times in a training step."""
    o = cudnn_blackwell(fit_gpu)
    how = "fitted" if why is None else "assumed"
    pre = "" if why is None else "assumed: %s: " % why
    k = {"note": "cuDNN fused attention (Transformer Engine's FusedAttention, the backend Megatron-Core/NeMo/Megatron-Bridge "
                 "select on Blackwell); fractions of this GPU's bf16 peak"}
    for d in ("fwd", "bwd"):
        e = o[d]["e"]
        rng = ((low[d], round(e * 1.08, 4)), low_src + " to 8 % above the fit" + LATER) if low else (
            (round(e * 0.9, 4), round(e * 1.08, 4)), "from 10 % below the fit (older cuDNN releases: the GB200's backward at "
            "seq 8k ran 1211 TFLOP/s in cuDNN 9.17, artifacts/sdpa_bf16_benchmark_results_NVIDIA_GB200.csv, against 1332 in "
            "9.22) to 8 % above it" + LATER)
        if restate:
            ratio, why_r = restate
            rng = ((round(rng[0][0] / ratio, 4), round(rng[0][1] / ratio, 4)), rng[1] + "; over %.4f as the value" % ratio)
            k[d + "_efficiency"] = fig(round(e / ratio, 4), how, pre + o["src"] + "; " + why_r + ": %.4f / %.4f" % (e, ratio), *rng)
        else:
            k[d + "_efficiency"] = fig(e, how, pre + o["src"], *rng)
        k[d + "_seq_overhead"] = fig(o[d]["a"], how, pre + o["src"])
        k[d + "_causal_overhead"] = fig(o[d]["c"], how, pre + o["src"])
    sh = cudnn_shape(shapes(), measured_gpu)
    for d in ("fwd", "bwd"):
        k[d + "_head_dim_overhead"] = sh[d + "_head_dim_overhead"]
    return k


FP4_ULTRA = ("the B200's fraction of the FP4 peak (no Blackwell Ultra FP4 GEMM sweep published; its FP4 rate is 1.5x "
             "Blackwell's with the same HBM and epilogue, so this errs fast)")


def b200_cudnn_low(peak):
    """The B200's cuDNN 9.13 point (seq 8k, causal) as a fraction of its BF16 peak with the GB200 fit's causal overhead,
    per pass."""
    o = cudnn_blackwell("gb200-nvl72-186g")
    s = 8192
    return {d: round(t / (peak * s / (s + o[d]["c"])), 4) for d, t in (("fwd", CUDNN_B200_913[1]), ("bwd", CUDNN_B200_913[2]))}


BWD_PAIRS = os.path.join(ROOT, "tests", "data", "cudnn_sdpa_bwd_gb200_gb300.json")


def ultra_clock_ratio():
    """The GB300's tensor-core rate over the GB200's at equal datasheet peaks: the median GB200/GB300 time ratio of the
    BF16 backward passes both ran in NVIDIA's cuDNN SDPA sweep (same cuDNN build, same day), with its source. A backward
    pass does five GEMMs per exponential, so the tensor cores bind it, not the exponential units Blackwell Ultra doubled."""
    t = json.load(open(BWD_PAIRS))
    cols = t["columns"]
    ratios = sorted(r[cols.index("gb200_ms")] / r[cols.index("gb300_ms")] for r in t["rows"])
    n = len(ratios)
    med = ratios[n // 2] if n % 2 else 0.5 * (ratios[n // 2 - 1] + ratios[n // 2])
    src = ("%s (%s, commit %s): the median GB200/GB300 time ratio of the %d BF16 backward passes both parts ran, %.4f "
           "(interquartile %.3f-%.3f; tests/data/cudnn_sdpa_bwd_gb200_gb300.json)" % (
               t["source"]["title"], t["source"]["address"], t["source"]["commit"], n, med, ratios[n // 4], ratios[(3 * n) // 4]))
    return round(med, 4), src, (round(ratios[n // 4], 4), round(ratios[(3 * n) // 4], 4))


ULTRA_CLOCK_WHY = (
    "A backward pass does five GEMMs per exponential (10 d FLOPs in all, 1,280 at head width 128, 1,664 at MLA's 192), "
    "against about 500 FLOPs the GB200's tensor cores do per exponential its exponential units compute (2,500 TFLOP/s "
    "against 5 T exp/s, verda.com 'GB300 NVL72 architecture' per-GPU table; the GB300's doubled units, 10.7 T exp/s, "
    "halve that), so by FLOP counts its tensor cores, not the exponential units Blackwell Ultra doubled, bind it (its "
    "forward passes, nearer that limit, ran about 1.19x). At equal datasheet BF16/FP8 peaks the ratio is taken as the "
    "GB300's sustained clock under its 1,400 W limit against the GB200's 1,200 W. It is not one clock ratio: it grows with "
    "the kernel's length (a median 1.08 over kernels under 5 ms on the GB200, 1.17 over those of 20 ms or more) and is "
    "1.13 over the deterministic backward passes against 1.10 over the others, though each benchmark runs 10 iterations. "
    "The GB300's GEMM figures are the GB200's measurement (gemm_max_efficiency), so the ratio is carried here, on the "
    "B200's training-sustained ratio; its cuDNN attention fits, from its own runs, are restated at this ratio "
    "(attention_kernels.cudnn) so that they keep their measured times at this value (a sampled or measured ratio moves "
    "them too). No GEMM measurement on the GB300 is published")


LATER = (" (cuDNN 9.26 of 2026-07-24 in the same benchmark: the GB300's causal forward at seq 8k 1991 TFLOP/s against 1856 in "
         "9.22)")


def main():
    b200_path = os.path.join(PROFILES, "b200-sxm-180g.json")
    b200 = json.load(open(b200_path))
    b200.get("compute", {}).pop("attention_kernels", None)
    for dt in ("mxfp8", "nvfp4"):
        b200["compute"]["peak_tflops"].pop(dt, None)
        b200["compute"]["gemm_max_efficiency"].pop(dt, None)
    base = copy.deepcopy(b200)

    bfp8 = b200["compute"]["gemm_max_efficiency"]["fp8"]
    blackwell_additions(b200, "HGX B200", 4500, bfp8["value"], "published", bfp8["source"], B200_FP4_PEAK,
                        "NVIDIA HGX B200 datasheet: FP4 Tensor Core 144 PFLOPS with sparsity for 8 GPUs, i.e. 18 PFLOP/s "
                        "per GPU sparse and 9 PFLOP/s dense",
                        cudnn_kernel("gb200-nvl72-186g", "the GB200's fit (the same Blackwell die; no B200 sweep with current cuDNN published)",
                                     b200_cudnn_low(b200["compute"]["peak_tflops"]["bf16"]["value"]), "from the B200's own cuDNN 9.13 point (%s)" % (CUDNN_B200_913[0] % CUDNN_B200_913[1:]),
                                     measured_gpu=True))
    b200["network"]["moe_dispatch_nvlink"] = {"hybridep": hybridep_nvlink_points(HYBRIDEP_B200, "B200")}
    json.dump(b200, open(b200_path, "w"), indent=1, ensure_ascii=False)
    open(b200_path, "a").write("\n")

    for gpu, name, mem_gb, nic_gbps, nic_src, sheet, fp4_peak, fp4_src in (
            ("GB200", "gb200-nvl72-186g", 186, 50,
             "NVIDIA GB200 NVL72 reference architecture: one ConnectX-7 400 Gb/s (50 GB/s) InfiniBand/Ethernet NIC per GPU "
             "for the compute fabric (4 per compute tray)", GB200_SHEET, 10000,
             "NVIDIA GB200 NVL72 datasheet (rack of 36 Grace CPUs and 72 Blackwell GPUs): FP4 Tensor Core 1,440 PFLOPS with "
             "sparsity, i.e. 20 PFLOP/s per GPU sparse and 10 PFLOP/s dense"),
            ("GB300", "gb300-nvl72-288g", 288, 100,
             "NVIDIA GB300 NVL72 datasheet: ConnectX-8 SuperNIC, 800 Gb/s (100 GB/s) per GPU for the compute fabric",
             GB300_SHEET, 15000,
             "NVIDIA GB300 NVL72 datasheet (36 Grace CPUs, 72 Blackwell Ultra GPUs): FP4 Tensor Core 1,440 PFLOPS with sparsity "
             "and 1,080 PFLOPS dense, i.e. 15 PFLOP/s per GPU dense (Blackwell Ultra raises dense FP4 1.5x over Blackwell; "
             "BF16 and FP8 unchanged)")):
        p = copy.deepcopy(base)
        c, m, n = p["compute"], p["memory"], p["network"]
        p["name"] = name
        p["description"] = (
            "NVIDIA %s (Grace-%s superchip GPU in a %s NVL72 rack, %d GB HBM3e) from datasheets and published measurements; "
            "figures the B200 shares (same Blackwell die family) are carried over from b200-sxm-180g.json and marked assumed "
            "where nothing but the shared die supports them. %s Replace with a measured profile from parasim-calibrate."
            % (gpu, "Blackwell" if gpu == "GB200" else "Blackwell Ultra", gpu, mem_gb, NVL72_NODE))
        p["device"] = {
            "name": "NVIDIA " + gpu, "sms": 148, "memory_bytes": mem_gb * 1e9, "how": "datasheet", "date": DATE,
            "source": ("NVIDIA %s NVL72 datasheet: %s per rack of 72 GPUs (%d GB per GPU, taken as %de9 bytes); 148 SMs "
                       "assumed from the B200 (Chips and Cheese, 'Nvidia's B200: Keeping the CUDA Juggernaut Rolling', 2025: 74 "
                       "SMs enabled per die, two dies); no published SM count for this part found"
                       % (gpu, "up to 13.4 TB HBM3e, 576 TB/s" if gpu == "GB200" else "up to 20.7 TB HBM3e, 576 TB/s",
                          mem_gb, mem_gb))}
        c["peak_tflops"] = {
            "bf16": fig(NVL72_BF16_PEAK, "datasheet", sheet % "2.5 PFLOP/s BF16" + "; the ml-engineering MAMF table uses 2500 for GB200 "
                        "[%s id mamf-bf16-nvidia-gb200-sxm]" % MB),
            "fp16": fig(NVL72_BF16_PEAK, "datasheet", sheet % "2.5 PFLOP/s FP16"),
            "fp8": fig(5000, "datasheet", sheet % "5 PFLOP/s FP8" + "; the MAMF table uses 5000 for GB200 "
                       "[%s id mamf-fp8-nvidia-gb200-sxm]" % MB),
        }
        mamf_bf16 = ("ml-engineering MAMF table (stas00/ml-engineering compute/accelerator/README.md), via %s id "
                     "mamf-bf16-nvidia-gb200-sxm: 1822.0 of 2500 TFLOP/s at 4096x9728x2048 (torch 2.10 nightly, cu130)" % MB)
        mamf_fp8 = ("ml-engineering MAMF table, via %s id mamf-fp8-nvidia-gb200-sxm: 3615.6 of 5000 TFLOP/s at 19456x5120x1536"
                    % MB)
        # No shape_mnk on the FP8 figure: at its small-K best shape (k = 1536) the B200-fitted fixed time and
        # epilogue rate, which the GEMM kernel model does not overlap with the main loop, would leave less time
        # for the main loop than the peak allows, so the figure is taken as the main-loop efficiency itself
        # (cost_model.h); large-K GEMMs then run a little below it (conservative).
        no_shape = ("; taken as the main-loop efficiency (no shape_mnk): at k = 1536 the kernel model's B200-fitted "
                    "fixed time and non-overlapped epilogue leave no room for the main loop")
        mamf_fp8 += no_shape
        if gpu == "GB200":
            bf = fig(0.7288, "published", mamf_bf16, shape_mnk=[4096, 9728, 2048])
            f8 = fig(0.7231, "published", mamf_fp8)
        else:
            b300 = ("the HGX B300's MAMF (1769.0 TFLOP/s bf16, 3353.3 fp8 [%s ids mamf-bf16-nvidia-b300-sxm, "
                    "mamf-fp8-nvidia-b300-sxm]) over this part's 2500 / 5000 peaks: 0.708 / 0.671" % MB)
            bf = fig(0.7288, "assumed", "assumed: the GB200 measurement (same BF16/FP8 peaks per GPU, same NVL72 platform; no "
                     "GB300 MAMF published): " + mamf_bf16, (0.7076, 0.7288), "from " + b300 + " to the GB200's",
                     shape_mnk=[4096, 9728, 2048])
            f8 = fig(0.7231, "assumed", "assumed: the GB200 measurement (no GB300 MAMF published): " + mamf_fp8,
                     (0.6707, 0.7231), "from " + b300 + " to the GB200's")
        c["gemm_max_efficiency"] = {"bf16": bf, "fp16": copy.deepcopy(bf), "fp8": f8}
        carry_shared_compute(c, "same die; %s runs at a higher power limit than the B200's 1000 W, so it throttles less: "
                             "this errs slow" % ("GB200 (1200 W)" if gpu == "GB200" else "GB300 (1400 W)"))
        restate = None
        if gpu == "GB300":
            ratio, ratio_src, (q1, q3) = ultra_clock_ratio()
            sc = c["sustained_clock_ratio"]
            base_clock = sc["value"]
            sc["value"] = round(base_clock * ratio, 4)
            sc["source"] = ("assumed: the B200's training-sustained ratio (%s) times %s, the rate at which the GB300 ran the "
                            "same tensor-core-bound kernels as the GB200: %s. %s; B200: %s" % (
                                base_clock, ratio, ratio_src, ULTRA_CLOCK_WHY, b200["compute"]["sustained_clock_ratio"]["source"]))
            sc["range"] = [round(base_clock * q1, 4), round(base_clock * q3, 4)]
            sc["range_source"] = ("the B200's ratio times the pairs' interquartile range (%s-%s); the attention fits, restated "
                                  "at the value, move with it by up to 5 %%" % (q1, q3))
            restate = (ratio, "restated for this profile's sustained_clock_ratio (the B200's times the GB300/GB200 "
                              "backward-pass ratio): the fitted e_inf over that ratio")
        m["hbm_gbps"] = fig(8000, "datasheet", "NVIDIA %s NVL72 datasheet: 576 TB/s HBM3e per 72 GPUs = 8 TB/s per GPU" % gpu)
        m["pcie_gbps"] = fig(225, "assumed",
                             "assumed: host-device copies cross NVLink-C2C, 900 GB/s per superchip (450 GB/s each way) between "
                             "one Grace CPU and its two GPUs (NVIDIA %s datasheet), half of one direction per GPU; the NICs sit "
                             "on PCIe Gen5 x16, faster than their %d GB/s line rate" % (gpu, nic_gbps))
        m["host_memory_gbps"] = fig(
            18400, "datasheet",
            "NVIDIA %s NVL72 datasheet: 18.4 TB/s LPDDR5X over the rack's 36 Grace CPUs (512 GB/s each) for 72 GPUs; a node "
            "here is the NVLink domain, so a job on 64 of its GPUs sees 12%% more host bandwidth per GPU than it has" % gpu)
        m["runtime_reserved_gib"] = carried(m["runtime_reserved_gib"], "same software stack")
        m["hbm_efficiency"] = carried(m["hbm_efficiency"], "same HBM3e")
        n["nvlink_gbps"] = fig(900, "datasheet", "NVIDIA %s NVL72 datasheet: NVLink 5, 130 TB/s per 72 GPUs = 1.8 TB/s per GPU "
                               "= 900 GB/s per direction, to every GPU of the rack through the NVLink switch trays" % gpu)
        n["intra_bus_efficiency"] = carried(n["intra_bus_efficiency"], "the same NVLink 5 links, measured on an 8-GPU HGX board")
        gb200_points = hybridep_nvlink_points(HYBRIDEP_GB200, "GB200")
        n["moe_dispatch_nvlink"] = {"hybridep": gb200_points if gpu == "GB200" else carried_points(
            gb200_points, "the same NVLink 5 switch trays; HybridEP publishes no GB300 table", "GB200")}
        n["intra_alpha_us"] = carried(n["intra_alpha_us"], "NVLink 5 through NVSwitch; one switch hop as on HGX")
        n["inter_bus_efficiency"] = carried(n["inter_bus_efficiency"], "a measured multi-node all_reduce on Blackwell nodes")
        n["node_nics"] = fig(72, "datasheet", nic_src + "; 72 per NVL72 rack (a scenario using part of the rack gets one per GPU "
                             "unless it sets cluster.inter_node.nics_per_node)")
        n["node_nic_gbps"] = fig(nic_gbps, "datasheet", nic_src)
        n["collective_points"] = []  # the B200's were measured on 8-GPU HGX nodes and EFA, not on this system
        nv = n["nccl"]["nvls"]
        nv["algbw_gbps"] = carried(nv["algbw_gbps"], "NVLink SHARP on the same NVLink 5 switches")
        nv["min_ranks"] = carried(nv["min_ranks"], "NCCL's selection on NVLink 5 switches")
        ultra = gpu == "GB300"
        blackwell_additions(p, gpu + " NVL72", 5000, f8["value"], f8["how"], f8["source"], fp4_peak, fp4_src,
                            cudnn_kernel(name, restate=restate), FP4_ULTRA if ultra else "the B200's fraction of the FP4 peak (the "
                            "same Blackwell die; no GB200 FP4 GEMM sweep published)")
        out = os.path.join(PROFILES, name + ".json")
        json.dump(p, open(out, "w"), indent=1, ensure_ascii=False)
        open(out, "a").write("\n")
        print("wrote", os.path.relpath(out, ROOT))
    write_b300(base)
    print("wrote", os.path.relpath(b200_path, ROOT))


def write_b300(base):
    """HGX / DGX B300 (Blackwell Ultra on an 8-GPU NVLink 5 board): the B200's platform with Blackwell Ultra's
    published MAMF, memory and NICs."""
    p = copy.deepcopy(base)
    c, m, n = p["compute"], p["memory"], p["network"]
    p["name"] = "b300-sxm-288g"
    p["description"] = (
        "NVIDIA B300 SXM (Blackwell Ultra, 288 GB HBM3e) on an 8-GPU HGX / DGX B300 board from datasheets and published "
        "measurements; figures the B200 shares (same Blackwell die family, same NVLink 5 switch board) are carried over from "
        "b200-sxm-180g.json and marked assumed where nothing but the shared platform supports them. Replace with a measured "
        "profile from parasim-calibrate.")
    p["device"] = {
        "name": "NVIDIA B300", "sms": 148, "memory_bytes": 288e9, "how": "datasheet", "date": DATE,
        "source": ("NVIDIA DGX B300 datasheet: 2.3 TB HBM3e for 8 GPUs, i.e. 288 GB per GPU (eight 12-high 36 GB stacks), "
                   "taken as 288e9 bytes; 148 SMs assumed from the B200 (Chips and Cheese, 'Nvidia's B200: Keeping the CUDA "
                   "Juggernaut Rolling', 2025: 74 SMs enabled per die, two dies); no published enabled-SM count for this part "
                   "found")}
    sheet = ("NVIDIA HGX B300 datasheet (8 GPUs): FP16/BF16 Tensor Core 36 PFLOPS and FP8/FP6 72 PFLOPS with sparsity "
             "(as HGX B200; Blackwell Ultra raises FP4 only), i.e. %s per GPU dense; the ml-engineering MAMF table uses %s "
             "for B300 [%s id %s]")
    c["peak_tflops"] = {
        "bf16": fig(2250, "datasheet", sheet % ("2.25 PFLOP/s BF16", 2250, MB, "mamf-bf16-nvidia-b300-sxm")),
        "fp16": fig(2250, "datasheet", sheet % ("2.25 PFLOP/s FP16", 2250, MB, "mamf-bf16-nvidia-b300-sxm")),
        "fp8": fig(4500, "datasheet", sheet % ("4.5 PFLOP/s FP8", 4500, MB, "mamf-fp8-nvidia-b300-sxm")),
    }
    mamf = ("ml-engineering MAMF table (stas00/ml-engineering compute/accelerator/README.md), via %s id %s: %s of %d "
            "TFLOP/s at %s (torch 2.9.1+cu130)")
    bf = fig(0.7862, "published", mamf % (MB, "mamf-bf16-nvidia-b300-sxm", "1769.0", 2250, "12288x18432x1024"),
             shape_mnk=[12288, 18432, 1024])
    f8 = fig(0.7452, "published", mamf % (MB, "mamf-fp8-nvidia-b300-sxm", "3353.3", 4500, "3072x6144x7168"),
             shape_mnk=[3072, 6144, 7168])
    c["gemm_max_efficiency"] = {"bf16": bf, "fp16": copy.deepcopy(bf), "fp8": f8}
    carry_shared_compute(c, "same die family; the B300's 1,100 W board power (verda.com, 'GB300 NVL72 architecture' "
                            "per-GPU table: B300 1.1 kW, B200 1 kW) exceeds the B200's, so it throttles less: this errs slow")
    m["hbm_gbps"] = carried(m["hbm_gbps"], "eight HBM3e stacks at the same 8 TB/s per GPU: NVIDIA's Blackwell Ultra "
                            "material gives 8 TB/s for both")
    for k, why in (("hbm_efficiency", "same HBM3e"), ("runtime_reserved_gib", "same software stack"),
                   ("pcie_gbps", "an x86 host on PCIe Gen5, as DGX B200"),
                   ("host_memory_gbps", "DGX B300's host CPUs differ (Xeon 6); no sourced DDR5 figure used")):
        if m[k]["how"] != "assumed":
            m[k] = carried(m[k], why)
    n["nvlink_gbps"] = fig(900, "datasheet", "NVIDIA HGX B300 datasheet: NVLink 5, 1.8 TB/s GPU-to-GPU through the NVLink "
                           "switches = 900 GB/s per direction")
    n["intra_bus_efficiency"] = carried(n["intra_bus_efficiency"], "the same NVLink 5 switch board, measured on 8x B200")
    n["moe_dispatch_nvlink"] = {"hybridep": carried_points(hybridep_nvlink_points(HYBRIDEP_B200, "B200"),
                                                           "the same NVLink 5 switch board; HybridEP publishes no B300 table")}
    n["intra_alpha_us"] = carried(n["intra_alpha_us"], "the same NVLink 5 switch board")
    n["inter_bus_efficiency"] = carried(n["inter_bus_efficiency"], "a measured multi-node all_reduce on Blackwell nodes")
    nic = ("NVIDIA DGX B300 datasheet: 8x single-port ConnectX-8 SuperNIC, up to 800 Gb/s (100 GB/s) each, for compute "
           "traffic")
    n["node_nics"] = fig(8, "datasheet", nic)
    n["node_nic_gbps"] = fig(100, "datasheet", nic)
    n["collective_points"] = []  # the B200's points were measured on B200 nodes, not on this part
    nv = n["nccl"]["nvls"]
    nv["algbw_gbps"] = carried(nv["algbw_gbps"], "NVLink SHARP on the same NVLink 5 switches")
    nv["min_ranks"] = carried(nv["min_ranks"], "NCCL's selection on NVLink 5 switches")
    fp4 = ("verda.com, 'GB300 NVL72 architecture' per-GPU specification table (performance without sparsity): B300 FP4 "
           "14 PFLOPS (B200 9); Blackwell Ultra's dense FP4 rate; the HGX B300 datasheet's dense FP4 figure read per GPU by "
           "other summaries is 13.1-13.5 PFLOPS (glennklockwood.com 'B300': 13,125 TFLOP/s)")
    blackwell_additions(p, "HGX B300", 4500, f8["value"], f8["how"], f8["source"], 14000, fp4,
                        cudnn_kernel("gb300-nvl72-288g", "the GB300's fit (the same Blackwell Ultra die with its doubled exponential "
                                     "throughput; no B300 training SDPA sweep published)"), FP4_ULTRA)
    p["compute"]["peak_tflops"]["nvfp4"]["range"] = [13125, 14000]
    p["compute"]["peak_tflops"]["nvfp4"]["range_source"] = "the per-GPU dense FP4 figures of the two summaries"
    out = os.path.join(PROFILES, p["name"] + ".json")
    json.dump(p, open(out, "w"), indent=1, ensure_ascii=False)
    open(out, "a").write("\n")
    print("wrote", os.path.relpath(out, ROOT))


if __name__ == "__main__":
    main()
