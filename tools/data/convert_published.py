#!/usr/bin/env python3
"""Converts the published training runs (shared/validation/published_runs.json) into parasim
measured-run files (parasim.measured/1) under scenarios/measured/.

Honest by construction: a row whose configuration lacks a field the simulator needs is skipped,
with the missing fields named, in scenarios/measured/SKIPPED.md. Values the converter supplies
from a documented convention of the source (not from the row) are listed under
"conversion_inferred" in each file, next to the row's own "inferred_fields". The converter maps rows
to scenarios and knows no framework convention a stack can express: what a framework runs (its
kernels, optimizer, FSDP flavour and prefetch, pipeline and ZeRO engines, vocabulary padding,
training metrics...) comes from the stack each run names (stack_of; stacks/*.json hold the values
and their sources), and a run keeps only what is its own: its plan and the fields where it differs
from that stack (a preset's recipe, its precision text, its FSDP mixed precision).

A row goes through STAGES in order (each returns the reason a row is skipped, or None), then
measured_run writes it.

Usage: python3 tools/data/convert_published.py [path/to/published_runs.json]
"""
import json
import os
import re
import sys
from collections import Counter, defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SRC = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "..", "shared", "validation", "published_runs.json")
OUT = os.path.join(ROOT, "scenarios", "measured")


def gpu_profile(name):
    n = (name or "").lower()
    if "a100" in n and "40" in n:
        return "a100-sxm4-40g"
    if "a100" in n:
        return "a100-sxm4-80g"
    if "h100" in n and ("96" in n or "95" in n or "hbm2e" in n):
        return None  # a 94/96 GB H100 variant: no profile yet
    if "h100" in n:
        return "h100-sxm5-80g"
    if "h200" in n:
        return "h200-sxm-141g"
    if n.startswith("gb200"):  # Grace-Blackwell superchips in an NVL72 rack
        return "gb200-nvl72-186g"
    if n.startswith("gb300"):
        return "gb300-nvl72-288g"
    if n.startswith("b200"):  # DGX/HGX B200
        return "b200-sxm-180g"
    if n.startswith("b300"):  # DGX/HGX B300 (Blackwell Ultra)
        return "b300-sxm-288g"
    return None


NVL72 = ("gb200-nvl72-186g", "gb300-nvl72-288g")
NVL72_WHY = ("%d GPUs per NVLink domain: an NVL72 rack links its 72 GPUs over NVLink 5 through its switch trays, so the "
             "scenario's node is the part of a rack the job uses, here the largest divisor of the job's %d GPUs up to 72 (64 "
             "GPUs = 16 of the rack's 18 compute trays); one NIC per GPU")


MONTHS = {m: i + 1 for i, m in enumerate(("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"))}


def dated_before_a100_80gb(title):
    """True when the source title carries a '(Mon YYYY)' date before November 2020."""
    m = re.search(r"\((jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]* (\d{4})\)", title.lower())
    return bool(m) and (int(m.group(2)), MONTHS[m.group(1)]) < (2020, 11)


def network_of(hw):
    """-> (inter_node dict or None, why) from the row's system / inter_node text."""
    sysname = (hw.get("system") or "")
    inter = (hw.get("inter_node") or "")
    low = inter.lower()
    if "omni-path" in low and "jean zay" in sysname.lower():
        # Measured on this partition's A100 nodes by the same team: NCCL 2.10.3 over the OPA ports'
        # verbs ran both ring channels through one port (hfi1 index 1: "via NET/IB/1" for every
        # inter-node hop) and reached a bus bandwidth of 39.9 Gb/s = 4.98 GB/s (all-reduce of 4 GB
        # fp32 over 16 ranks on 4 nodes, five trials 39.3-39.9 Gb/s); the README there: "we have an
        # issue with nccl that doesn't fully utilize Intel OPA full bandwidth". The node's four
        # ports stay (the training's concurrent data-parallel and pipeline communicators are not
        # one ring), each at the rate that times the profile's inter_bus_efficiency (0.912) gives
        # that one port's measured bus bandwidth.
        return ({"nics_per_node": 4, "nic_gbps": round(4.98 / 0.912, 3)},
                "NCCL's measured bandwidth on this cluster, not the OPA line rate: all_reduce_bench.py on Jean Zay "
                "gpu_p5 A100 nodes with NCCL 2.10.3 reached a bus bandwidth of 39.9 Gb/s = 4.98 GB/s, every ring "
                "channel through one OPA port (bigscience-workshop/bigscience experiments/bandwidth/"
                "n4_a100_all_reduce_bench.txt; README there: 'an issue with nccl that doesn't fully utilize Intel "
                "OPA full bandwidth'); the node's 4 ports each at 4.98 / 0.912 GB/s (0.912: the profile's inter_bus_efficiency), "
                "the rate one port carried for one communicator (row: %s)" % inter)
    if "omni-path" in low:
        m = re.search(r"(\d+) links per node", low)
        if m:
            return {"nics_per_node": int(m.group(1)), "nic_gbps": 12.5}, "Omni-Path 100 Gb/s per link (row: %s)" % inter
    m = re.search(r"(\d+) ?gbps node-node", low)
    if m:
        return {"nics_per_node": 8, "nic_gbps": int(m.group(1)) / 8 / 8}, "%s Gb/s per node over 8 NICs (row: %s)" % (m.group(1), inter)
    m = re.search(r"(\d+) ?gb/s.*per gpu", low)
    if m:
        return {"nics_per_node": 8, "nic_gbps": int(m.group(1)) / 8}, "one %s Gb/s NIC per GPU (row: %s)" % (m.group(1), inter)
    return None, None


def dtype_of(s):
    s = (s or "").lower()
    if not s:
        return None
    if "fp8-mx" in s and "fp8-cs" in s:  # a row naming two FP8 recipes
        return None
    if "nvfp4" in s:
        return "fp8"  # with fp8_recipe nvfp4 (fp8_recipe_of): Transformer Engine's low-precision GEMM path
    if "mxfp8" in s or "fp8-mx" in s:
        return "fp8"  # with fp8_recipe mxfp8 (fp8_recipe_of)
    if "fp8" in s or "float8" in s:
        return "fp8"
    if "bf16" in s:
        return "bf16"
    if "fp16" in s:
        return "fp16"
    return None


def fp8_recipe_of(s):
    """-> the scenario's training.fp8_recipe for an fp8 row's precision text, or None (the default)."""
    s = (s or "").lower()
    if "nvfp4" in s:
        return "nvfp4"
    if "mxfp8" in s or "fp8-mx" in s:
        return "mxfp8"
    if "fp8-cs" in s:
        return "current"
    return None


def recompute_of(s):
    s = (s or "").lower()
    if not s:
        return None
    if "sac" in s or "layer" in s or s.startswith("selective op"):
        return "unsupported"
    if s.startswith("full"):
        return "full"
    if s.startswith("selective"):
        return "selective"
    if s.startswith("none"):
        return "none"
    return None


def sharding_of(s, gpus, tp, pp):
    """-> (zero_stage, fsdp dict or None) or raises ValueError(reason)."""
    s = s or ""
    low = s.lower()
    if not s or low in ("none", "ddp (distributed optimizer not stated)"):
        return 0, None
    if "offload" in low:
        raise ValueError("CPU offload is not modelled")
    if "fairscale" in low:
        raise ValueError("FSDP + TP degree not stated")
    m = re.match(r"zero-(\d)", low)
    if m:
        return int(m.group(1)), None
    if "deepspeed zero-3" in low or "zero-3" in low:
        return 3, None
    if "shard_grad_op" in low:
        return 0, {"sharding": "grad_op"}
    if "hybrid" in low:
        raise ValueError("hybrid shard group not stated")
    if "fsdp" in low:
        return 0, {"sharding": "full"}
    raise ValueError("unknown sharding '%s'" % s)





MB_PRESET = ("Megatron-Bridge's %s preset %s (scripts/performance/configs/llama/%s_workload_base_configs.py: %s, as in "
             "the row; no recompute_num_layers / recompute_modules; WorkloadBaseConfig sets sequence_parallel = tp > 1)")
MB_70B = (" over the recipe llama3_70b_pretrain_config (src/megatron/bridge/recipes/llama/llama3.py: "
          "CommOverlapConfig(tp_comm_overlap=True), ddp.use_distributed_optimizer = True, no recompute granularity); the "
          "perf script pads the vocabulary (should_pad_vocab = True)")
MB_405B = (" over the recipe llama31_405b_pretrain_config (src/megatron/bridge/recipes/llama/llama3.py: sequence_parallel = "
           "True, account_for_embedding_in_pipeline_split and account_for_loss_in_pipeline_split = True, "
           "use_distributed_optimizer = True, CommOverlapConfig(tp_comm_overlap=True), no recompute granularity); "
           "scripts/performance/configs/llama/llama31_llm_pretrain.py sets seq_length 8192, should_pad_vocab = True and "
           "turns TP overlap off for NVFP4 only")


MB_NVFP4 = ("; NVFP4: scripts/performance/configs/llama/%s_llm_pretrain.py sets comm_overlap.tp_comm_overlap = False "
            "for nvfp4, and scripts/performance/utils/precision.py maps nvfp4 to bf16_with_nvfp4_mixed "
            "(src/megatron/bridge/training/mixed_precision.py: fp4 'e2m1', fp4_recipe 'nvfp4', no FP8, no BF16 first/last "
            "layers): Transformer Engine's NVFP4BlockScaling on every transformer-layer linear GEMM")

MB_FSDP = ("; Megatron-FSDP: scripts/performance/utils/overrides.py _set_megatron_fsdp_overrides sets "
           "data_parallel_sharding_strategy 'optim_grads_params' (parameters, gradients and optimizer states sharded over "
           "the data-parallel ranks, gathered per unit: parallel.fsdp sharding full), llama3_llm_pretrain.py "
           "fsdp_double_buffer True and suggested_communication_unit_size 800,000,000 (about one 0.86B-parameter layer per "
           "unit), its parameters and gradients in per-bucket contiguous buffers (FSDP1's flat-parameter model: version 1), "
           "grad_reduce_in_fp32 False (bf16 reduce-scatter); _set_recompute_overrides turns cpu_offloading_num_layers into "
           "Megatron-Core's activation offloading of that many layers, weights not offloaded "
           "(parallel.activation_offload_layers), over the Grace NVLink-C2C link. Not modelled: the FP8-CS recipe's "
           "fp8_param_gather (FP8 parameter all-gathers, 1 B per parameter; parasim gathers the 16-bit copy, which hides "
           "under the layers' compute here)")


