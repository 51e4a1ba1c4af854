#!/usr/bin/env python3
"""Fit the sequence-length shape of fused attention kernels to published benchmark tables and
write the attention figures of the Ampere, Hopper and B200 profiles.

A fused attention kernel (FlashAttention 2/3/4, cuDNN) runs one CTA per query block (forward) or
key block (backward) and pays a fixed cost per block - loading Q or K/V, the softmax rescale,
writing the output tile - besides the work per key (query) tile. Expressed as an equivalent
number of key positions `a`, non-causal attention over keys of length s runs at

    e(s) = e_inf * s / (s + a)

and causal attention (half the tiles per block carry the fixed cost; diagonal tiles are computed
whole and masked) at e_inf * s / (s + c) with a larger c. The fit below finds e_inf and a by least
squares in log space over each published curve, then c for the causal curve with e_inf shared.
sim/cost/cost_model.cpp (CostModel::attention_s) applies them.

Run from the repository root, then tools/data/derive_blackwell_profiles.py (which takes the B200's
cuDNN shape from here):

    python3 tools/data/fit_attention_shapes.py

It rewrites the attention figures of calibrate/profiles/{a100-sxm4-40g,a100-sxm4-80g,
h100-sxm5-80g,h200-sxm-141g,b200-sxm-180g}.json; the output is deterministic. cudnn_blackwell()
fits cuDNN's kernel to NVIDIA's own sweep on GB200 and GB300, read from tests/data/cudnn_sdpa_llama31_gb200_gb300.json;
derive_blackwell_profiles.py writes those figures into the four Blackwell profiles.
"""
import json
import math
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROFILES = os.path.join(ROOT, "calibrate", "profiles")

FA3_PAPER = ("Shah et al. 2024, 'FlashAttention-3' (arXiv:2407.08608) Figs. 5-6, H100 80GB SXM5, BF16, head dim 128, "
             "TFLOP/s at sequence lengths 512-16k (batch x seq = 16k, 2048 hidden)")
FA2_CAUSAL_BWD = ("flash-attention PR #1791 (github.com/Dao-AILab/flash-attention/pull/1791, 'ABI stable fa3', "
                  "benchmark_attn.py on H100, head dim 128, seq 8192): FlashAttention-2 backward 290.6 TFLOP/s non-causal, "
                  "287.1 causal; FlashAttention-3 backward 553.9 non-causal, 531.6 causal")
FA4_TABLE = ("flash-attention PR #2605 (github.com/Dao-AILab/flash-attention/pull/2605) FlashAttention-4 forward on B200, "
             "BF16, head dim 128: 1540 / 1706 / 1796 / 1837 / 1882 TFLOP/s non-causal at seq 1k / 2k / 4k / 8k / 16k, "
             "829 / 1172 / 1431 causal at 1k / 2k / 4k")
FA4_BWD = ("flash-attention PR #2280 (github.com/Dao-AILab/flash-attention/pull/2280) FlashAttention-4 backward on B200, "
           "head dim 128, seq 8192 (1-CTA kernel): 1247.5 TFLOP/s non-causal, 1117.9 causal")

SEQ = [512, 1024, 2048, 4096, 8192, 16384]
HEAD_DIM = 128  # the head dimension the efficiencies are stated at (kAttentionHeadDim in calibrate/profile/profile.h)
# FA3 paper, head dim 128: FlashAttention-2 and FlashAttention-3 bars (TFLOP/s).
FA2_FWD, FA2_FWD_CAUSAL, FA2_BWD = [309, 350, 362, 368, 370, 370], [191, 260, 298, 319, 333, 335], [214, 260, 291, 310, 318, 322]
FA3_FWD, FA3_FWD_CAUSAL, FA3_BWD = [467, 565, 625, 638, 646, 648], [292, 423, 521, 579, 602, 616], [316, 424, 501, 542, 559, 561]
# The same figures at head dim 64 (non-causal forward and backward).
FA2_FWD_64, FA2_BWD_64 = [282, 306, 318, 321, 322, 324], [198, 238, 264, 279, 287, 291]
FA3_FWD_64, FA3_BWD_64 = [333, 392, 460, 476, 496, 497], [272, 363, 422, 453, 472, 474]
# The cuDNN bars of the same figures (Transformer Engine's FusedAttention backend on Hopper), as transcribed from the
# figure images by subtext.edge.nugit.net, whose FlashAttention-2 and -3 columns equal the ones above bar for bar.
CUDNN_SRC = ("the cuDNN bars of " + FA3_PAPER.replace(", BF16, head dim 128", ", BF16") +
             " (transcription of the figure images whose FlashAttention-2 and -3 columns match the ones this fit uses)")
