// Megatron-LM / NeMo command lines (megatron/training/arguments.py names) -> a scenario naming
// megatron-core@0.8 (or --stack). Each option maps to one scenario field; options with no effect
// on a training step's time or memory (data, checkpoints, learning rate, logging) are skipped and
// counted; the rest are reported by name.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <map>
#include <set>

#include "models/recompute.h"
#include "sim/scenario/choices.h"
#include "tools/import/framework_config.h"

namespace parasim {

namespace {

struct Args {
  Json& sc;
  std::vector<std::string>& notes;
  Json& t() { return sc["training"]; }
  Json& p() { return sc["parallel"]; }
  Json& m() { return sc["model"]; }
};
using ArgHandler = std::function<void(Args&, const std::string&)>;
using MultiHandler = std::function<void(Args&, const std::vector<std::string>&)>;

// Each of `values` one of `names`, or a ConfigError naming the option and what it takes.
void check_names(const std::string& opt, const std::vector<std::string>& values, const std::vector<std::string>& names) {
  for (const std::string& v : values)
    if (std::find(names.begin(), names.end(), v) == names.end()) {
      std::string all;
      for (const std::string& n : names) all += (all.empty() ? "" : ", ") + n;
      throw ConfigError(opt + ": \"" + v + "\" is not modelled (" + all + ")");
    }
}

// Options that take a list (argparse nargs='*': the words up to the next option).
const std::map<std::string, MultiHandler>& multi_valued() {
  static const std::map<std::string, MultiHandler> h = {
      // Kept aside: Megatron reads them only with --recompute-granularity selective and only with
      // --cuda-graph-impl (finish_cuda_graphs_and_recompute).
      {"recompute-modules",
       [](Args& a, const std::vector<std::string>& v) {
         check_names("--recompute-modules", v, recompute_module_names());
         a.sc["_recompute_modules"] = v;
       }},
      {"cuda-graph-scope",
       [](Args& a, const std::vector<std::string>& v) {
         if (v.empty()) throw ConfigError("--cuda-graph-scope: expected one or more scopes (Megatron's nargs='+')");
         a.sc["_cuda_graph_scope"] = v;
       }},
  };
  return h;
}

std::int64_t to_int(const std::string& opt, const std::string& v) {
  try {
    size_t used = 0;
    const long long x = std::stoll(v, &used);
    if (used == v.size()) return x;
  } catch (const std::exception&) {
  }
  throw ConfigError(opt + ": expected an integer, got \"" + v + "\"");
}

double to_number(const std::string& opt, const std::string& v) {
  try {
    size_t used = 0;
    const double x = std::stod(v, &used);
    if (used == v.size() && std::isfinite(x)) return x;
  } catch (const std::exception&) {
  }
  throw ConfigError(opt + ": expected a number, got \"" + v + "\"");
}

// A hybrid model's layer pattern; its pipeline-stage boundaries ('|', flexible virtual pipeline
// stages) and MTP patterns ('/') are not modelled.
void set_hybrid_pattern(Args& a, const std::string& opt, const std::string& v) {
  if (v.find_first_of("|/") != std::string::npos)
    throw ConfigError(opt + ": \"" + v + "\": pipeline-stage boundaries ('|') and MTP patterns ('/') in the pattern are not modelled");
  a.m()["hybrid_pattern"] = v;
}

ArgHandler set_int(const char* section, const char* key) {
  return [=](Args& a, const std::string& v) { a.sc[section][key] = to_int(std::string("--") + key, v); };
}
ArgHandler set_bool(const char* section, const char* key, bool value) {
  return [=](Args& a, const std::string&) { a.sc[section][key] = value; };
}

// Options that take a value (the others are flags).
const std::map<std::string, ArgHandler>& valued() {
  static const std::map<std::string, ArgHandler> h = {
      {"num-layers", set_int("model", "layers")},
      {"hidden-size", set_int("model", "hidden")},
      {"num-attention-heads", set_int("model", "heads")},
      {"num-query-groups", set_int("model", "kv_heads")},
      {"ffn-hidden-size", set_int("model", "ffn_hidden")},
      {"kv-channels", set_int("model", "head_dim")},
      {"vocab-size", set_int("model", "vocab")},
      {"max-position-embeddings", set_int("model", "max_positions")},
      {"seq-length", set_int("training", "seq_len")},
      {"micro-batch-size", set_int("training", "micro_batch")},
      {"global-batch-size", set_int("training", "global_batch")},
      {"make-vocab-size-divisible-by", set_int("training", "make_vocab_size_divisible_by")},
      {"tensor-model-parallel-size", set_int("parallel", "tp")},
      {"pipeline-model-parallel-size", set_int("parallel", "pp")},
      {"virtual-pipeline-model-parallel-size", set_int("parallel", "vpp")},
      {"context-parallel-size", set_int("parallel", "cp")},
      {"expert-model-parallel-size", set_int("parallel", "ep")},
      {"expert-tensor-parallel-size", set_int("parallel", "etp")},
      {"recompute-num-layers", set_int("parallel", "recompute_num_layers")},
      {"num-layers-per-virtual-pipeline-stage",
       [](Args& a, const std::string& v) { a.sc["_layers_per_virtual_stage"] = to_int("--num-layers-per-virtual-pipeline-stage", v); }},
      {"nnodes", set_int("cluster", "nodes")},
      {"nproc_per_node", set_int("cluster", "gpus_per_node")},
      {"nproc-per-node", set_int("cluster", "gpus_per_node")},
      {"num-experts", [](Args& a, const std::string& v) { a.m()["moe"]["experts"] = to_int("--num-experts", v); }},
      {"moe-router-topk", [](Args& a, const std::string& v) { a.m()["moe"]["top_k"] = to_int("--moe-router-topk", v); }},
      // Megatron-Core's token dispatchers (megatron/training/arguments.py: --moe-token-dispatcher-type
      // allgather | alltoall | flex, --moe-flex-dispatcher-backend deepep (default) | hybridep).
      {"moe-token-dispatcher-type",
       [](Args& a, const std::string& v) {
         check_names("--moe-token-dispatcher-type", {v}, {"alltoall", "flex"});
         a.sc["_moe_flex"] = v == "flex";
       }},
      {"moe-flex-dispatcher-backend",
       [](Args& a, const std::string& v) {
         check_names("--moe-flex-dispatcher-backend", {v}, {"deepep", "hybridep"});
         a.sc["_moe_flex_backend"] = v;
       }},
      // Token dropping (megatron/core/transformer/moe/moe_utils.py apply_router_token_dropping); a
      // negative factor is Megatron's "none" (transformer_config.py).
      {"moe-expert-capacity-factor",
       [](Args& a, const std::string& v) {
         const double f = to_number("--moe-expert-capacity-factor", v);
         if (f == 0) throw ConfigError("--moe-expert-capacity-factor: 0 keeps no token for any expert (a negative factor is Megatron's none)");
         if (f > 0) a.t()["moe_capacity_factor"] = f;
       }},
      {"moe-ffn-hidden-size", [](Args& a, const std::string& v) { a.m()["moe"]["expert_ffn_hidden"] = to_int("--moe-ffn-hidden-size", v); }},
      // Layer placements, resolved against the layer count (finish_layer_patterns).
      {"moe-layer-freq", [](Args& a, const std::string& v) { a.sc["_moe_layer_freq"] = v; }},
      {"window-size", [](Args& a, const std::string& v) { a.sc["_window_size"] = v; }},
      {"window-attn-skip-freq", [](Args& a, const std::string& v) { a.sc["_window_skip_freq"] = v; }},
      {"moe-shared-expert-intermediate-size",
       [](Args& a, const std::string& v) { a.m()["moe"]["shared_expert_ffn_hidden"] = to_int("--moe-shared-expert-intermediate-size", v); }},
      // Hybrid models (megatron/training/arguments.py: --hybrid-layer-pattern, and its deprecated
      // name --hybrid-override-pattern; the Mamba-2 mixer's --mamba-* sizes).
      {"hybrid-layer-pattern", [](Args& a, const std::string& v) { set_hybrid_pattern(a, "--hybrid-layer-pattern", v); }},
      {"hybrid-override-pattern", [](Args& a, const std::string& v) { set_hybrid_pattern(a, "--hybrid-override-pattern", v); }},
      // With --cross-entropy-loss-fusion: "te" Transformer Engine's one-kernel loss (fused), "native"
      // Megatron-Core's jit-fused passes over the 16-bit logits (fused_cross_entropy.py; eager16).
      {"cross-entropy-fusion-impl",
       [](Args& a, const std::string& v) {
         check_names("--cross-entropy-fusion-impl", {v}, {"te", "native"});
         a.sc["_ce_impl"] = v;
       }},
      // Megatron-Core's CUDA graphs (megatron/training/arguments.py): none (default), local or
      // transformer_engine; resolved with --cuda-graph-scope in finish_cuda_graphs_and_recompute.
      {"cuda-graph-impl",
       [](Args& a, const std::string& v) {
         check_names("--cuda-graph-impl", {v}, {"none", "local", "transformer_engine"});
         a.sc["_cuda_graph_impl"] = v;
       }},
      {"mamba-num-heads", [](Args& a, const std::string& v) { a.m()["mamba"]["heads"] = to_int("--mamba-num-heads", v); }},
      {"mamba-head-dim", [](Args& a, const std::string& v) { a.m()["mamba"]["head_dim"] = to_int("--mamba-head-dim", v); }},
      {"mamba-state-dim", [](Args& a, const std::string& v) { a.m()["mamba"]["state"] = to_int("--mamba-state-dim", v); }},
      {"mamba-num-groups", [](Args& a, const std::string& v) { a.m()["mamba"]["groups"] = to_int("--mamba-num-groups", v); }},
      {"position-embedding-type",
       [](Args& a, const std::string& v) {
         if (v != "rope" && v != "yarn" && v != "learned_absolute" && v != "none")
           throw ConfigError("--position-embedding-type: \"" + v + "\" is not modelled (rope, yarn, learned_absolute, none)");
         a.m()["position_embedding"] = v == "learned_absolute" ? name_of(PositionEmbedding::Learned) : v == "yarn" ? "rope" : v;
         if (v == "yarn") a.m()["rope_scaling"] = "yarn";  // YaRN-scaled RoPE tables (yarn_rotary_pos_embedding.py)
       }},
      {"hidden-dropout", [](Args& a, const std::string& v) { a.sc["_dropout"]["hidden"] = to_number("--hidden-dropout", v) > 0; }},
      {"attention-dropout", [](Args& a, const std::string& v) { a.sc["_dropout"]["attention"] = to_number("--attention-dropout", v) > 0; }},
      {"normalization", [](Args& a, const std::string& v) { a.m()["norm"] = name_of(v == "RMSNorm" ? NormKind::RmsNorm : NormKind::LayerNorm); }},
      {"recompute-granularity", [](Args& a, const std::string& v) { a.p()["recompute"] = v; }},
      {"recompute-method",
       [](Args& a, const std::string& v) {
         if (v != "block") a.notes.push_back("--recompute-method " + v + ": modelled as every layer recomputed");
       }},
      {"attention-backend",
       [](Args& a, const std::string& v) {
         if (v == "flash") a.t()["attention_kernel"] = "flash";
         else if (v == "fused") a.t()["attention_kernel"] = "cudnn";
         else if (v == "unfused" || v == "local") a.t()["flash_attention"] = false;
         // auto: Transformer Engine's choice, the stack's
       }},
      {"fp8-format", [](Args& a, const std::string&) { a.t()["dtype"] = name_of(Dtype::Fp8); }},
      {"fp8-recipe",
       [](Args& a, const std::string& v) {
         const std::map<std::string, Fp8Recipe> r = {{"delayed", Fp8Recipe::Delayed}, {"tensorwise", Fp8Recipe::Current}, {"mxfp8", Fp8Recipe::Mxfp8}};
         if (!r.count(v)) throw ConfigError("--fp8-recipe: \"" + v + "\" is not modelled (delayed, tensorwise, mxfp8)");
         a.t()["fp8_recipe"] = name_of(r.at(v));
       }},
  };
  return h;
}

const std::map<std::string, ArgHandler>& flags() {
  static const std::map<std::string, ArgHandler> h = {
      {"bf16", [](Args& a, const std::string&) { if (!a.t().contains("dtype")) a.t()["dtype"] = name_of(Dtype::Bf16); }},
      {"fp16", [](Args& a, const std::string&) { if (!a.t().contains("dtype")) a.t()["dtype"] = name_of(Dtype::Fp16); }},
      {"swiglu", [](Args& a, const std::string&) { a.m()["activation"] = name_of(Activation::SwiGlu); }},
      {"squared-relu", [](Args& a, const std::string&) { a.m()["activation"] = name_of(Activation::SquaredRelu); }},
      {"untie-embeddings-and-output-weights", set_bool("model", "tied_embeddings", false)},
      {"disable-bias-linear", set_bool("model", "bias", false)},
      {"group-query-attention", [](Args&, const std::string&) {}},
      {"use-rotary-position-embeddings", [](Args& a, const std::string&) { a.m()["position_embedding"] = name_of(PositionEmbedding::Rope); }},
      {"sequence-parallel", set_bool("parallel", "sequence_parallel", true)},
      {"moe-pad-expert-input-to-capacity", set_bool("training", "moe_pad_to_capacity", true)},
      // Random routing (router.py apply_random_logits): parasim's default, training.moe_expert_load unset.
      {"moe-router-force-load-balancing", [](Args& a, const std::string&) { a.sc["_moe_forced"] = true; }},
      {"use-distributed-optimizer", [](Args& a, const std::string&) { a.p()["zero_stage"] = 1; }},
      {"overlap-grad-reduce", set_bool("parallel", "overlap_grad_reduce", true)},
      {"tp-comm-overlap", set_bool("parallel", "tp_comm_overlap", true)},
      {"overlap-moe-expert-parallel-comm", set_bool("parallel", "ep_comm_overlap", true)},
      {"recompute-activations", [](Args& a, const std::string&) { a.p()["recompute"] = "selective"; }},
      {"no-gradient-accumulation-fusion", set_bool("training", "grad_accumulation_fusion", false)},
      {"accumulate-allreduce-grads-in-fp32", set_bool("training", "fp32_grad_accumulation", true)},
      {"cross-entropy-loss-fusion", [](Args& a, const std::string&) { a.t()["loss_impl"] = "fused"; }},
      {"no-overlap-p2p-communication", set_bool("parallel", "p2p_sync", true)},
      {"overlap-p2p-communication", set_bool("parallel", "p2p_sync", false)},
      {"use-flash-attn", [](Args& a, const std::string&) { a.t()["attention_kernel"] = "flash"; }},
      // The legacy models' attention checkpoints only its unfused core (legacy/model/transformer.py
      // ParallelAttention: `if not self.use_flash_attn`), so selective recompute replays no flash kernel.
      {"use-legacy-models", set_bool("parallel", "recompute_fused_attention", false)},
  };
  return h;
}

// Options that set nothing a training step's time or memory depends on.
const std::set<std::string>& megatron_no_effect() {
  static const std::set<std::string> s = {
      "lr", "min-lr", "lr-decay-style", "lr-warmup-iters", "lr-warmup-fraction", "lr-decay-iters", "lr-decay-samples", "weight-decay",
      "clip-grad", "adam-beta1", "adam-beta2", "adam-eps", "init-method-std", "seed", "train-iters", "train-samples", "eval-iters",
      "eval-interval", "save-interval", "log-interval", "save", "load", "data-path", "split", "tokenizer-type", "tokenizer-model",
      "vocab-file", "merge-file", "tensorboard-dir", "wandb-project", "exit-duration-in-mins", "distributed-backend",
      "distributed-timeout-minutes", "rotary-base", "rotary-percent", "norm-epsilon",
      "mock-data", "no-masked-softmax-fusion", "no-bias-dropout-fusion", "no-bias-gelu-fusion", "use-mcore-models", "ckpt-format",
      "log-throughput", "log-timers-to-tensorboard", "bf16-param-gather", "transformer-impl", "data-cache-path", "master_addr",
      "master_port", "node_rank", "rdzv-id", "rdzv-backend", "rdzv-endpoint", "standalone", "use-checkpoint-args", "finetune"};
  return s;
}

// Megatron's defaults a hybrid or MoE model takes from its other sizes: the pattern's length is the
// layer count (mamba_hybrid_layer_allocation.py get_hybrid_total_layer_count); without
// --mamba-num-heads the mixer is expand 2 x hidden wide in heads of head_dim (mamba_mixer.py:
// d_inner = 2 d_model, nheads = d_inner / headdim, headdim 64 by default); an expert is
// --ffn-hidden-size wide without --moe-ffn-hidden-size (transformer_config.py).
void finish_hybrid_model(ImportResult& r) {
  Json& m = r.scenario["model"];
  if (m.contains("hybrid_pattern") && !m.contains("layers")) {
    m["layers"] = static_cast<std::int64_t>(m["hybrid_pattern"].get<std::string>().size());
    r.notes.push_back("model.layers: the hybrid pattern's length");
  }
  if (m.contains("hybrid_pattern") && m["hybrid_pattern"].get<std::string>().find('M') != std::string::npos && !m.contains("mamba"))
    m["mamba"] = Json::object();  // Megatron's default mixer, sized below
  if (m.contains("mamba") && !m["mamba"].contains("heads") && m.contains("hidden")) {
    const std::int64_t head_dim = m["mamba"].value("head_dim", std::int64_t{64});
    m["mamba"]["heads"] = 2 * m["hidden"].get<std::int64_t>() / head_dim;
    r.notes.push_back("model.mamba.heads: Megatron's default, 2 x hidden / head_dim");
  }
  if (m.contains("moe") && !m["moe"].contains("expert_ffn_hidden") && m.contains("ffn_hidden")) {
    m["moe"]["expert_ffn_hidden"] = m["ffn_hidden"];
    r.notes.push_back("model.moe.expert_ffn_hidden: Megatron's default, --ffn-hidden-size");
  }
}

// What Megatron does with the CUDA-graph and recompute options together: --cuda-graph-scope only
// with an implementation (none graphs nothing), transformer_engine without a scope graphs whole
// layers (not modelled: refused), local with the scope full_iteration the whole step; the recompute
// modules only with selective recompute (otherwise ignored, and noted).
void finish_cuda_graphs_and_recompute(ImportResult& r) {
  Json& sc = r.scenario;
  const std::string impl = sc.value("_cuda_graph_impl", "none");
  const std::vector<std::string> scope = sc.value("_cuda_graph_scope", std::vector<std::string>{});
  const bool whole_step = scope.size() == 1 && scope[0] == "full_iteration";
  if (impl == "none" && !scope.empty()) r.notes.push_back("--cuda-graph-scope without --cuda-graph-impl: Megatron graphs nothing");
  if (impl == "local" && !whole_step)
    throw ConfigError("--cuda-graph-impl local: only with --cuda-graph-scope full_iteration (the whole step) is it modelled");
  if (impl == "transformer_engine" && scope.empty())
    throw ConfigError("--cuda-graph-impl transformer_engine without --cuda-graph-scope graphs every whole layer, which is not modelled: "
                      "give the scopes (attn, moe_router, moe_preprocess, mamba)");
  if (impl == "local") sc["training"]["cuda_graph_impl"] = name_of(CudaGraphImpl::FullIteration);
  if (impl == "transformer_engine") {
    check_names("--cuda-graph-scope", scope, cuda_graph_scopes().names());
    sc["training"]["cuda_graph_impl"] = name_of(CudaGraphImpl::TransformerEngine);
    sc["training"]["cuda_graph_scope"] = scope;
  }
  if (sc.contains("_recompute_modules")) {
    if (sc["parallel"].value("recompute", "") == name_of(Recompute::Selective)) sc["parallel"]["recompute_modules"] = sc["_recompute_modules"];
    else r.notes.push_back("--recompute-modules without --recompute-granularity selective: Megatron ignores them");
  }
  for (const char* k : {"_cuda_graph_impl", "_cuda_graph_scope", "_recompute_modules"}) sc.erase(k);
}

// An option's value without its whitespace ("[0, 1]" as "[0,1]", "(127, 0)" as "(127,0)").
std::string without_spaces(const std::string& value) {
  std::string v;
  for (char ch : value)
    if (!std::isspace(static_cast<unsigned char>(ch))) v += ch;
  return v;
}

// A per-layer option as Megatron's moe_freq_type reads it (megatron/training/arguments.py): an
// integer, or a Python list expression of 0/1 entries: a literal ("[0,1,1]"), repeated ("[0]*3"),
// summed and grouped ("([1]*3+[0]*1)*3"). An integer comes back as one element, `is_int` set; a list
// longer than `max_len` is refused.
class LayerListParser {
 public:
  LayerListParser(std::string opt, const std::string& value, std::size_t max_len)
      : opt_(std::move(opt)), raw_(value), v_(without_spaces(value)), max_len_(max_len) {}
  std::vector<std::int64_t> parse() {
    std::vector<std::int64_t> out = sum();
    if (at_ != v_.size()) throw bad();
    return out;
  }