def mb_presets():
    """(model, profile, tp, pp, vp, cp, precision) -> what Megatron-Bridge's performance preset of that plan and the
    recipe behind it set: {"why": text, "account_split": the recipe's embedding/loss pipeline slots}."""
    rows = [  # model, profile, tp, pp, vp, cp, precision, row label, preset, its plan as the file states it
        ("Llama 3 70B", "h100-sxm5-80g", 4, 8, 5, 1, "FP8", "H100 FP8", "LLAMA3_70B_PRETRAIN_CONFIG_H100_FP8_CS_V2",
         "tp 4, pp 8, vp 5, global batch 256"),
        ("Llama 3 70B", "gb200-nvl72-186g", 2, 4, 5, 1, "MXFP8", "GB200 MXFP8", "LLAMA3_70B_PRETRAIN_CONFIG_GB200_FP8_MX_V2",
         "tp 2, pp 4, vp 5, global batch 256"),
        ("Llama 3 70B", "gb300-nvl72-288g", 1, 4, 5, 1, "MXFP8", "GB300 MXFP8", "LLAMA3_70B_PRETRAIN_CONFIG_GB300_FP8_MX_V2",
         "pp 4, vp 5, global batch 256"),
        ("Llama 3.1 405B", "h100-sxm5-80g", 8, 8, 8, 2, "FP8", "H100 FP8", "LLAMA31_405B_PRETRAIN_CONFIG_H100_FP8_CS_V2",
         "tp 8, pp 8, cp 2, vp 8, 1024 GPUs, global batch 1536"),
        ("Llama 3.1 405B", "gb200-nvl72-186g", 4, 16, 4, 1, "FP8", "GB200 FP8", "LLAMA31_405B_PRETRAIN_CONFIG_GB200_FP8_CS_V2",
         "tp 4, pp 16, cp 1, vp 4, 256 GPUs, global batch 1536, use_megatron_fsdp False, no CPU offloading"),
        ("Llama 3.1 405B", "gb200-nvl72-186g", 4, 16, 8, 1, "MXFP8", "GB200 MXFP8", "LLAMA31_405B_PRETRAIN_CONFIG_GB200_FP8_MX_V2",
         "tp 4, pp 16, cp 1, vp 8, 256 GPUs, global batch 1536"),
        ("Llama 3.1 405B", "gb300-nvl72-288g", 4, 8, 4, 1, "FP8", "GB300 FP8", "LLAMA31_405B_PRETRAIN_CONFIG_GB300_FP8_CS_V2",
         "tp 4, pp 8, cp 1, vp 4, 256 GPUs, global batch 1536, use_megatron_fsdp False, no CPU offloading"),
        ("Llama 3.1 405B", "gb300-nvl72-288g", 2, 8, 4, 2, "MXFP8", "GB300 MXFP8", "LLAMA31_405B_PRETRAIN_CONFIG_GB300_FP8_MX_V2",
         "tp 2, pp 8, cp 2, vp 4, 256 GPUs, global batch 1536"),
        ("Llama 3 70B", "gb200-nvl72-186g", 2, 4, 5, 1, "NVFP4", "GB200 NVFP4", "LLAMA3_70B_PRETRAIN_CONFIG_GB200_NVFP4_V2",
         "tp 2, pp 4, vp 5, cp 1, global batch 256"),
        ("Llama 3 70B", "gb300-nvl72-288g", 1, 4, 5, 1, "NVFP4", "GB300 NVFP4", "LLAMA3_70B_PRETRAIN_CONFIG_GB300_NVFP4_V2",
         "pp 4, vp 5, global batch 256"),
        ("Llama 3.1 405B", "gb200-nvl72-186g", 4, 16, 8, 1, "NVFP4", "GB200 NVFP4", "LLAMA31_405B_PRETRAIN_CONFIG_GB200_NVFP4_V2",
         "tp 4, pp 16, cp 1, vp 8, 256 GPUs, global batch 1536, recompute_num_layers None"),
        ("Llama 3.1 405B", "gb300-nvl72-288g", 4, 8, 4, 1, "NVFP4", "GB300 NVFP4", "LLAMA31_405B_PRETRAIN_CONFIG_GB300_NVFP4_V2",
         "tp 4, pp 8, cp 1, vp 4, 256 GPUs, global batch 1536"),
    ]
    # Megatron-FSDP presets (ZeRO-3 over the 64 GPUs, activations of the first N layers offloaded to the Grace
    # CPU); the rows state the plan as tp 1, pp 1 with vp unset or 1.
    offloads = {}  # preset name -> cpu_offloading_num_layers
    for prof, label, offload in (("gb200-nvl72-186g", "GB200", 40), ("gb300-nvl72-288g", "GB300", 20)):
        name = "LLAMA3_70B_PRETRAIN_CONFIG_%s_FP8_CS_V2" % label
        offloads[name] = offload
        for vp in (None, 1):
            rows.append(("Llama 3 70B", prof, 1, 1, vp, 1, "FP8", label + " FP8", name,
                         "micro_batch_size 2, use_megatron_fsdp True, cpu_offloading_num_layers %d, global batch 256" % offload))
    out = {}
    for model, prof, tp, pp, vp, cp, prec, label, name, plan in rows:
        big = model.endswith("405B")
        why = MB_PRESET % (label, name, "llama31" if big else "llama3", plan) + (MB_405B if big else MB_70B)
        preset = {"why": why, "account_split": big}
        if prec == "NVFP4":
            preset["why"] += MB_NVFP4 % ("llama31" if big else "llama3")
            preset["tp_comm_overlap"] = False
        if name in offloads:
            preset["why"] += MB_FSDP
            preset["parallel"] = {"fsdp": {"sharding": "full"},
                                  "activation_offload_layers": offloads[name]}
        out[(model, prof, tp, pp, vp, cp, prec)] = preset
        if prec == "FP8":  # older tables name the same recipe FP8-CS
            out.setdefault((model, prof, tp, pp, vp, cp, "FP8-CS"), preset)
    return out


# Mixture-of-experts rows: the model's dimensions come from the zoo file (its sources inside), the plan from
# Megatron-Bridge's Qwen3 performance scripts.
MOE_MODELS = {"qwen330ba3b": "qwen3-30b-a3b", "qwen3235ba22b": "qwen3-235b-a22b", "qwen3moe30b": "qwen3-30b-a3b",
              "mixtral8x7b": "mixtral-8x7b", "mixtral8x22b": "mixtral-8x22b", "deepseekv3": "deepseek-v3",
              "gptoss120b": "gpt-oss-120b", "gptoss20b": "gpt-oss-20b", "nemotron3nano": "nemotron-3-nano-30b-a3b",
              "nemotronv3nano": "nemotron-3-nano-30b-a3b"}
# Megatron-Bridge MoE rows whose plan the converter reads from the performance presets (moe_preset).
MB_MOE_MODELS = ("qwen3-30b-a3b", "qwen3-235b-a22b", "deepseek-v3", "gpt-oss-120b", "nemotron-3-nano-30b-a3b")
# NeMo AutoModel MoE rows (FSDP2 + EP) whose plan the converter reads from AutoModel's benchmark configs, by zoo model.
# Only rows without pipeline parallelism: AutoModel's pipelined MoE rows run torch.distributed.pipelining's interleaved
# 1F1B over FSDP2 with DeepEP's inter-node dispatch, which is not modelled.
# AutoModel MoE rows whose benchmark config names what parasim does not model.
AM_MOE_UNMODELLED = {
    "gpt-oss-20b": ("NeMo AutoModel's GPT-OSS plan is not modelled: examples/benchmark/configs/gptoss_20b_te_deepep.yaml runs "
                    "backend attn: flex (PyTorch FlexAttention, Triton kernels generated by torch.compile; no published "
                    "throughput figure for it found to price it by)"),
    "gpt-oss-120b": ("NeMo AutoModel's GPT-OSS plan is not modelled: examples/benchmark/configs/gptoss_120b_te_deepep.yaml runs "
                     "backend attn: flex (PyTorch FlexAttention) and ep_size 64 over 8 nodes with DeepEP's inter-node "
                     "dispatch"),
}
AM_MOE = {
    "qwen3-30b-a3b": (
        "NeMo AutoModel's benchmark config examples/benchmark/configs/qwen3_moe_30b_te_deepep.yaml (github.com/NVIDIA-NeMo/"
        "Automodel): FSDP2Manager with ep_size 8, parallelizer activation_checkpointing: true (nemo_automodel/components/moe/"
        "parallelizer.py apply_ac wraps every decoder block in checkpoint_wrapper: full recompute), backend attn: te "
        "(Transformer Engine's DotProductAttention, cuDNN fused attention on Hopper), enable_deepep (intra-node here, "
        "NVLink) and fake_balanced_gate (FakeBalancedGate in nemo_automodel/components/moe/layers.py, noise 0: every "
        "token's experts assigned in turn, perfectly balanced: training.moe_expert_load 1.0), torch.optim.Adam (its default foreach "
        "multi-tensor path: one elementwise kernel per update term), MaskedCrossEntropy with fp32_upcast false "
        "(F.cross_entropy over the 16-bit logits: loss_impl eager16), apply_fsdp's default MixedPrecisionPolicy (bf16 parameters, fp32 gradient "
        "reduction); the experts are ignored by FSDP when ep = dp (expert-data-parallel group of 1). parallelize_model's "
        "default reshard_after_forward = False (the dense parameters, %s of each layer's, stay gathered from forward "
        "to backward) is modelled as full sharding: one more all-gather of them per layer and microbatch"),
}