CUDNN_FWD, CUDNN_FWD_CAUSAL, CUDNN_BWD = [497, 574, 617, 609, 600, 595], [315, 410, 484, 518, 529, 539], [305, 408, 465, 499, 518, 516]
CUDNN_FWD_64, CUDNN_BWD_64 = [335, 373, 395, 408, 412, 413], [266, 348, 395, 417, 432, 433]
FA4_FWD_64 = ("flash-attention PR #2605, the same table at head dim 64: 1087 / 1167 / 1213 / 1229 / 1243 TFLOP/s non-causal at "
              "seq 1k-16k", [1087, 1167, 1213, 1229, 1243])
H100_BF16_PEAK = 989.0
# NVIDIA's cuDNN SDPA training benchmark on GB200 and GB300, the same cuDNN release the same day (TFLOP/s, BF16, head dim 128;
# causal = the top_left mask, whose FLOPs count the executed half), from tests/data/cudnn_sdpa_llama31_gb200_gb300.json. The
# 32k points run 2-10% below the curve (longer kernels, lower clocks) and are left out: the training clock is the profile's
# sustained_clock_ratio.
CUDNN_FE_FILE = os.path.join(ROOT, "tests", "data", "cudnn_sdpa_llama31_gb200_gb300.json")
CUDNN_FE_MAX_SEQ = 16384
NVL72_BF16_PEAK = 2500  # dense BF16 TFLOP/s per GPU of both parts (their NVL72 datasheets); derive_blackwell_profiles.py writes it


def cudnn_fe_table(gpu):
    """(source, seq lengths, fwd causal, fwd non-causal, bwd causal, bwd non-causal) of one part, up to CUDNN_FE_MAX_SEQ."""
    t = json.load(open(CUDNN_FE_FILE))
    assert t["columns"] == ["seq_len", "fwd_causal", "bwd_causal", "fwd_noncausal", "bwd_noncausal"]
    rows = [r for r in t["gpus"][gpu] if r[0] <= CUDNN_FE_MAX_SEQ]
    src = "%s (%s, commit %s; %s)" % (t["source"]["title"], t["source"]["address"], t["source"]["commit"], t["source"]["what"])
    return src, [r[0] for r in rows], [r[1] for r in rows], [r[3] for r in rows], [r[2] for r in rows], [r[4] for r in rows]


# The B200's own cuDNN point, older software (cuDNN 9.13 through PyTorch's SDPA, batch 1, 128 query and 8 key-value heads).
CUDNN_B200_913 = ("github.com/NVIDIA/cudnn-frontend benchmark/sdpa_benchmark_training/artifacts/"
                  "sdpa_bf16_benchmark_results_NVIDIA_B200.csv (commit bb37575d103b9974bc619a193dc1a96d835dc117, cuDNN 9.13, "
                  "torch 2.9 nv25.09): %d / %d TFLOP/s forward / backward, causal, seq 8k", 1171, 942)


def fit(seqs, tflops, e_inf=None):
    """(a, e_inf, rms of log error) minimising the squared log error over a in steps of 4 tokens."""
    best = None
    for a in range(0, 8000, 4):
        g = [s / (s + a) for s in seqs]
        e = e_inf or math.exp(sum(math.log(y / x) for y, x in zip(tflops, g)) / len(seqs))
        err = sum(math.log(y / (e * x)) ** 2 for y, x in zip(tflops, g))
        if best is None or err < best[0] - 1e-15:
            best = (err, a, e)
    return best[1], best[2], math.sqrt(best[0] / len(seqs))