 private:
  ConfigError bad() const {
    return ConfigError(opt_ + ": \"" + raw_ + "\": expected an integer or a list of 0s and 1s ([0,1,1], [0]*3+[1]*58, ([1]*3+[0])*3)" +
                       " of at most " + std::to_string(max_len_) + " entries");
  }
  bool eat(char c) { return at_ < v_.size() && v_[at_] == c ? (++at_, true) : false; }
  std::int64_t count() {
    const std::size_t from = at_;
    while (at_ < v_.size() && std::isdigit(static_cast<unsigned char>(v_[at_]))) ++at_;
    if (from == at_ || at_ - from > 7) throw bad();
    return std::stoll(v_.substr(from, at_ - from));
  }
  std::vector<std::int64_t> sum() {
    std::vector<std::int64_t> out = term();
    while (eat('+')) {
      const std::vector<std::int64_t> more = term();
      out.insert(out.end(), more.begin(), more.end());
      if (out.size() > max_len_) throw bad();
    }
    return out;
  }
  std::vector<std::int64_t> term() {
    std::vector<std::int64_t> one = atom(), out = one;
    while (eat('*')) {
      const std::int64_t k = count();
      if (k > 0 && one.size() * static_cast<std::size_t>(k) > max_len_) throw bad();
      out.clear();
      for (std::int64_t i = 0; i < k; ++i) out.insert(out.end(), one.begin(), one.end());
      one = out;
    }
    return out;
  }
  std::vector<std::int64_t> atom() {
    if (eat('(')) {
      std::vector<std::int64_t> inner = sum();
      if (!eat(')')) throw bad();
      return inner;
    }
    if (!eat('[')) throw bad();
    std::vector<std::int64_t> items;
    do {
      const std::int64_t x = count();
      if (x > 1) throw bad();
      items.push_back(x);
    } while (eat(','));
    if (!eat(']')) throw bad();
    return items;
  }
  std::string opt_, raw_, v_;
  std::size_t max_len_, at_ = 0;
};

// Every layer's flag under a per-layer option: an integer N (N >= 1) flags layers where
// `on_multiple(i)` holds, a list names each layer (exactly `layers` entries of 0 and 1).
std::vector<bool> layer_flags(const std::string& opt, const std::string& value, std::int64_t layers,
                              const std::function<bool(std::int64_t i, std::int64_t n)>& on_multiple) {
  const std::string v = without_spaces(value);
  std::vector<bool> flags(static_cast<std::size_t>(layers));
  if (!v.empty() && v.find_first_not_of("0123456789-") == std::string::npos) {
    const std::int64_t n = to_int(opt, v);
    if (n < 1) throw ConfigError(opt + ": expected an integer >= 1 or a list, got " + v);
    for (std::int64_t i = 0; i < layers; ++i) flags[static_cast<std::size_t>(i)] = on_multiple(i, n);
    return flags;
  }
  const std::vector<std::int64_t> list = LayerListParser(opt, value, static_cast<std::size_t>(layers)).parse();
  if (static_cast<std::int64_t>(list.size()) != layers)
    throw ConfigError(opt + ": " + std::to_string(list.size()) + " entries for " + std::to_string(layers) + " layers");
  for (std::int64_t i = 0; i < layers; ++i) flags[static_cast<std::size_t>(i)] = list[static_cast<std::size_t>(i)] == 1;
  return flags;
}

// The dense first layers f and the period n with flags[i] == (i >= f && (i - f + 1) % n == 0)
// for every layer (parasim's moe.first_dense_layers and moe.interval), from the first two flagged
// layers (one flagged layer: its period reaches past the last); n 0 when the flags are not so.
std::pair<std::int64_t, std::int64_t> every_nth(const std::vector<bool>& flags) {
  const auto L = static_cast<std::int64_t>(flags.size());
  const auto first = static_cast<std::int64_t>(std::find(flags.begin(), flags.end(), true) - flags.begin());
  if (first == L) return {0, 0};
  const auto next = static_cast<std::int64_t>(std::find(flags.begin() + first + 1, flags.end(), true) - flags.begin());
  const std::int64_t n = next < L ? next - first : std::max<std::int64_t>(1, L - first);
  const std::int64_t f = first - n + 1;
  if (f < 0) return {0, 0};
  for (std::int64_t i = 0; i < L; ++i)
    if (flags[static_cast<std::size_t>(i)] != (i >= f && (i - f + 1) % n == 0)) return {0, 0};
  return {f, n};
}

constexpr std::int64_t kMaxLayers = 100000;  // parse_model's bound on model.layers

void place_experts(ImportResult& r, std::int64_t layers) {
  Json& sc = r.scenario;
  Json& m = sc["model"];
  if (!sc.contains("_moe_layer_freq") || !m.contains("moe")) return;
  const std::string v = sc["_moe_layer_freq"];
  const std::vector<bool> moe = layer_flags("--moe-layer-freq", v, layers, [](std::int64_t i, std::int64_t n) { return i % n == 0; });
  if (std::find(moe.begin(), moe.end(), true) == moe.end()) {
    m.erase("moe");
    r.notes.push_back("--moe-layer-freq " + v + ": no layer has experts, so the model is dense");
    return;
  }
  const auto [f, n] = every_nth(moe);
  if (n == 0)
    throw ConfigError("--moe-layer-freq " + v + ": parasim places experts in every n-th layer after f dense ones (layers f+n-1, f+2n-1, ...), " +
                      "which this pattern is not (an integer N > 1 puts them in layers 0, N, 2N, ...)");
  if (f > 0) m["moe"]["first_dense_layers"] = f;
  if (n > 1) m["moe"]["interval"] = n;
}

void place_windows(ImportResult& r, std::int64_t layers) {
  Json& sc = r.scenario;
  Json& m = sc["model"];
  if (sc.contains("_window_size")) {
    // (left, right) or left,right: Megatron's tuple_type.
    const std::string given = sc["_window_size"];
    std::string v = without_spaces(given);
    if (v.size() >= 2 && v.front() == '(' && v.back() == ')') v = v.substr(1, v.size() - 2);
    const std::size_t comma = v.find(',');
    if (comma == std::string::npos || v.find(',', comma + 1) != std::string::npos)
      throw ConfigError("--window-size " + given + ": expected (left, right)");
    const std::int64_t left = to_int("--window-size", v.substr(0, comma)), right = to_int("--window-size", v.substr(comma + 1));
    if (right != 0 || left < -1 || left >= (std::int64_t{1} << 40))
      throw ConfigError("--window-size " + given + ": a causal window (left, 0) with 0 <= left < 2^40, or (-1, 0) for none, is modelled");
    if (left >= 0) m["sliding_window"] = left + 1;  // the left keys and the query's own
  }
  if (!sc.contains("_window_skip_freq") || !m.contains("sliding_window")) return;
  const std::string v = sc["_window_skip_freq"];
  // is_layer_window_attention: an integer N windows layer_number % N != 0 (1-based); a list's 1s window.
  std::vector<bool> full = layer_flags("--window-attn-skip-freq", v, layers, [](std::int64_t i, std::int64_t n) { return (i + 1) % n != 0; });
  full.flip();  // the windowed layers' complement
  if (std::find(full.begin(), full.end(), true) == full.end()) return;  // every layer windowed
  const auto [f, n] = every_nth(full);
  if (n == 0 || f != 0)
    throw ConfigError("--window-attn-skip-freq " + v + ": full attention in every n-th layer (the n-th, 2n-th, ...) is modelled, not this pattern");
  if (n == 1) m.erase("sliding_window");  // every layer attends fully
  else m["full_attention_interval"] = n;
}

// --moe-layer-freq (which layers have experts: Megatron-Core's gpt_layer_specs.py, an integer N
// meaning layers 0, N, 2N, ...), --window-size (left, right) and --window-attn-skip-freq (which
// layers attend through the window: utils.py is_layer_window_attention, layer_number % N != 0) as
// parasim's placements: moe.first_dense_layers and moe.interval (experts in every n-th layer after
// the dense first ones), model.sliding_window (left + 1 keys) and full_attention_interval. They
// place the command line's own layers: with --model (or no --num-layers) they are noted, not read.
void finish_layer_patterns(ImportResult& r, bool model_given) {
  Json& sc = r.scenario;
  Json& m = sc["model"];
  const std::int64_t layers = m.value("layers", std::int64_t{0});
  const bool any = sc.contains("_moe_layer_freq") || sc.contains("_window_size") || sc.contains("_window_skip_freq");
  if (any && (model_given || layers < 1 || layers > kMaxLayers)) {
    r.notes.push_back(model_given ? "--moe-layer-freq / --window-size / --window-attn-skip-freq: the --model's own placements are used"
                                  : "--moe-layer-freq / --window-size / --window-attn-skip-freq: not read without --num-layers in [1, " +
                                        std::to_string(kMaxLayers) + "]");
  } else if (any) {
    place_experts(r, layers);
    place_windows(r, layers);
  }
  for (const char* k : {"_moe_layer_freq", "_window_size", "_window_skip_freq"}) sc.erase(k);
}

// Megatron's derived model defaults: kv_heads = heads, ffn_hidden 4h (or 8h/3 rounded down to a
// multiple of 64 with SwiGLU), max_positions = seq_len, dropout from the two dropout options.
void finish_megatron_model(ImportResult& r, bool model_given) {
  Json& m = r.scenario["model"];
  if (r.scenario.contains("_dropout")) {
    const Json d = r.scenario["_dropout"];
    m["dropout"] = d.value("hidden", true) || d.value("attention", true);
    r.scenario.erase("_dropout");
  }
  if (m.contains("heads") && !m.contains("kv_heads")) m["kv_heads"] = m["heads"];
  if (m.contains("hidden") && !m.contains("ffn_hidden")) {
    const std::int64_t h = m["hidden"];
    m["ffn_hidden"] = m["activation"] == name_of(Activation::SwiGlu) ? (4 * h * 2 / 3) / 64 * 64 : 4 * h;
    r.notes.push_back("model.ffn_hidden: Megatron's default for the hidden size");
  }
  if (m["position_embedding"] == name_of(PositionEmbedding::Learned) && !m.contains("max_positions") && r.scenario["training"].contains("seq_len"))
    m["max_positions"] = r.scenario["training"]["seq_len"];
  if (!m.contains("vocab") && !model_given)
    r.notes.push_back("model.vocab: the tokenizer's size, not on the command line: give --vocab-size or --model");
  finish_hybrid_model(r);
  finish_layer_patterns(r, model_given);
}

}  // namespace

ImportResult import_megatron(const std::vector<std::string>& args, const ImportOptions& o) {
  ImportResult r;
  r.scenario = scenario_skeleton(o, "megatron-import", "megatron-core@0.8");
  // Megatron's defaults for a GPT model: GeLU, LayerNorm, tied embeddings, biases, learned
  // positions, dropout 0.1 (megatron/training/arguments.py).
  r.scenario["model"] = {{"name", "megatron-import"}, {"activation", name_of(Activation::Gelu)}, {"norm", name_of(NormKind::LayerNorm)}, {"tied_embeddings", true},
                         {"bias", true}, {"position_embedding", name_of(PositionEmbedding::Learned)}, {"dropout", true}};
  Args a{r.scenario, r.notes};
  int skipped = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    if (!args[i].starts_with("--")) continue;  // the script (pretrain_gpt.py) or a positional
    std::string opt = args[i].substr(2), value;
    const auto eq = opt.find('=');
    const bool has_eq = eq != std::string::npos;
    if (has_eq) value = opt.substr(eq + 1), opt = opt.substr(0, eq);
    const bool next_is_value = !has_eq && i + 1 < args.size() && !args[i + 1].starts_with("--");
    if (const auto mv = multi_valued().find(opt); mv != multi_valued().end()) {
      std::vector<std::string> values;
      if (has_eq) values.push_back(value);
      while (!has_eq && i + 1 < args.size() && !args[i + 1].starts_with("--")) values.push_back(args[++i]);
      mv->second(a, values);
    } else if (const auto it = valued().find(opt); it != valued().end()) {
      if (!has_eq && !next_is_value) throw ConfigError("--" + opt + ": expected a value");
      it->second(a, has_eq ? value : args[++i]);
    } else if (const auto f = flags().find(opt); f != flags().end()) {
      f->second(a, "");
    } else {
      if (next_is_value) ++i;
      if (megatron_no_effect().count(opt)) ++skipped;
      else r.unmapped.push_back("--" + opt);
    }
  }
  finish_megatron_model(r, !o.model.empty());
  finish_cuda_graphs_and_recompute(r);
  // The flex dispatcher runs its backend's kernels (parallel.moe_dispatcher); the backend alone
  // changes nothing (Megatron-Core reads it only with --moe-token-dispatcher-type flex).
  if (r.scenario.value("_moe_flex", false)) r.scenario["parallel"]["moe_dispatcher"] = r.scenario.value("_moe_flex_backend", "deepep");
  r.scenario.erase("_moe_flex");
  r.scenario.erase("_moe_flex_backend");
  if (r.scenario.value("_ce_impl", "") == "native" && r.scenario["training"].value("loss_impl", "") == "fused")
    r.scenario["training"]["loss_impl"] = "eager16";
  r.scenario.erase("_ce_impl");
  apply_model_option(r.scenario, o);
  finish_layout(r.scenario, r.scenario.value("_layers_per_virtual_stage", 0), o.data_dir);
  r.scenario.erase("_layers_per_virtual_stage");
  if (r.scenario["training"].value("moe_pad_to_capacity", false) && !r.scenario["training"].contains("moe_capacity_factor"))
    throw ConfigError("--moe-pad-expert-input-to-capacity needs --moe-expert-capacity-factor (Megatron-Core refuses it without one)");
  const Json& model = r.scenario["model"];
  const bool moe = model.is_string() ? !o.data_dir.empty() && load_zoo_model(o.data_dir, model.get<std::string>(), "--model").moe.has_value()
                                     : model.contains("moe");
  if (moe && !r.scenario.value("_moe_forced", false))
    r.notes.push_back("no --moe-router-force-load-balancing: the router is trained, and more uneven than the random routing priced; "
                      "set training.moe_expert_load to the busiest expert's routed tokens over the mean from your run");
  r.scenario.erase("_moe_forced");
  if (skipped > 0) r.notes.push_back(std::to_string(skipped) + " options with no effect on a step's time or memory skipped");
  return r;
}

}  // namespace parasim