def layer_params_of(zoo):
    """Parameters of one MoE decoder layer of a zoo model: attention projections, router, experts and norms."""
    h, heads, kv = zoo["hidden"], zoo["heads"], zoo.get("kv_heads", zoo["heads"])
    hd = zoo.get("head_dim", h // heads)
    moe = zoo["moe"]
    attn = h * heads * hd + 2 * h * kv * hd + heads * hd * h
    return attn + h * moe["experts"] + moe["experts"] * 3 * h * moe["expert_ffn_hidden"] + 2 * h


def moe_zoo_name(name):
    """The zoo model a row's MoE model name refers to ('Qwen3_30B_a3B', 'Mixtral 8x7B v0.1'), or None."""
    key = re.sub(r"[^a-z0-9]", "", (name or "").lower())
    return next((v for k, v in MOE_MODELS.items() if key.startswith(k)), None)
MB_QWEN3 = ("Megatron-Bridge's Qwen3 MoE performance preset (scripts/performance/configs/qwen/qwen3_workload_base_configs.py: "
            "expert_tensor_parallel_size = 1 in BASE_QWEN3_*_CONFIG; qwen3_llm_pretrain.py set_qwen3_common_configs: "
            "recompute_granularity None, moe_router_force_load_balancing = True, grad_reduce_in_fp32 = False; the recipes "
            "qwen3_30b_a3b / qwen3_235b_a22b_pretrain_config in src/megatron/bridge/recipes/qwen/qwen3_moe.py: "
            "sequence_parallel = True, use_distributed_optimizer = True, moe_grouped_gemm and moe_permute_fusion on, "
            "cross_entropy_fusion_impl 'te'%s); %s")


# DeepSeek-V3's pipeline layouts in Megatron-Bridge's recipe (src/megatron/bridge/recipes/deepseek/deepseek_v3.py
# layout_map): decoder layers per virtual stage for (pp, vp), the embedding on the first and the MTP layer and the loss
# on the last virtual stage; (2, 8) and (8, 4) are the presets' explicit pp_layout strings "Et*4|(t*4|)*14tmL" and
# "Et|(tt|)*30mL" (E embedding, t a decoder layer, m the MTP layer, L the loss, | a virtual-stage boundary).
DSV3_LAYOUTS = {(4, 1): [16, 16, 16, 13], (8, 1): [8] * 7 + [5], (4, 2): [8] * 7 + [5], (16, 1): [4] * 15 + [1],
                (8, 2): [4] * 15 + [1], (4, 4): [4] * 15 + [1], (2, 8): [4] * 15 + [1], (8, 4): [1] + [2] * 30 + [0]}
MB_DSV3 = ("Megatron-Bridge's DeepSeek-V3 recipe (src/megatron/bridge/recipes/deepseek/deepseek_v3.py: mtp_num_layers = 1, "
           "expert_tensor_parallel_size = 1, distributed optimizer, the pipeline layout for pp %d x vp %d: %s decoder "
           "layers per virtual stage with the MTP layer and the loss on the last; no cross_entropy_loss_fusion, so "
           "Megatron-Core's default unfused fp32 cross entropy) and its performance preset %s "
           "(scripts/performance/configs/deepseek/deepseek_workload_base_configs.py: %s; CUDA graphs and the cuteDSL fused "
           "grouped MLP are not modelled)")
MB_GPTOSS = ("Megatron-Bridge's GPT-OSS recipe (src/megatron/bridge/recipes/gpt_oss/gpt_oss.py gpt_oss_120b_pretrain_config: "
             "expert_tensor_parallel_size = 1, seq 4096, distributed optimizer, no cross_entropy_loss_fusion, so Megatron-Core's "
             "default unfused fp32 cross entropy) and its performance preset %s (scripts/performance/configs/gpt_oss/"
             "gpt_oss_workload_base_configs.py: %s; CUDA graphs, the cuteDSL fused grouped MLP and FP8 dot-product attention "
             "are not modelled: attention is priced in 16-bit)")
MB_NANO = ("Megatron-Bridge's Nemotron 3 Nano recipe (src/megatron/bridge/recipes/nemotronh/nemotron_3_nano.py "
           "nemotron_3_nano_pretrain_config: expert_tensor_parallel_size 1, seq 8192, distributed optimizer, "
           "cross_entropy_fusion_impl 'native': Megatron-Core's fused_vocab_parallel_cross_entropy, jit-fused passes over the 16-bit "
           "logits without an fp32 upcast (megatron/core/fusions/fused_cross_entropy.py), priced as loss_impl eager16) and "
           "its performance preset %s (scripts/performance/configs/nemotronh/nemotron_3_nano_workload_base_configs.py at v0.3.1 "
           "and nemotron_3_workload_base_configs.py at v0.5.0; src/megatron/bridge/perf_recipes/nemotronh/<gpu>/nemotronh.py at "
           "v0.6.0: %s; moe_router_force_load_balancing True, the flex dispatcher with the hybridep backend, cuda_graph_impl "
           "transformer_engine with cuda_graph_scope %s; the 26.08 Blackwell presets' CuTe DSL fused grouped MLP "
           "(NVTE_CUTEDSL_FUSED_GROUPED_MLP), Transformer Engine op fuser and FP8 dot-product attention are not modelled)")
NANO_GRAPHS = ["attn", "mamba", "moe_router", "moe_preprocess"]
# The CUDA graphs of the other Megatron-Bridge MoE runs, by run id (their presets' graphs differ by release).
MB_CUDA_GRAPHS = json.load(open(os.path.join(ROOT, "tools", "data", "mbridge_cuda_graphs.json")))["runs"]
# Megatron-Bridge's MoE presets by (model, GPU, precision): the plans they set (tp, pp, vp, ep, and the global batch where
# two versions differ only in it), whether the all-to-alls overlap (moe_a2a_overlap) and the recompute modules.
# Rows whose plan matches one of them convert; others are skipped.
# The 26.08 release's Blackwell MXFP8 recipes run the flex dispatcher with the hybridep backend (the preset files at
# bf07e5678 set no dispatcher): the dispatcher a preset entry names, and where it is set.
DSV3_MX_DISPATCHER = ("hybridep", "_enable_deepseek_full_iteration_mxfp8 (src/megatron/bridge/perf_recipes/deepseek/common.py "
                      "at v0.6.0, the 26.08 release): moe_token_dispatcher_type 'flex', moe_flex_dispatcher_backend 'hybridep'")
GPTOSS_MX_DISPATCHER = ("hybridep", "_apply_gpt_oss_120b_full_iter_fp8mx_configs (src/megatron/bridge/perf_recipes/gpt_oss/"
                        "common.py at v0.6.0, the 26.08 release): moe_token_dispatcher_type 'flex', "
                        "moe_flex_dispatcher_backend 'hybridep'")
MB_MOE_PRESETS = {
    ("deepseek-v3", "gb300", "FP8_CS"): [dict(name="DEEPSEEK_V3_PRETRAIN_CONFIG_GB300_FP8_CS_V1/V2", tp=1, pp=2, vp=8, ep=32,
                                              a2a=False, rec=["mla_up_proj"])],
    ("deepseek-v3", "gb300", "BF16"): [dict(name="DEEPSEEK_V3_PRETRAIN_CONFIG_GB300_BF16_V1/V2", tp=1, pp=4, vp=4, ep=64, a2a=False,
                                            rec=["moe_act"])],
    ("deepseek-v3", "gb300", "FP8_MX"): [dict(name="DEEPSEEK_V3_PRETRAIN_CONFIG_GB300_FP8_MX_V1/V2", tp=1, pp=2, vp=8, ep=32,
                                              a2a=True, rec=[], disp=DSV3_MX_DISPATCHER)],
    ("deepseek-v3", "gb300", "NVFP4"): [dict(name="DEEPSEEK_V3_PRETRAIN_CONFIG_GB300_NVFP4_V1/V2", tp=1, pp=2, vp=8, ep=32,
                                             a2a=False, rec=[])],
    ("deepseek-v3", "gb200", "FP8_CS"): [dict(name="DEEPSEEK_V3_PRETRAIN_CONFIG_GB200_FP8_CS_V1/V2", tp=1, pp=4, vp=4, ep=64,
                                              a2a=False, rec=["mlp"])],
    ("deepseek-v3", "gb200", "BF16"): [dict(name="DEEPSEEK_V3_PRETRAIN_CONFIG_GB200_BF16_V1/V2", tp=1, pp=4, vp=4, ep=64, a2a=False,
                                            rec=["mla_up_proj"])],
    ("deepseek-v3", "gb200", "FP8_MX"): [dict(name="DEEPSEEK_V3_PRETRAIN_CONFIG_GB200_FP8_MX_V1/V2", tp=1, pp=4, vp=4, ep=64,
                                              a2a=True, rec=["mla_up_proj"], disp=DSV3_MX_DISPATCHER)],
    ("deepseek-v3", "gb200", "NVFP4"): [dict(name="DEEPSEEK_V3_PRETRAIN_CONFIG_GB200_NVFP4_V1/V2", tp=1, pp=4, vp=4, ep=64,
                                             a2a=False, rec=["mla_up_proj"])],
    ("deepseek-v3", "b300", "*"): [dict(name="DEEPSEEK_V3_PRETRAIN_CONFIG_B300_V1/V2", tp=1, pp=8, vp=2, ep=8, a2a=False,
                                        rec=["mla_up_proj"], prec=("BF16", "FP8_CS", "NVFP4")),
                                   dict(name="DEEPSEEK_V3_PRETRAIN_CONFIG_B300_FP8_MX_V1/V2", tp=1, pp=8, vp=2, ep=8, a2a=True,
                                        rec=["mla_up_proj"], prec=("FP8_MX",))],
    ("deepseek-v3", "b200", "*"): [dict(name="DEEPSEEK_V3_PRETRAIN_CONFIG_B200_V1 (and its FP8_MX / NVFP4 V1)", tp=1, pp=16, vp=1,
                                        ep=8, a2a=False, rec=["mla_up_proj"]),
                                   dict(name="DEEPSEEK_V3_PRETRAIN_CONFIG_B200_FP8_MX_V2", tp=1, pp=8, vp=2, ep=32, a2a=True,
                                        rec=["mla_up_proj", "mlp"], prec=("FP8_MX",)),
                                   dict(name="DEEPSEEK_V3_PRETRAIN_CONFIG_B200_NVFP4_V2", tp=1, pp=8, vp=2, ep=32, a2a=True,
                                        rec=["mla_up_proj", "layernorm", "moe_act"], prec=("NVFP4",))],
    ("deepseek-v3", "h100", "*"): [dict(name="DEEPSEEK_V3_PRETRAIN_CONFIG_H100_V1/V2", tp=2, pp=8, vp=4, ep=64, a2a=False,
                                        rec=["mla_up_proj", "mlp"], prec=("BF16", "FP8_CS"))],
    ("nemotron-3-nano-30b-a3b", "h100", "*"): [
        dict(name="NEMOTRON_3_NANO_PRETRAIN_CONFIG_H100_FP8_CS_V1", tp=1, pp=1, vp=1, ep=8, a2a=False,
             rec=["moe", "layernorm", "core_attn", "moe_act"], graphs=["mamba"], prec=("FP8_CS",)),
        dict(name="NEMOTRON_3_NANO_PRETRAIN_CONFIG_H100_BF16_V1", tp=1, pp=1, vp=1, ep=8, a2a=False, rec=["moe", "layernorm"],
             graphs=["attn", "mamba"], prec=("BF16",))],
    ("nemotron-3-nano-30b-a3b", "gb300", "*"): [dict(name="NEMOTRON_3_NANO_PRETRAIN_CONFIG_GB300_*_V1", tp=1, pp=1, vp=1, ep=8,
                                                     a2a=False, rec=[], graphs=NANO_GRAPHS)],
    ("nemotron-3-nano-30b-a3b", "gb200", "*"): [dict(name="NEMOTRON_3_NANO_PRETRAIN_CONFIG_GB200_*_V1", tp=1, pp=1, vp=1, ep=8,
                                                     a2a=False, rec=[], graphs=NANO_GRAPHS)],
    ("nemotron-3-nano-30b-a3b", "b300", "*"): [dict(name="NEMOTRON_3_NANO_PRETRAIN_CONFIG_B300_*_V1", tp=1, pp=1, vp=1, ep=8,
                                                    a2a=False, rec=[], graphs=NANO_GRAPHS)],
    ("nemotron-3-nano-30b-a3b", "b200", "*"): [dict(name="NEMOTRON_3_NANO_PRETRAIN_CONFIG_B200_*_V1", tp=1, pp=1, vp=1, ep=8,
                                                    a2a=False, rec=[], graphs=NANO_GRAPHS)],
    ("gpt-oss-120b", "h100", "*"): [dict(name="GPT_OSS_120B_PRETRAIN_CONFIG_H100_BF16_V1/V2", tp=1, pp=4, vp=1, ep=8, a2a=False,
                                         rec=["layernorm", "moe_act"], prec=("BF16", "FP8_CS"))],
    ("gpt-oss-120b", "gb300", "*"): [dict(name="GPT_OSS_120B_PRETRAIN_CONFIG_GB300_BF16_V1/V2", tp=1, pp=1, vp=1, ep=64,
                                          a2a=False, rec=[]),
                                     dict(name="GPT_OSS_120B_PRETRAIN_CONFIG_GB300_FP8_MX_V2", tp=1, pp=1, vp=1, ep=16, a2a=True,
                                          rec=[], prec=("FP8_MX",), disp=GPTOSS_MX_DISPATCHER)],
    ("gpt-oss-120b", "gb200", "*"): [dict(name="GPT_OSS_120B_PRETRAIN_CONFIG_GB200_BF16_V1", tp=1, pp=1, vp=1, ep=64, gbs=512,
                                          a2a=False, rec=["layernorm", "moe_act"]),
                                     dict(name="GPT_OSS_120B_PRETRAIN_CONFIG_GB200_BF16_V2", tp=1, pp=1, vp=1, ep=64, gbs=1280,
                                          a2a=True, rec=["layernorm", "moe_act"], prec=("BF16",)),
                                     dict(name="GPT_OSS_120B_PRETRAIN_CONFIG_GB200_FP8_MX_V2", tp=1, pp=1, vp=1, ep=64, gbs=1280,
                                          a2a=True, rec=[], prec=("FP8_MX",))],
    ("gpt-oss-120b", "b300", "*"): [dict(name="GPT_OSS_120B_PRETRAIN_CONFIG_B300_BF16_V1", tp=1, pp=1, vp=1, ep=64, a2a=False,
                                         rec=[]),
                                    dict(name="GPT_OSS_120B_PRETRAIN_CONFIG_B300_BF16_V2", tp=1, pp=1, vp=1, ep=8, a2a=False, rec=[],
                                         prec=("BF16",)),
                                    dict(name="GPT_OSS_120B_PRETRAIN_CONFIG_B300_FP8_MX_V2", tp=1, pp=1, vp=1, ep=8, a2a=True,
                                         rec=[], prec=("FP8_MX",))],
    ("gpt-oss-120b", "b200", "*"): [dict(name="GPT_OSS_120B_PRETRAIN_CONFIG_B200_BF16_V1", tp=1, pp=1, vp=1, ep=64,
                                         rec=["layernorm", "moe_act"], a2a=False),
                                    dict(name="GPT_OSS_120B_PRETRAIN_CONFIG_B200_BF16_V2 (= FP8_MX_V2)", tp=1, pp=1, vp=1, ep=8,
                                         rec=["layernorm", "moe_act"], a2a=False)],
}


def precision_class(dtype):
    """A row's precision as the presets name it: BF16, FP8_CS, FP8_MX or NVFP4."""
    d = (dtype or "").upper()
    return "NVFP4" if "NVFP4" in d else "FP8_MX" if "MX" in d else "FP8_CS" if "FP8" in d else "BF16"


def mb_moe_plan(zoo, prof, prec, tp, pp, vpp, ep, gbs):
    """The Megatron-Bridge MoE preset whose plan is the row's, or None."""
    fam = next((f for f in ("gb300", "gb200", "b300", "b200", "h100") if prof.startswith(f)), None)
    cands = MB_MOE_PRESETS.get((zoo, fam, prec), []) + MB_MOE_PRESETS.get((zoo, fam, "*"), [])
    for c in cands:
        if prec in c.get("prec", (prec,)) and (c["tp"], c["pp"], c["vp"], c["ep"]) == (tp, pp, vpp, ep) and \
                c.get("gbs", gbs) == gbs:
            return c
    return None


def moe_preset(model, prof, tp, pp=1, vpp=1, ep=1, prec="BF16", gbs=0):
    """What Megatron-Bridge's MoE preset sets for a row's plan (the rows' tp/pp/vp/ep are the preset's); None when no
    preset known to the converter has the row's plan."""
    zoo = moe_zoo_name(model)
    h100 = prof.startswith("h100")
    if zoo in ("deepseek-v3", "gpt-oss-120b", "nemotron-3-nano-30b-a3b"):
        c = mb_moe_plan(zoo, prof, prec, tp, pp, vpp, ep, gbs)
        if c is None or (zoo == "deepseek-v3" and (pp, vpp) not in DSV3_LAYOUTS):
            return None
        what = "moe_a2a_overlap = %s, recompute_modules %s" % (c["a2a"], c["rec"])
        if c.get("disp"):
            what += "; the dispatcher from " + c["disp"][1]
        preset = {"account_split": False, "tp_comm_overlap": False, "ep_comm_overlap": c["a2a"],
                  "recompute_modules": c["rec"], "loss_impl": "megatron"}
        if c.get("disp"):
            preset["moe_dispatcher"] = c["disp"][0]
        if zoo == "deepseek-v3":
            layout = DSV3_LAYOUTS[(pp, vpp)]
            preset.update(why=MB_DSV3 % (pp, vpp, layout, c["name"], what), mtp_layers=1, stage_layers=layout)
        elif zoo == "nemotron-3-nano-30b-a3b":
            preset.update(why=MB_NANO % (c["name"], what, c["graphs"]), cuda_graph_scope=c["graphs"], moe_dispatcher="hybridep",
                          loss_impl="eager16")
        else:
            preset.update(why=MB_GPTOSS % (c["name"], what))
        return preset
    big = zoo == "qwen3-235b-a22b"
    dispatcher = "hybridep"
    if big and h100:
        comm = ("H100 235B: CommOverlapConfig(tp_comm_overlap=False), moe_token_dispatcher_type 'alltoall' with "
                "moe_a2a_overlap = True (QWEN3_235B_A22B_PRETRAIN_CONFIG_H100_FP8_CS_V1/V2): the all-to-alls overlap "
                "another microbatch's compute")
        tp_overlap, ep_overlap, dispatcher = False, True, None
    elif h100 and (pp, vpp, ep) == (2, 12, 8):
        comm = ("H100 30B as the preset was before pull request #2477 (QWEN3_30B_A3B_PRETRAIN_CONFIG_H100_FP8_CS_V1 on the "
                "r0.3.0 branch at 194331ed, the plan of this row: pipeline 2 x virtual 12, EP 8, global batch 1,024): "
                "moe_a2a_overlap = True, moe_flex_dispatcher_backend 'deepep' (set by the preset itself): the all-to-alls "
                "overlap another microbatch's compute")
        tp_overlap, ep_overlap, dispatcher = True, True, "deepep"
    elif h100:
        comm = ("H100 30B: moe_a2a_overlap = False, flex dispatcher with the hybridep backend "
                "(QWEN3_30B_A3B_PRETRAIN_CONFIG_H100_FP8_CS_V1 from pull request #2477 on: EP 16): its all-to-alls block "
                "the layer")
        tp_overlap, ep_overlap = True, False
    elif prec == "FP8_MX":
        comm = ("Blackwell MXFP8: flex dispatcher with the hybridep backend (src/megatron/bridge/perf_recipes/qwen/<gpu>/"
                "qwen3_moe.py at v0.6.0, the 26.08 release: moe_flex_dispatcher_backend 'hybridep'), and "
                "_enable_hybridep_full_iteration_mxfp8 (perf_recipes/qwen/common.py at v0.6.0): "
                "CommOverlapConfig(tp_comm_overlap=True, overlap_moe_expert_parallel_comm=True, delay_wgrad_compute=True): "
                "the all-to-alls overlap another microbatch's compute (the preset files at bf07e5678, which set no "
                "moe_a2a_overlap, predate that release); its fp8_dot_product_attention and Transformer Engine op fuser "
                "(the CuTe DSL fused grouped MLP) are not modelled")
        tp_overlap, ep_overlap = True, True
    else:
        comm = ("Blackwell: CommOverlapConfig(tp_comm_overlap=True), flex dispatcher with the hybridep backend "
                "(src/megatron/bridge/perf_recipes/qwen/<gpu>/qwen3_moe.py at v0.6.0: moe_flex_dispatcher_backend "
                "'hybridep'), no overlap_moe_expert_parallel_comm: the all-to-alls block the layer")
        tp_overlap, ep_overlap = True, False
    split = ", account_for_embedding_in_pipeline_split and account_for_loss_in_pipeline_split = True" if big else ""
    preset = {"why": MB_QWEN3 % (split, comm), "account_split": big, "tp_comm_overlap": tp_overlap and tp > 1,
              "ep_comm_overlap": ep_overlap}
    if dispatcher:
        preset["moe_dispatcher"] = dispatcher
    return preset


# What each source's rows leave unstated and the source documents (shared/validation/README.md or the source itself):
# how it counts FLOPs, its recompute and precision, its model conventions. What the framework runs (kernels, optimizer,
# FSDP flavour, pipeline engine, vocabulary padding...) is not here: the run names its stack (stack_of, stacks/*.json).
SOURCE_CONVENTIONS = {
    # prefix of source title -> conventions documented in shared/validation/README.md or the source
    "Narayanan et al., SC'21": {"flops": "hardware", "recompute": "full", "flash": False, "dropout": True,
                                "why": "SC'21 reports TFLOP/s counting the activation-recompute forward (Megatron Eq. 3), so full recompute was on",
                                "dtype": "fp16",
                                "dtype_why": "fp16: the paper's section 5 says 'All of our results are run with mixed precision'; its "
                                             "reproduction scripts (examples/academic_paper_scripts/sc21/CONFIG.sh) pass --fp16",
                                "position_embedding": "learned", "max_positions": 2048,
                                "pos_why": "Megatron GPT's learned absolute position embeddings, --max-position-embeddings 2048 "
                                           "in examples/academic_paper_scripts/sc21/CONFIG.sh"},
    "BigScience BLOOM": {"flops": "hardware", "recompute": "full", "flash": False, "dropout": True,
                         "why": "BigScience TFLOP/s use the 4*2 formula that counts the recompute forward (Megatron-DeepSpeed --checkpoint-activations)",
                         "position_embedding": "alibi",
                         "pos_why": "alibi: BLOOM's attention bias, no position parameters and no rotary kernels; the "
                                    "176B run's script passes --position-embedding-type alibi "
                                    "(train/tr11-176B-ml/tr11-176B-ml.slurm)"},
    "Megatron-LM README (Sep 2020)": {
        "flops": "hardware", "flash": False, "dropout": True, "recompute": "full",
        "why": "full recompute: the table's TFLOP/s equal Megatron's count with the activation-checkpointing forward, "
               "96*B*s*l*h^2*(1+s/6h+V/12hl) per step (1B on 1 GPU: 152.8 vs 149.8 printed; without it 114.6)",
        "mb_per_replica": "micro batch = global batch / dp: Megatron-LM of 2020 (before pipeline parallelism) had no "
                          "gradient accumulation; --batch-size was the batch of each data-parallel replica (16)",
        "position_embedding": "learned",
        "pos_why": "GPT-2 style learned absolute positions of max_position_embeddings = seq_len (Megatron's GPT-2 model)"},
    "Megatron-LM README: Performance": {"flops": "model", "flash": True, "dropout": True},
    "Megatron-LM README: Strong": {"flops": "model", "flash": True, "dropout": True},
    "NVIDIA NeMo performance summary (NeMo 24.07": {
        "flops": "model", "flash": True, "dropout": False,
        "recompute": "none",
        "why": ("none: NeMo-Framework-Launcher's Llama training configs (launcher_scripts/conf/training/llama/llama3_70b.yaml, "
                "whose tp 4 / pp 4 / vp 5 / cp 2 / micro batch 1 are the row's; llama2_70b.yaml) set "
                "activations_checkpoint_granularity: null"),
        "sequence_parallel": True,
        "sp_why": "true: the launcher's Llama and GPT-3 configs set sequence_parallel: true",
        "tp_comm_overlap": True,
        "tp_overlap_why": ("true: the launcher's llama3_70b.yaml, llama2_70b.yaml and gpt3/20b.yaml set ub_tp_comm_overlap: "
                           "true (userbuffers overlap of the tensor-parallel all-gather / reduce-scatter with the GEMMs)"),
        "tp_overlap_off_why": ("false: the launcher's conf/training/%s sets ub_tp_comm_overlap: False at tag 24.07 (so does "
                               "gpt3/175b_fp8.yaml; commit 68ae39f9 'Set ub_tp_overlap to False' of 2023-09-12), and its "
                               "H100 FP8 example examples/training/gpt/h100/175b_fp8_16node.sh does not override it"),
        "zero_default": 1,
        "zero_default_why": ("1 (Megatron's distributed optimizer): the launcher configs' optim is mcore_distributed_optim / "
                             "distributed_fused_adam, which shards the fp32 master weights and Adam moments over the data-parallel group"),
        "gpt3": {
            "GPT-3 175B": {"recompute": "selective", "file": "gpt3/175b.yaml", "tp_comm_overlap": False},
            "GPT3-20B": {"recompute": "selective", "layers": 44, "hidden": 6144, "heads": 48, "file": "gpt3/20b.yaml"},
            "GPT3-5B": {"recompute": "none", "layers": 24, "hidden": 4096, "heads": 32, "file": "gpt3/5b.yaml"}},
        "gpt3_why": ("the launcher's conf/training/%s: %s, hidden_dropout 0.1, max_position_embeddings 2048, tokenizer "
                     "GPT2BPETokenizer (GPT-2's byte-level BPE vocabulary of 50,257 tokens, Radford et al. 2019), learned "
                     "absolute positions%s")},
    "MosaicML llm-foundry": {"flops": "model", "flash": True, "dropout": False,
                             "kernel_why_default_mp":
                                 "priced with the Triton FlashAttention figures, though the kernel is uncertain: rows with FSDP "
                                 "mixed_precision DEFAULT come from the later submit_benchmarks.py (it no longer passes "
                                 "--fsdp_config_mixed_precision, and its --attn_impl default is 'flash') run on llm-foundry v0.0.4 "
                                 "(sweep.sh GIT_COMMIT), whose 'flash' is FlashAttention-1 (CUDA); the FlashAttention-2 paper puts "
                                 "both FlashAttention-1 and the Triton kernel 1.3-3x below FlashAttention-2, and the rows' cost per "
                                 "token grows with sequence length at the Triton figures' rate (FlashAttention-2's would be ~2x "
                                 "too fast: throughput MAPE of these 66 rows 13-27 % with Triton, 37-52 % with FlashAttention-2)",
                             "pure_mp_reduce_dtype": "bf16",
                             "pure_mp_why": "bf16: the row's FSDP mixed_precision PURE reduces gradients in the precision's dtype "
                                            "(Composer of torch 2.0.1, composer/trainer/mosaic_fsdp_utils.py get_mixed_precision: "
                                            "param_dtype = reduce_dtype = buffer_dtype = bf16), not the stack's DEFAULT fp32",
                             "grad_op_acc_why": "fused (parasim's default, not the stack's unfused add): with SHARD_GRAD_OP "
                                                "the unsharded flat gradient of each unit is accumulated once per microbatch; "
                                                "parasim prices the unfused accumulation pass only where gradients are sharded "
                                                "per layer (sim/parallel/pipeline_lowering.cpp), and these rows were validated "
                                                "with the fused accumulation",
                             "position_embedding": "learned",
                             "pos_why": "learned positions of max_seq_len = seq_len (MPT learned_pos_emb): the NumParams column "
                                        "grows by (seq_len - 512) x d_model over the seq 512 row of the same model"},
    "torchtitan": {"flops": "model", "flash": True, "dropout": False,
                   "compiled_why": "fused: the row names torch.compile, under which the stack's eager RMSNorm, RoPE and "
                                   "F.cross_entropy(pred.float()) become Triton reductions (torchtitan's train.py "
                                   "model = torch.compile(model) with --training.compile)"},
    # Its model TFLOP/s halve the causal core attention (nemo_automodel/components/utils/flops_utils.py:
    # causal_self_attn = True in each family's formula).
    "NVIDIA NeMo AutoModel": {"flops": "model", "model_flops": "model_causal", "flash": True, "dropout": False},
    "NVIDIA NeMo": {"flops": "model", "flash": True, "dropout": False},
    "NVIDIA Megatron-Bridge": {
        "flops": "model", "flash": True, "dropout": False,
        # Its model TFLOP/s count the core attention as its causal or sliding-window mask computes it
        # (src/megatron/bridge/training/utils/flop_utils.py), not the full score matrix.
        "model_flops": "model_causal",
        # Rows whose plan is one of Megatron-Bridge's performance presets: (model, profile, tp, pp, vpp, cp, precision)
        # -> what the preset and the recipe behind it set. Other rows keep their missing fields (skipped).
        "presets": mb_presets()},
    "DeepSpeed blog": {"flops": "hardware", "flash": False, "dropout": True},
    "Zhang et al., 'OPT": {"flops": "hardware", "flash": False, "dropout": True},
}


def conventions(title):
    for k, v in SOURCE_CONVENTIONS.items():
        if title.startswith(k):
            return v
    return {}


def family(tp, pp, cp, zero, fsdp, ep=1):
    if ep > 1:
        return "EP (MoE)"
    if pp > 1 and tp > 1:
        return "3D"
    if pp > 1:
        return "PP"
    if tp > 1 or cp > 1:
        return "TP"
    return "DP/FSDP"

PREQUEL = "BigScience BLOOM"
TITAN_DEC24 = "torchtitan docs/performance.md (Dec 2024"


def bloom_prequel_setup(r, layers, pp):
    """What the BLOOM prequel's text says about a row's date: -> (stage_layers or None, why, bf16_optimizer).

    train/tr11-176B-ml/chronicles-prequel.md: before 02-27 DeepSpeed partitioned by transformer
    layers only, putting the remainder on the last stage ('78/12=6.5 - so the last stage has 1 block,
    while the rest have 7'); the 02-27 runs of 106 layers used partition_method
    'type:transformer|embed', and from 02-28 ('Rebalancing layers') every run used it ('giving each
    embedding layer its own slot on par with transformer layers', 2 + nlayers = k * PP) and the new
    BF16 optimizer, which accumulates gradients in fp32 ('additional memory usage is 4bytes x params
    and it's not sharded across gpus')."""
    date = int(r["id"].split("-")[2])
    bf16_opt = date >= 228
    if layers % pp == 0 and date < 228:  # the even split; from 02-28 the embedding slots below
        return None, None, bf16_opt
    if date >= 227 and (layers + 2) % pp == 0:
        k = (layers + 2) // pp
        return ([k - 1] + [k] * (pp - 2) + [k - 1], "type:transformer|embedding partition: each embedding takes a layer's slot "
                "on the first and last stage, (%d + 2) / %d = %d slots per stage (chronicles-prequel.md, 'Rebalancing layers')"
                % (layers, pp, k), bf16_opt)
    if date < 227:
        k = -(-layers // pp)
        split = [k] * (layers // k) + ([layers % k] if layers % k else [])
        if len(split) == pp:
            return (split, "DeepSpeed's type:transformer partition of the time: %d layers per stage, the remainder (%d) on "
                    "the last ('78/12=6.5 - so the last stage has 1 block, while the rest have 7', chronicles-prequel.md, "
                    "'Re-do')" % (k, split[-1]), bf16_opt)
    return None, None, bf16_opt


def stack_of(title, zero):
    """The framework stack (stacks/<name>.json) a source's runs ran on, or None."""
    if title.startswith("Narayanan et al., SC'21"):
        return "deepspeed-zero3@0.3" if zero == 3 else "megatron-lm@2020"
    for prefix, name in (("Megatron-LM README (Sep 2020)", "megatron-lm@2020"), ("Megatron-LM README: ", "megatron-core@0.8"),
                         (PREQUEL, "megatron-deepspeed@2022-02"), ("NVIDIA NeMo performance summary (NeMo 24.07", "nemo@24.07"),
                         ("NVIDIA Megatron-Bridge", "megatron-bridge@26.04"), ("MosaicML llm-foundry", "llm-foundry@0.0.4"),
                         (TITAN_DEC24, "torchtitan@2024-12"), ("torchtitan", "torchtitan@2024-04")):
        if title.startswith(prefix):
            return name
    return None


def stack_holds(when, scen):
    """A stack value's condition (sim/scenario/stack.h StackCondition) against a converted scenario."""
    t, par, model = scen["training"], scen["parallel"], scen["model"]
    checks = {"gpu": lambda v: any(scen["cluster"]["gpu"].startswith(g) for g in v),
              "dtype": lambda v: t.get("dtype", "bf16") in v,
              "pipeline": lambda v: v == (par.get("pp", 1) > 1), "interleaved": lambda v: v == (par.get("vpp", 1) > 1),
              "fsdp": lambda v: v == isinstance(par.get("fsdp"), dict), "zero_stage": lambda v: par.get("zero_stage", 0) in v,
              "norm": lambda v: model.get("norm") in v, "position_embedding": lambda v: model.get("position_embedding") in v}
    return all(checks[k](v) for k, v in when.items())


def use_stack(scen, name):
    """Names the stack in the scenario and drops any value the row states that the stack supplies anyway (its source is
    the stack's); what the row states otherwise stays, as the run's own override."""
    stack = json.load(open(os.path.join(ROOT, "stacks", name + ".json")))
    scen["stack"] = name
    done = set()
    for st in stack["settings"]:
        path = st["field"].split(".")
        parent = scen
        for k in path[:-1]:
            parent = parent.get(k) if isinstance(parent, dict) else None
        if st["field"] in done or not isinstance(parent, dict) or not stack_holds(st.get("when", {}), scen):
            continue
        done.add(st["field"])
        if parent.get(path[-1]) == st["value"]:
            del parent[path[-1]]


class Row:
    """A published row on its way to a measured run: its sections (m model, h hardware, p parallel, meas measured), its
    source's conventions and what the converter infers (ci: field -> why); the stages below add the rest."""

    def __init__(self, r):
        self.r, self.m, self.h, self.p, self.meas = r, r["model"], r["hardware"], r["parallel"], r["measured"]
        self.title = r["source"]["title"]
        self.conv = conventions(self.title)
        self.ci = {}


def presets_and_zoo(c):
    """The source's preset for the row's plan and, for mixture-of-experts rows, the zoo model."""
    c.prec = (c.p.get("dtype") or "").upper()
    c.preset = c.conv.get("presets", {}).get((c.m.get("name"), gpu_profile(c.h.get("gpu")), c.p.get("tp"), c.p.get("pp"), c.p.get("vpp"),
                                              c.p.get("cp") or 1, c.prec))
    c.moe_zoo, c.zoo_name = None, moe_zoo_name(c.m.get("name"))
    c.mb_moe = c.title.startswith("NVIDIA Megatron-Bridge") and c.zoo_name in MB_MOE_MODELS
    if c.title.startswith("NVIDIA NeMo AutoModel") and c.zoo_name in AM_MOE_UNMODELLED:
        return AM_MOE_UNMODELLED[c.zoo_name]
    c.am_moe = (AM_MOE.get(c.zoo_name) if c.title.startswith("NVIDIA NeMo AutoModel") and c.p.get("ep") not in (None, 1)
                and (c.p.get("pp") or 1) == 1 else None)
    if c.zoo_name and (c.mb_moe or c.am_moe or c.p.get("ep") in (None, 1)
                       or not c.title.startswith(("NVIDIA Megatron-Bridge", "NVIDIA NeMo AutoModel"))):
        c.moe_zoo = json.load(open(os.path.join(ROOT, "models", c.zoo_name + ".json")))
        c.m = dict(c.m, **{k: c.moe_zoo[k] for k in ("layers", "hidden", "heads", "kv_heads", "ffn_hidden", "vocab", "activation")})
        c.ci["model"] = "models/%s.json: %s" % (c.zoo_name, c.moe_zoo["source"])
    if c.mb_moe and gpu_profile(c.h.get("gpu")):
        c.preset = moe_preset(c.r["model"]["name"], gpu_profile(c.h.get("gpu")), c.p.get("tp") or 1, c.p.get("pp") or 1, c.p.get("vpp") or 1,
                              c.p.get("ep") or 1, precision_class(c.p.get("dtype")), c.p.get("global_batch") or 0)
        if c.preset is None:
            return "expert parallelism (MoE): no Megatron-Bridge preset for this model on this GPU is known to the converter"
        dispatcher = "/moe_dispatcher" if c.preset.get("moe_dispatcher") else ""
        c.ci["parallel.etp/recompute/sequence_parallel/zero_stage/tp_comm_overlap/ep_comm_overlap%s, training.loss_impl" % dispatcher] = \
            c.preset["why"]
    if c.preset:
        c.p = dict(c.p, recompute=c.p.get("recompute") or "none", sequence_parallel=c.p["tp"] > 1)
        if not c.moe_zoo:
            c.ci["parallel.recompute/sequence_parallel/tp_comm_overlap/zero_stage"] = c.preset["why"]


def fill_gaps(c):
    """Fields the row leaves out that its source's configs state; the ones still missing."""
    c.g3 = next((v for k, v in c.conv.get("gpt3", {}).items() if c.m.get("name", "").startswith(k)), None)
    if c.g3:
        dims = {k: c.g3[k] for k in ("layers", "hidden", "heads") if k in c.g3 and c.m.get(k) is None}
        c.m = dict(c.m, vocab=c.m.get("vocab") or 50257, **dims)
        c.p = dict(c.p, recompute=c.p.get("recompute") or c.g3["recompute"])
        c.ci["model.vocab/parallel.recompute/model.dropout/model.position_embedding"] = c.conv["gpt3_why"] % (
            c.g3["file"], "activations_checkpoint_granularity: " + ("selective" if c.g3["recompute"] == "selective" else "null"),
            "; num_layers %d, hidden_size %d, num_attention_heads %d" % (dims["layers"], dims["hidden"], dims["heads"]) if dims else "")
    if c.m.get("seq_len") is None and c.title.startswith(TITAN_DEC24) and c.m.get("name", "").startswith("Llama 3"):
        c.m = dict(c.m, seq_len=8192)
        c.ci["model.seq_len"] = ("8192: torchtitan's 64-A100 presets train_configs/llama3_8b.toml and llama3_70b.toml "
                                 "('this toml config is a preset for 64 A100 GPUs') set [training] seq_len = 8192")
    c.missing = [k for k in ("layers", "hidden", "heads", "vocab", "seq_len") if c.m.get(k) is None]
    c.missing += ["hardware." + k for k in ("gpus_total",) if c.h.get(k) is None]
    if c.p.get("micro_batch") is None and c.conv.get("mb_per_replica") and c.p.get("global_batch") and c.p.get("dp"):
        c.p = dict(c.p, micro_batch=c.p["global_batch"] // c.p["dp"])
        c.ci["parallel.micro_batch"] = c.conv["mb_per_replica"]
    c.missing += ["parallel." + k for k in ("tp", "pp", "micro_batch", "global_batch") if c.p.get(k) is None]
    if c.p.get("ep") not in (None, 1) and not c.moe_zoo:
        if c.zoo_name and c.title.startswith("NVIDIA NeMo AutoModel"):
            if (c.p.get("pp") or 1) > 1:
                return ("expert parallelism (MoE) with pipeline parallelism under FSDP2 (NeMo AutoModel's plan: "
                        "torch.distributed.pipelining over FSDP2 + EP, DeepEP's inter-node dispatch) is not modelled")
            return "expert parallelism (MoE) under FSDP2: no NeMo AutoModel benchmark config for this model is known to the converter"
        return ("expert parallelism (MoE): the model is not in the zoo (Nemotron 3 Super and Ultra: latent experts; Nemotron 3.5 "
                "Lightning: hybrid MTP layers; DeepSeek-V4's architecture; Kimi K2 under NeMo AutoModel)")


def gpu_of(c):
    """The GPU profile of the row's hardware."""
    c.prof = gpu_profile(c.h.get("gpu"))
    c.dgx2 = "dgx-2" in (c.h.get("system") or "").lower() and "v100" in (c.h.get("gpu") or "").lower()
    if c.prof is None and c.dgx2:
        c.prof = "v100-sxm3-32g"
        c.ci["cluster.gpu"] = "V100 32GB SXM3: the DGX-2 holds 16 Tesla V100 32GB (NVIDIA DGX-2 datasheet)"
    if c.prof is None:
        return "no calibration profile for GPU '%s'" % c.h.get("gpu")
    if c.prof == "a100-sxm4-80g" and not re.search(r"80 ?gb", (c.h.get("gpu") or "").lower()) and dated_before_a100_80gb(c.title):
        c.prof = "a100-sxm4-40g"
        c.ci["cluster.gpu"] = ("A100 40GB: the row names an A100 without its memory and its source predates the 80GB part "
                               "(NVIDIA announced the A100 80GB and the DGX A100 640GB on 2020-11-16, press release 'NVIDIA "
                               "Doubles Down: Announces A100 80GB GPU'); the DGX A100 shipped before then held 8 A100 40GB")


def precision_and_recompute(c):
    """The training dtype and the recompute policy."""
    c.dtype = dtype_of(c.p.get("dtype"))
    if c.p.get("dtype") and c.dtype is None:
        return "precision '%s' is not modelled" % c.p.get("dtype")
    if c.dtype is None and c.title.startswith(PREQUEL):
        # The prequel's 'Rebalancing layers' (02-28): "from now on the testing is happening with BF16
        # optimizer ... this is compared to fp16 which grad accumulates in fp16".
        early = int(c.r["id"].split("-")[2]) < 228
        c.dtype = "fp16" if early else "bf16"
        c.ci["parallel.dtype"] = ("fp16: the prequel's runs before 02-28 accumulated gradients in fp16 ('compared to fp16 which "
                                  "grad accumulates in fp16', 'Rebalancing layers')" if early else
                                  "bf16 with DeepSpeed's new BF16 optimizer ('from now on the testing is happening with BF16 "
                                  "optimizer', 'Rebalancing layers', 02-28)")
    elif c.dtype is None and "dtype" in c.conv:
        c.dtype = c.conv["dtype"]
        c.ci["parallel.dtype"] = c.conv["dtype_why"]
    c.rec = recompute_of(c.p.get("recompute"))
    c.rec_layers = None
    rlow = (c.p.get("recompute") or "").lower()
    if c.title.startswith("torchtitan") and (rlow.startswith("selective op") or "per-op sac" in rlow):
        c.rec = "selective_op"
        c.ci["parallel.recompute"] = ("selective_op: torchtitan's op-level selective AC saves the outputs of matmuls, fused "
                                      "attention and reduce-scatter 'except every second mm' and replays the rest "
                                      "(torchtitan activation-checkpoint policy, _custom_policy / no_recompute_list)")
    if (c.p.get("recompute") or "").lower() == "selective layer" and c.title.startswith("torchtitan") and c.m.get("layers"):
        # torchtitan's layer-level selective AC checkpoints every selective_ac_option-th layer,
        # default "2": half of the layers replay their forward, the rest keep their activations.
        c.rec = "full"
        c.rec_layers = (c.m["layers"] + 1) // 2
        c.ci["parallel.recompute"] = ("full recompute of every 2nd layer (parallel.recompute_num_layers = %d): torchtitan's "
                                      "'selective layer' AC with its default --activation_checkpoint.selective_ac_option \"2\" "
                                      "('for every nth layer', torchtitan/config_manager.py)" % c.rec_layers)
    if c.rec is None and c.am_moe:
        c.rec = "full"
    if c.rec is None and "recompute" in c.conv:
        c.rec = c.conv["recompute"]
        c.ci["parallel.recompute"] = c.conv["why"]
    if c.rec == "unsupported":
        return "recompute '%s' (torchtitan selective activation checkpointing) is not Megatron's selective recompute; not modelled" % c.p.get("recompute")
    if c.rec is None:
        c.missing.append("parallel.recompute")
    if c.dtype is None:
        c.missing.append("parallel.dtype")
    if c.missing:
        return "missing " + ", ".join(c.missing)


def layout(c):
    """The plan's degrees, batch, sharding and node size."""
    c.gpus = c.h["gpus_total"]
    c.tp, c.pp = c.p["tp"], c.p["pp"]
    c.cp = c.p.get("cp") or 1
    c.dp = c.p.get("dp") or c.gpus // (c.tp * c.pp * c.cp)
    if c.tp * c.pp * c.cp * c.dp != c.gpus:
        return "tp*pp*cp*dp = %d != gpus %d" % (c.tp * c.pp * c.cp * c.dp, c.gpus)
    c.mb, c.gbs = c.p["micro_batch"], c.p["global_batch"]
    if c.gbs % (c.mb * c.dp) != 0:
        return "global_batch %d not divisible by micro_batch*dp = %d (the source runs a ragged last microbatch)" % (c.gbs, c.mb * c.dp)
    try:
        c.zero, c.fsdp = sharding_of(c.p.get("zero_stage_or_fsdp"), c.gpus, c.tp, c.pp)
    except ValueError as e:
        return str(e)
    if c.p.get("zero_stage_or_fsdp") is None and c.conv.get("zero_default") and c.dp > 1:
        c.zero = c.conv["zero_default"]
        c.ci["parallel.zero_stage"] = c.conv["zero_default_why"]
    if c.preset and c.dp > 1 and c.zero == 0 and c.fsdp is None:
        c.zero = 1  # the recipe's distributed optimizer
    c.gpn = c.h.get("gpus_per_node")
    if c.gpn is None and c.dgx2:
        c.gpn = 16
        c.ci["cluster.gpus_per_node"] = "16 GPUs per node (DGX-2: 16 V100 on NVSwitch)"
    if c.gpn is None and c.prof in NVL72:
        c.gpn = max(d for d in range(1, 73) if c.gpus % d == 0)
        c.ci["cluster.gpus_per_node"] = NVL72_WHY % (c.gpn, c.gpus)
    elif c.gpn is None:
        c.gpn = 8
        c.ci["cluster.gpus_per_node"] = "8 GPUs per node (DGX/HGX-class servers of the GPU named)"
    if c.gpus % c.gpn != 0:
        if c.gpus < c.gpn:
            c.gpn = c.gpus
        else:
            return "gpus %d not a multiple of gpus_per_node %d" % (c.gpus, c.gpn)


def model_dims(c):
    """The model's activation, attention heads, FFN width and layer count."""
    act = (c.m.get("activation") or "").lower()
    c.swiglu = "swiglu" in act
    if not c.m.get("activation"):
        c.ci["model.activation"] = "GeLU (GPT-style model; no activation stated)"
    c.kv = c.m.get("kv_heads")
    if c.kv is None:
        c.kv = c.m["heads"]
        c.ci["model.kv_heads"] = "multi-head attention (kv_heads = heads; GPT-style model)"
    c.ffn = c.m.get("ffn_hidden")
    if c.ffn is None:
        c.ffn = 4 * c.m["hidden"]
        c.ci["model.ffn_hidden"] = "4*hidden (GPT convention)"
    c.layers = c.m["layers"]
    c.vpp = c.p.get("vpp") or 1


def stage_split(c):
    """Layers per pipeline stage where the source does not split them evenly."""
    c.stage_layers, c.bf16_optimizer = None, False
    if c.title.startswith(PREQUEL) and c.pp > 1:
        c.stage_layers, split_why, c.bf16_optimizer = bloom_prequel_setup(c.r, c.layers, c.pp)
        if c.stage_layers:
            c.ci["parallel.stage_layers"] = split_why
    if c.preset and c.preset.get("account_split") and c.pp > 1:
        # Megatron's account_for_embedding_in_pipeline_split / account_for_loss_in_pipeline_split: the embedding and
        # the loss each take a layer's slot, on the first and the last virtual stage.
        if (c.layers + 2) % (c.pp * c.vpp) != 0:
            return "layers + 2 (embedding and loss slots) not divisible by pp*vpp = %d" % (c.pp * c.vpp)
        k = (c.layers + 2) // (c.pp * c.vpp)
        c.stage_layers = [k - 1] + [k] * (c.pp * c.vpp - 2) + [k - 1]
        if c.vpp == 1:
            c.stage_layers = [k - 1] + [k] * (c.pp - 2) + [k - 1]
        c.ci["parallel.stage_layers"] = ("the recipe's account_for_embedding_in_pipeline_split and "
                                         "account_for_loss_in_pipeline_split: (%d layers + 2) / (pp %d x vp %d) = %d slots per "
                                         "virtual stage, the first and the last one layer short" % (c.layers, c.pp, c.vpp, k))
    if c.preset and c.preset.get("stage_layers"):
        c.stage_layers = c.preset["stage_layers"]
        c.ci["parallel.stage_layers"] = "the recipe's pipeline layout (see the preset above)"
    if c.layers % (c.pp * c.vpp) != 0 and not c.stage_layers:
        return "layers %d not divisible by pp*vpp = %d and no per-stage split given" % (c.layers, c.pp * c.vpp)
    if c.m["heads"] % c.tp or (c.ffn % c.tp and not c.moe_zoo) or (c.kv % c.tp and c.tp % c.kv):
        return "heads/ffn not divisible by tp"


def model_section(c):
    """The scenario's model."""
    c.model = {"name": c.m["name"], "layers": c.layers, "hidden": c.m["hidden"], "heads": c.m["heads"], "kv_heads": c.kv,
               "ffn_hidden": c.ffn, "vocab": c.m["vocab"], "activation": "swiglu" if c.swiglu else "gelu",
               "tied_embeddings": not c.swiglu, "position_embedding": "rope", "norm": "rmsnorm" if c.swiglu else "layernorm",
               "bias": not c.swiglu, "dropout": bool(c.conv.get("dropout", False))}
    if c.moe_zoo:
        c.model = {k: v for k, v in c.moe_zoo.items() if k not in ("schema", "published_params", "published_params_rounding", "source")}
        c.model["name"] = c.m["name"]
    elif c.g3:
        c.model.update(dropout=True, position_embedding="learned", max_positions=2048)
    elif c.conv.get("position_embedding") == "learned":
        c.model["position_embedding"] = "learned"
        c.model["max_positions"] = c.conv.get("max_positions", c.m["seq_len"])
        c.ci["model.position_embedding"] = c.conv["pos_why"]
    elif c.conv.get("position_embedding") == "alibi" and not c.swiglu:
        c.model["position_embedding"] = "alibi"
        c.ci["model.position_embedding"] = c.conv["pos_why"]
    else:
        c.ci["model.position_embedding"] = "rope/alibi-like (no position parameters counted)"


def parallel_section(c):
    """The scenario's parallel section: the plan."""
    if c.pp > 1:
        c.schedule = "interleaved" if c.vpp > 1 else "1f1b"
        if c.p.get("pp_schedule") is None:
            c.ci["parallel.schedule"] = c.schedule + " (the framework's default pipeline schedule)"
    else:
        c.schedule = "ddp"
    c.par = {"dp": c.dp, "tp": c.tp, "pp": c.pp, "vpp": c.vpp, "cp": c.cp, "schedule": c.schedule,
             "sequence_parallel": bool(c.p.get("sequence_parallel")), "recompute": c.rec, "zero_stage": c.zero, "fsdp": c.fsdp}


def moe_parallel(c):
    """Expert parallelism: the preset's or the row's."""
    if c.moe_zoo and c.mb_moe:
        c.par.update(ep=c.p["ep"], etp=1, zero_stage=1 if c.dp > 1 else 0)
        if c.preset["ep_comm_overlap"]:
            c.par["ep_comm_overlap"] = True
        if c.preset.get("moe_dispatcher"):
            c.par["moe_dispatcher"] = c.preset["moe_dispatcher"]
        if c.preset.get("recompute_modules"):
            c.par.update(recompute="selective", recompute_modules=c.preset["recompute_modules"])
        elif "recompute_modules" in c.preset:
            c.par["recompute"] = "none"
    elif c.moe_zoo and c.am_moe:
        c.par["ep"] = c.p["ep"]
        if c.fsdp is None or c.fsdp.get("sharding") != "full":
            return "NeMo AutoModel MoE row without FSDP2 sharding"
        c.par["fsdp"] = dict(c.fsdp, reduce_dtype="fp32")
        dense = 1 - c.moe_zoo["moe"]["experts"] * 3 * c.moe_zoo["hidden"] * c.moe_zoo["moe"]["expert_ffn_hidden"] / layer_params_of(c.moe_zoo)
        c.ci["parallel.recompute/fsdp/ep, training.attention_kernel/optimizer_impl/loss_impl"] = c.am_moe % ("%.1f%%" % (100 * dense))
    elif c.moe_zoo:
        # Other sources: the row's expert parallelism; experts split like the dense layers (Megatron-Core's default
        # expert_tensor_parallel_size = tp) unless the row's notes say otherwise.
        c.par["ep"] = c.p.get("ep") or 1
        if c.fsdp is not None or c.zero >= 2:
            return ("mixture of experts with ZeRO-2/3 is not modelled, nor is FSDP with experts where the converter knows "
                    "no plan for the source (FSDP over MoE converts from NeMo AutoModel's benchmark configs)")


def parallel_options(c):
    """What the plan adds: stage split, recompute layers, FSDP precision, overlaps."""
    if c.preset and c.preset.get("parallel"):
        c.par.update(c.preset["parallel"])
    if c.stage_layers:
        c.par["stage_layers"] = c.stage_layers
    if c.rec_layers is not None:
        c.par["recompute_num_layers"] = c.rec_layers
    if c.conv.get("pure_mp_reduce_dtype") and c.fsdp is not None and "mixed_precision=PURE" in str(c.p.get("dtype")):
        c.par["fsdp"] = dict(c.par["fsdp"], reduce_dtype=c.conv["pure_mp_reduce_dtype"])
        c.ci["parallel.fsdp.reduce_dtype"] = c.conv["pure_mp_why"]
    if c.p.get("sequence_parallel") is None and c.tp > 1 and c.conv.get("sequence_parallel"):
        c.par["sequence_parallel"] = True
        c.ci["parallel.sequence_parallel"] = c.conv["sp_why"]
    elif c.p.get("sequence_parallel") is None and c.tp > 1:
        c.ci["parallel.sequence_parallel"] = "false (not stated)"
    if c.g3 and c.g3.get("tp_comm_overlap") is False and c.tp > 1:
        c.ci["parallel.tp_comm_overlap"] = c.conv["tp_overlap_off_why"] % c.g3["file"]
    elif (c.conv.get("tp_comm_overlap") or c.preset) and c.tp > 1 and (c.preset or {}).get("tp_comm_overlap", True):
        c.par["tp_comm_overlap"] = True
        if not c.preset:
            c.ci["parallel.tp_comm_overlap"] = c.conv["tp_overlap_why"]
    if c.schedule == "interleaved" and (c.gbs // (c.mb * c.dp)) % c.pp != 0:
        return "interleaved schedule needs microbatches divisible by pp"


def training_section(c):
    """The scenario's training section: batch, dtype and what the row or its preset state."""
    c.training = {"global_batch": c.gbs, "micro_batch": c.mb, "seq_len": c.m["seq_len"], "dtype": c.dtype, "optimizer": "adam",
                  "flash_attention": bool(c.conv.get("flash", True))}
    if c.conv.get("kernel_why_default_mp") and "DEFAULT" in str(c.p.get("dtype")):
        c.ci["training.attention_kernel"] = c.conv["kernel_why_default_mp"]
    if c.dtype == "fp8":
        recipe = fp8_recipe_of(c.p.get("dtype"))
        if recipe:
            c.training["fp8_recipe"] = recipe
        if recipe == "mxfp8" and not c.prof.startswith(("b200", "b300", "gb200", "gb300")):
            return "MXFP8 on a GPU without block-scaled FP8 tensor cores (%s)" % c.prof
    if c.conv.get("compiled_why") and "compile" in ((c.p.get("other") or "") + " " + (c.r.get("notes") or "")).lower():
        c.training.update(norm_impl="fused", rope_impl="fused", loss_impl="fused")
        c.ci["training.norm_impl/rope_impl/loss_impl"] = c.conv["compiled_why"]
    if c.preset and c.preset.get("mtp_layers"):
        c.training["mtp_layers"] = c.preset["mtp_layers"]
    if c.preset and c.preset.get("loss_impl"):
        c.training["loss_impl"] = c.preset["loss_impl"]
    if c.preset and c.preset.get("cuda_graph_scope"):
        c.training.update(cuda_graph_impl="transformer_engine", cuda_graph_scope=c.preset["cuda_graph_scope"])
    if c.bf16_optimizer and c.zero == 1:
        c.par["zero_impl"] = "deepspeed-bf16"
        c.ci["parallel.zero_impl"] = ("deepspeed-bf16: DeepSpeed's BF16 optimizer accumulates gradients in fp32, 'additional memory "
                                      "usage is 4bytes x params and it's not sharded across gpus' (chronicles-prequel.md, "
                                      "'Rebalancing layers', 02-28); its ZeRO-1 step reads fp32 partitions of that buffer")
    if c.am_moe:
        c.training.update(attention_kernel="cudnn", optimizer_impl="unfused", loss_impl="eager16", moe_expert_load=1.0)
    if c.conv.get("grad_op_acc_why") and (c.fsdp or {}).get("sharding") == "grad_op":
        c.training["grad_accumulation_fusion"] = True
        c.ci["training.grad_accumulation_fusion"] = c.conv["grad_op_acc_why"]


def cluster_section(c):
    """The scenario's cluster, the scenario itself and its stack."""
    c.cluster = {"gpu": c.prof, "nodes": c.gpus // c.gpn, "gpus_per_node": c.gpn}
    net, why = network_of(c.h)
    if net:
        c.cluster["inter_node"] = net
        c.ci["cluster.inter_node"] = why
    elif c.prof in NVL72:
        c.cluster["inter_node"] = {"nics_per_node": c.gpn}
        if c.gpus > c.gpn:
            c.ci["cluster.inter_node"] = "one NIC per GPU, the profile's line rate (NVL72 datasheet)"
    elif c.gpus > c.gpn:
        c.ci["cluster.inter_node"] = "the GPU profile's reference node network (DGX datasheet)"
    graphs = MB_CUDA_GRAPHS.get(c.r["id"])
    if graphs:
        c.training.update({k: v for k, v in graphs.items() if k != "why"})
        c.ci["training.cuda_graph_impl/cuda_graph_scope"] = graphs["why"]
    c.scen = {"schema": "parasim.scenario/1", "name": c.r["id"], "model": c.model,
              "cluster": c.cluster, "training": c.training, "parallel": c.par}
    stack = stack_of(c.title, c.zero)
    if stack:
        use_stack(c.scen, stack)


def measured_section(c):
    """The measured figures the run is scored on."""
    c.out_meas = {}
    if "step_time_s" in c.meas:
        c.out_meas["step_time_s"] = c.meas["step_time_s"]
    if "tokens_per_s_per_gpu" in c.meas:
        c.out_meas["tokens_per_s_per_gpu"] = c.meas["tokens_per_s_per_gpu"]
    if "model_tflops_per_gpu" in c.meas:
        c.out_meas["tflops_per_gpu"] = {"value": c.meas["model_tflops_per_gpu"], "flops": c.conv.get("model_flops", "model")}
    elif "tflops_per_gpu" in c.meas:
        c.out_meas["tflops_per_gpu"] = {"value": c.meas["tflops_per_gpu"], "flops": c.conv.get("flops", "model")}
    elif "tflops_per_gpu_approx" in c.meas:
        c.out_meas["tflops_per_gpu"] = {"value": c.meas["tflops_per_gpu_approx"], "flops": c.conv.get("flops", "model")}
    if "mfu" in c.meas:
        c.out_meas["mfu"] = c.meas["mfu"]
    if "peak_mem_gib" in c.meas:
        c.out_meas["peak_mem_gib"] = {"value": c.meas["peak_mem_gib"], "read": "framework"}
    if c.meas.get("peak_mem_gb_nvidia_smi") is not None:  # some rows print "GB" without a figure
        c.out_meas["peak_mem_gib"] = {"value": c.meas["peak_mem_gb_nvidia_smi"] * 1e9 / 2**30, "read": "nvidia-smi"}
    if c.meas.get("oom"):
        c.out_meas["oom"] = True
    if not c.out_meas:
        return "no comparable measured figure"


def measured_run(c):
    """The parasim.measured/1 file of a converted row."""
    run = {"schema": "parasim.measured/1", "id": c.r["id"], "scenario": c.scen, "measured": c.out_meas,
           "source": c.r["source"], "hardware_note": "; ".join(str(x) for x in (c.h.get("gpu"), c.h.get("system"), c.h.get("intra_node"), c.h.get("inter_node")) if x),
           "confidence": (c.r.get("confidence") or "").split(" ")[0] or None, "family": family(c.tp, c.pp, c.cp, c.zero, c.fsdp, c.par.get("ep", 1)),
           "inferred_fields": c.r.get("inferred_fields", {}), "conversion_inferred": c.ci}
    if c.r.get("notes"):
        run["notes"] = c.r["notes"]


    return run


# In order: each returns the reason a row is skipped, or None.
STAGES = (presets_and_zoo,
          fill_gaps,
          gpu_of,
          precision_and_recompute,
          layout,
          model_dims,
          stage_split,
          model_section,
          parallel_section,
          moe_parallel,
          parallel_options,
          training_section,
          cluster_section,
          measured_section)


def convert(r):
    """-> (measured-run dict, None) or (None, reason)."""
    c = Row(r)
    for stage in STAGES:
        why = stage(c)
        if why:
            return None, why
    return measured_run(c), None



def main():
    rows = json.load(open(SRC))
    os.makedirs(OUT, exist_ok=True)
    for f in os.listdir(OUT):
        if f.endswith(".json") and f.startswith("pub-"):
            os.remove(os.path.join(OUT, f))
    skipped = defaultdict(list)
    n = 0
    for r in rows:
        run, why = convert(r)
        if run is None:
            skipped[r["source"]["title"]].append((r["id"], why))
            continue
        path = os.path.join(OUT, "pub-" + re.sub(r"[^A-Za-z0-9._-]", "_", r["id"]) + ".json")
        with open(path, "w") as f:
            json.dump(run, f, indent=1)
            f.write("\n")
        n += 1
    with open(os.path.join(OUT, "SKIPPED.md"), "w") as f:
        f.write("# Published rows not converted\n\nGenerated by `python3 tools/data/convert_published.py`; %d of %d rows "
                "converted, %d skipped. Each skipped row names what is missing or not modelled.\n\n" % (n, len(rows), len(rows) - n))
        reasons = Counter(why.split(" '")[0] if why.startswith("no calibration") else why for v in skipped.values() for _, why in v)
        f.write("## By reason\n\n| rows | reason |\n|---|---|\n")
        for why, c in reasons.most_common():
            f.write("| %d | %s |\n" % (c, why))
        for title, items in skipped.items():
            f.write("\n## %s\n\n" % title)
            for i, why in items:
                f.write("- `%s`: %s\n" % (i, why))
    with open(os.path.join(OUT, "skipped.json"), "w") as f:
        json.dump({"total": len(rows), "converted": n, "skipped": len(rows) - n, "by_reason": dict(reasons.most_common()),
                   "rows": {t: [{"id": i, "reason": w} for i, w in v] for t, v in skipped.items()}}, f, indent=1)
        f.write("\n")
    print("converted %d, skipped %d" % (n, len(rows) - n))


if __name__ == "__main__":
    main()