def causal_from_ratio(a, noncausal, causal, s=8192):
    """c from one non-causal / causal pair at length s: (s + c) / (s + a) = noncausal / causal."""
    return round((s + a) * noncausal / causal - s)


def head_dim_overhead(e64, e128):
    """h with e(64) / e(128) = [64 / (64 + h)] / [128 / (128 + h)]: the softmax work per score element in head-dim units."""
    r = e64 / e128
    return round(HEAD_DIM * (1 - r) / (2 * r - 1), 1)


def fig(value, how, source, rng=None, range_source=None):
    f = {"value": value, "how": how, "source": source}
    if rng:
        f["range"], f["range_source"] = list(rng), range_source
    return f


def shapes():
    """Per kernel: forward/backward e_inf (TFLOP/s on the measured GPU), a and c (tokens), with sources."""
    out = {}
    for name, fwd, fwd_c, bwd, bwd_nc, bwd_causal, fwd64, bwd64 in (
            ("fa2", FA2_FWD, FA2_FWD_CAUSAL, FA2_BWD, 290.6, 287.1, FA2_FWD_64, FA2_BWD_64),
            ("fa3", FA3_FWD, FA3_FWD_CAUSAL, FA3_BWD, 553.9, 531.6, FA3_FWD_64, FA3_BWD_64)):
        af, ef, rf = fit(SEQ, fwd)
        cf, _, rcf = fit(SEQ, fwd_c, ef)
        ab, eb, rb = fit(SEQ, bwd)
        cb = causal_from_ratio(ab, bwd_nc, bwd_causal)
        ef64, eb64 = fit(SEQ, fwd64)[1], fit(SEQ, bwd64)[1]
        label = "FlashAttention-2" if name == "fa2" else "FlashAttention-3"
        fit_src = ("fitted e_inf x s / (s + a) to the %s bars of %s: forward e_inf %.1f TFLOP/s, a %d tokens (rms %.1f%%), "
                   "causal c %d (rms %.1f%%); backward e_inf %.1f, a %d (rms %.1f%%)"
                   % (label, FA3_PAPER, ef, af, 100 * rf, cf, 100 * rcf, eb, ab, 100 * rb))
        hd_src = ("from the asymptotes of the %s bars of %s at head dim 64 (forward %.1f, backward %.1f TFLOP/s) and 128 "
                  "(%.1f, %.1f)" % (label, FA3_PAPER, ef64, eb64, ef, eb))
        out[name] = {"fwd_e": ef, "bwd_e": eb, "fwd_a": af, "fwd_c": cf, "bwd_a": ab, "bwd_c": cb, "src": fit_src,
                     "bwd_c_src": "backward causal c from one pair at seq 8192 with the fitted a: " + FA2_CAUSAL_BWD,
                     "fwd_h": head_dim_overhead(ef64, ef), "bwd_h": head_dim_overhead(eb64, eb), "h_src": hd_src,
                     "fwd_bars": fwd, "bwd_bars": bwd}
    # cuDNN: no causal backward bars were published; its causal c takes FlashAttention-3's causal / non-causal backward
    # ratio at seq 8192 (the same tiling per key block), with cuDNN's own fitted a.
    af, ef, rf = fit(SEQ, CUDNN_FWD)
    cf, _, rcf = fit(SEQ, CUDNN_FWD_CAUSAL, ef)
    ab, eb, rb = fit(SEQ, CUDNN_BWD)
    ef64, eb64 = fit(SEQ, CUDNN_FWD_64)[1], fit(SEQ, CUDNN_BWD_64)[1]
    out["cudnn"] = {"fwd_e": ef, "bwd_e": eb, "fwd_a": af, "fwd_c": cf, "bwd_a": ab, "bwd_c": causal_from_ratio(ab, 553.9, 531.6),
                    "src": ("fitted e_inf x s / (s + a) to %s: forward e_inf %.1f TFLOP/s, a %d tokens (rms %.1f%%), causal c %d "
                            "(rms %.1f%%); backward e_inf %.1f, a %d (rms %.1f%%)" % (CUDNN_SRC, ef, af, 100 * rf, cf, 100 * rcf, eb, ab,
                                                                                    100 * rb)),
                    "bwd_c_src": ("assumed: FlashAttention-3's causal / non-causal backward ratio at seq 8192 with cuDNN's fitted a "
                                  "(no causal backward bars for cuDNN): " + FA2_CAUSAL_BWD),
                    "fwd_h": head_dim_overhead(ef64, ef), "bwd_h": head_dim_overhead(eb64, eb),
                    "h_src": ("from the asymptotes of %s at head dim 64 (forward %.1f, backward %.1f TFLOP/s) and 128 (%.1f, %.1f)"
                              % (CUDNN_SRC, ef64, eb64, ef, eb)),
                    "fwd_bars": CUDNN_FWD, "bwd_bars": CUDNN_BWD}
    s4 = [1024, 2048, 4096, 8192, 16384]
    a4, e4, r4 = fit(s4, [1540, 1706, 1796, 1837, 1882])
    c4, _, rc4 = fit([1024, 2048, 4096], [829, 1172, 1431], e4)
    ab4 = out["fa3"]["bwd_a"]
    e4_64 = fit(s4, FA4_FWD_64[1])[1]
    out["fa4"] = {"fwd_a": a4, "fwd_c": c4, "bwd_a": ab4, "bwd_c": causal_from_ratio(ab4, 1247.5, 1117.9),
                  "fwd_h": head_dim_overhead(e4_64, e4), "bwd_h": out["fa3"]["bwd_h"],
                  "h_src": "forward from the asymptotes at head dim 64 (%.1f TFLOP/s; %s) and 128 (%.1f; %s); backward assumed "
                           "FlashAttention-3's on Hopper (no B200 backward sweep at head dim 64 found): %s"
                           % (e4_64, FA4_FWD_64[0], e4, FA4_TABLE, out["fa3"]["h_src"]),
                  "src": "fitted e_inf x s / (s + a) to " + FA4_TABLE + ": a %d tokens (rms %.1f%%), causal c %d (rms %.1f%%)"
                         % (a4, 100 * r4, c4, 100 * rc4),
                  "bwd_src": "backward a assumed FlashAttention-3's on Hopper (%d; no B200 backward sweep found), c from one pair "
                             "at seq 8192: %s" % (ab4, FA4_BWD)}
    return out


def cudnn_blackwell(gpu):
    """cuDNN's fused attention on a Grace-Blackwell GPU ("gb200-nvl72-186g" or "gb300-nvl72-288g"), fitted to NVIDIA's own
    sweep on it: per pass, e_inf and a from the non-causal curve, then c from the causal one with e_inf shared (as the
    FlashAttention fits above)."""
    src, seq, fc, fn, bc, bn = cudnn_fe_table(gpu)
    out = {}
    for d, nc, ca in (("fwd", fn, fc), ("bwd", bn, bc)):
        a, e, r = fit(seq, nc)
        c, _, rc = fit(seq, ca, e)
        out[d] = {"e": round(e / NVL72_BF16_PEAK, 4), "a": a, "c": c, "rms": r, "rms_c": rc, "nc": nc, "ca": ca}
    bars = "; ".join("%s TFLOP/s at seq %s: non-causal %s, causal %s" % (
        "forward" if d == "fwd" else "backward", " / ".join("%dk" % (x // 1024) for x in seq),
        " / ".join(map(str, out[d]["nc"])), " / ".join(map(str, out[d]["ca"]))) for d in ("fwd", "bwd"))
    out["src"] = ("fitted e_inf x s / (s + a) to %s, %s: forward e_inf %.4f of the %d TFLOP/s peak, a %d tokens (rms %.1f%%), "
                  "causal c %d (rms %.1f%%); backward e_inf %.4f, a %d (rms %.1f%%), causal c %d (rms %.1f%%); the 32k points "
                  "(2-10%% below the curve) left out [tests/data/cudnn_sdpa_llama31_gb200_gb300.json]" % (
                      src, bars, out["fwd"]["e"], NVL72_BF16_PEAK, out["fwd"]["a"], 100 * out["fwd"]["rms"], out["fwd"]["c"],
                      100 * out["fwd"]["rms_c"], out["bwd"]["e"], out["bwd"]["a"], 100 * out["bwd"]["rms"], out["bwd"]["c"],
                      100 * out["bwd"]["rms_c"]))
    return out


def shape_figures(prefix, s, how, why):
    """The four overhead figures of one kernel from shape s ('fa2', 'fa3' or 'fa4' entry)."""
    src_f = s["src"]
    src_b = s.get("bwd_src") or s["src"]
    src_bc = s.get("bwd_c_src") or s.get("bwd_src")
    pre = (why + ": ") if how == "assumed" else ""
    return {prefix + "fwd_seq_overhead": fig(s["fwd_a"], how, pre + src_f),
            prefix + "bwd_seq_overhead": fig(s["bwd_a"], how, pre + src_b),
            prefix + "fwd_causal_overhead": fig(s["fwd_c"], how, pre + src_f),
            prefix + "bwd_causal_overhead": fig(s["bwd_c"], how, pre + src_bc),
            prefix + "fwd_head_dim_overhead": fig(s["fwd_h"], how, pre + s["h_src"]),
            prefix + "bwd_head_dim_overhead": fig(s["bwd_h"], how, pre + s["h_src"])}


def spread(bars, a, peak):
    """Each bar read as the asymptote (bar x (s + a) / s): the range of e_inf the figure spans."""
    v = [y * (s + a) / s / peak for y, s in zip(bars, SEQ)]
    return round(min(v), 4), round(max(v), 4)


def asymptote(s, label, direction, how, pre):
    """One efficiency figure of an H100 fit: the asymptote as a fraction of peak, its source and its spread."""
    e = s[direction + "_e"]
    return fig(round(e / H100_BF16_PEAK, 4), how, pre + "%s %s asymptote %.1f of %g TFLOP/s: %s"
               % (label, "forward" if direction == "fwd" else "backward", e, H100_BF16_PEAK, s["src"]),
               spread(s[direction + "_bars"], s[direction + "_a"], H100_BF16_PEAK), "each bar of the figure read as the asymptote")


def hopper(c, sh, assumed_gpu):
    fa2, fa3 = sh["fa2"], sh["fa3"]
    how = "assumed" if assumed_gpu else "fitted"
    why = "assumed: the H100 fit (same GH100 die, SMs and clocks)"
    pre = (why + "; ") if assumed_gpu else ""
    k = c["attention_kernels"]
    k.setdefault("cudnn", {})
    for d in ("fwd", "bwd"):
        c["attention_%s_efficiency" % d] = asymptote(fa2, "FlashAttention-2", d, how, pre)
        k["flash3"]["%s_efficiency" % d] = asymptote(fa3, "FlashAttention-3", d, how, pre)
        k["cudnn"]["%s_efficiency" % d] = asymptote(sh["cudnn"], "cuDNN (Transformer Engine's FusedAttention)", d, how, pre)
    c.update(shape_figures("attention_", fa2, how, why))
    k["flash3"].update(shape_figures("", fa3, how, why))
    k["cudnn"].update(shape_figures("", sh["cudnn"], how, why))
    # shape_figures marks every figure of a fitted kernel "fitted"; cuDNN's backward causal overhead is assumed.
    if not assumed_gpu:
        k["cudnn"]["bwd_causal_overhead"]["how"] = "assumed"
    triton(k, c["attention_fwd_efficiency"]["value"], c["attention_bwd_efficiency"]["value"], fa2)


def triton(k, ef, eb, fa2):
    """llm-foundry's Triton FlashAttention (FlashAttention-1 algorithm): FlashAttention-2's asymptotes over the ratios
    Dao 2023 measured on A100, FlashAttention-2's shape."""
    ratios = ("assumed: Dao 2023 'FlashAttention-2' section 4.1 ratios measured on A100 (Triton kernel 1.3-1.5x slower forward, "
              "about 2x slower backward than FlashAttention-2) applied to this profile's FlashAttention-2 asymptotes "
              "(attention_fwd_efficiency / 1.4, attention_bwd_efficiency / 2); no Hopper measurement of the Triton kernel found")
    k["triton"]["fwd_efficiency"] = fig(round(ef / 1.4, 4), "assumed", ratios, (round(ef / 1.5, 4), round(ef / 1.3, 4)),
                                        "the paper's 1.3-1.5x forward ratio")
    k["triton"]["bwd_efficiency"] = fig(round(eb / 2, 4), "assumed", ratios)
    k["triton"].update(shape_figures("", fa2, "assumed", "assumed: FlashAttention-2's shape (the same tiling per query block)"))


def ampere(c, sh):
    fa2 = sh["fa2"]
    ratio = fa2["bwd_e"] / fa2["fwd_e"]
    paper = ("Dao 2023, 'FlashAttention-2' (arXiv:2307.08691), abstract and section 4.1: up to 73% of the A100's peak "
             "(forward, long non-causal sequences)")
    c["attention_fwd_efficiency"] = fig(0.73, "published", paper + ": the asymptote", (0.5, 0.73),
                                        "the paper's 50-73% of peak across sequence lengths and head dims")
    eb = round(0.73 * ratio, 4)
    c["attention_bwd_efficiency"] = fig(eb, "assumed", "assumed: the forward asymptote times FlashAttention-2's backward/forward "
                                        "asymptote ratio on H100 (%.1f / %.1f = %.3f; the same kernel code): %s; %s"
                                        % (fa2["bwd_e"], fa2["fwd_e"], ratio, paper, fa2["src"]), (0.5, eb),
                                        "from the paper's low end to the derived asymptote")
    c.update(shape_figures("attention_", fa2, "assumed", "assumed: FlashAttention-2's H100 shape (the same kernel code and tiles; "
                                                          "no A100 sweep with causal masking found)"))
    triton(c["attention_kernels"], 0.73, eb, fa2)


def blackwell_default(c, sh):
    fa2 = sh["fa2"]
    why = ("assumed: FlashAttention-2's Ampere-style kernels taken at their H100 fit (no published FlashAttention-2 sweep on "
           "Blackwell found)")
    c["attention_fwd_efficiency"] = fig(round(fa2["fwd_e"] / H100_BF16_PEAK, 4), "assumed", why + "; " + fa2["src"])
    c["attention_bwd_efficiency"] = fig(round(fa2["bwd_e"] / H100_BF16_PEAK, 4), "assumed", why + "; " + fa2["src"])
    c.update(shape_figures("attention_", fa2, "assumed", why))


def cudnn_shape(sh, measured_gpu):
    """The four overhead figures of Blackwell's cuDNN kernel (FlashAttention-4's shape)."""
    return shape_figures("", sh["fa4"], "assumed",
                         "assumed: FlashAttention-4's shape for cuDNN's Blackwell kernel (both tcgen05 kernels with two "
                         "query tiles per CTA)" + ("" if measured_gpu else "; the B200 measurement (same SMs)"))


def keep_measured(old, new):
    """Figures measured on the GPU itself (how == "measured") stay as they are: the fit only replaces what it derived."""
    if isinstance(old, dict) and isinstance(new, dict):
        if old.get("how") == "measured" and "value" in old:
            return old
        return {k: keep_measured(old[k], v) if k in old else v for k, v in new.items()}
    return new


def main():
    sh = shapes()
    for name, kind in (("a100-sxm4-40g", "ampere"), ("a100-sxm4-80g", "ampere"), ("h100-sxm5-80g", "h100"),
                       ("h200-sxm-141g", "h200"), ("b200-sxm-180g", "b200")):
        path = os.path.join(PROFILES, name + ".json")
        p = json.load(open(path))
        before = json.loads(json.dumps(p["compute"]))
        c = p["compute"]
        if kind == "ampere":
            ampere(c, sh)
        elif kind in ("h100", "h200"):
            hopper(c, sh, kind == "h200")
        else:
            blackwell_default(c, sh)
        p["compute"] = keep_measured(before, c)
        json.dump(p, open(path, "w"), indent=1, ensure_ascii=False)
        open(path, "a").write("\n")
        print("wrote", os.path.relpath(path, ROOT))


if __name__ == "__main__":
    main()
