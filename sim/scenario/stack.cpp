#include "sim/scenario/stack.h"

#include <algorithm>
#include <filesystem>

#include "sim/core/registry.h"
#include "models/model.h"
#include "sim/scenario/choices.h"

namespace parasim {

const std::vector<StackField>& stack_fields() {
  static const std::vector<StackField> fields = {
      {"training.attention_kernel", "which fused attention kernel runs (flash, triton, flash3, cudnn)"},
      {"training.loss_impl", "the cross-entropy kernels over the logits (megatron, eager, eager16, fused, xentropy)"},
      {"training.norm_impl", "the norms' kernels (fused, two_pass, eager)"},
      {"training.rope_impl", "the rotary embedding's kernels (fused, eager)"},
      {"training.dropout_add_impl", "the hidden dropout and the residual add: one fused kernel, or dropout then add (fused, eager)"},
      {"training.optimizer_impl", "the optimizer step's kernels (fused multi-tensor, or unfused per term)"},
      {"training.grad_accumulation_fusion", "weight gradients accumulated inside the GEMM, or by a separate add kernel"},
      {"training.fp32_grad_accumulation", "gradients accumulated in fp32 main_grad buffers"},
      {"training.train_metrics", "metrics the training loop evaluates on every microbatch's logits"},
      {"training.host_launch_us", "host time per framework call (the CPU thread that issues kernels)"},
      {"training.host_loop_launch_us", "host time per further kernel a framework call launches from its own loop"},
      {"training.host_op_us", "host time per bare PyTorch op a framework module runs in its own Python loop"},
      {"training.cuda_graph_scope", "parts of each layer run as CUDA graphs"},
      {"training.cuda_graph_impl", "CUDA graphs per layer part, or the whole step as one graph"},
      {"training.launch_impl", "whose modules issue the kernels (the real launches behind each priced kernel)"},
      {"training.make_vocab_size_divisible_by", "vocabulary padded to a multiple of this times tp"},
      {"training.fp8_recipe", "what \"fp8\" means: the FP8 scaling recipe"},
      {"parallel.zero_impl", "whose ZeRO optimizer (`parasim list zero-impls`)"},
      {"parallel.pipeline_impl", "whose pipeline engine (`parasim list pipeline-impls`)"},
      {"parallel.p2p_sync", "pipeline sends block the sending stage"},
      {"parallel.recompute_fused_attention", "selective recompute of core_attn replays a fused attention kernel too"},
      {"parallel.overlap_grad_reduce", "gradient reduction overlapped with the backward"},
      {"parallel.fsdp.version", "FSDP1 (flat parameters) or FSDP2 (per-parameter DTensors)"},
      {"parallel.fsdp.backward_prefetch", "when FSDP issues the next unit's all-gather in backward (`parasim list backward-prefetch`)"},
      {"parallel.fsdp.reduce_dtype", "the dtype FSDP reduce-scatters gradients in"},
  };
  return fields;
}

namespace {

std::vector<std::string> split_field(const std::string& field) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t dot; (dot = field.find('.', start)) != std::string::npos; start = dot + 1) parts.push_back(field.substr(start, dot - start));
  parts.push_back(field.substr(start));
  return parts;
}

std::vector<std::string> field_names() {
  std::vector<std::string> names;
  for (const auto& f : stack_fields()) names.emplace_back(f.field);
  return names;
}

std::vector<std::string> strings(const JsonObject& o, const std::string& key) {
  const Json& v = o.raw(key);
  if (!v.is_array() || v.empty()) o.fail(key, "expected a non-empty array of strings");
  std::vector<std::string> out;
  for (const auto& e : v) {
    if (!e.is_string()) o.fail(key, "expected a non-empty array of strings");
    out.push_back(e.get<std::string>());
  }
  return out;
}

StackCondition parse_condition(const JsonObject& o) {
  StackCondition c;
  if (o.has("gpu")) c.gpu = strings(o, "gpu");
  if (o.has("dtype")) c.dtype = o.choice_list("dtype", dtypes().names());
  if (o.has("pipeline")) c.pipeline = o.boolean("pipeline");
  if (o.has("interleaved")) c.interleaved = o.boolean("interleaved");
  if (o.has("fsdp")) c.fsdp = o.boolean("fsdp");
  if (o.has("zero_stage")) c.zero_stage = o.int_list("zero_stage", 0, 3);
  if (o.has("norm")) c.norm = o.choice_list("norm", norm_kinds().names());
  if (o.has("position_embedding")) c.position_embedding = o.choice_list("position_embedding", position_embeddings().names());
  o.finish();
  return c;
}

template <class T>
bool among(const std::vector<T>& list, const T& v) {
  return list.empty() || std::find(list.begin(), list.end(), v) != list.end();
}

template <class T>
std::string joined(const std::vector<T>& list) {
  std::string s;
  for (const auto& v : list) {
    if (!s.empty()) s += "/";
    if constexpr (std::is_same_v<T, std::string>) s += v;
    else s += std::to_string(v);
  }
  return s;
}

// Safe reads for the conditions (the parser reports a wrong type).
std::int64_t int_at(const Json& o, const char* key, std::int64_t def) {
  const auto it = o.is_object() ? o.find(key) : o.end();
  return it != o.end() && it->is_number_integer() ? it->get<std::int64_t>() : def;
}
std::string str_at(const Json& o, const char* key, const std::string& def) {
  const auto it = o.is_object() ? o.find(key) : o.end();
  return it != o.end() && it->is_string() ? it->get<std::string>() : def;
}

}  // namespace

bool StackCondition::always() const { return describe().empty(); }

std::string StackCondition::describe() const {
  std::vector<std::string> parts;
  if (!gpu.empty()) parts.push_back("GPU " + joined(gpu) + "*");
  if (!dtype.empty()) parts.push_back("dtype " + joined(dtype));
  if (pipeline) parts.push_back(*pipeline ? "pp > 1" : "pp = 1");
  if (interleaved) parts.push_back(*interleaved ? "vpp > 1" : "vpp = 1");
  if (fsdp) parts.push_back(*fsdp ? "with FSDP" : "without FSDP");
  if (!zero_stage.empty()) parts.push_back("zero_stage " + joined(zero_stage));
  if (!norm.empty()) parts.push_back("norm " + joined(norm));
  if (!position_embedding.empty()) parts.push_back("position_embedding " + joined(position_embedding));
  std::string s;
  for (const auto& p : parts) s += (s.empty() ? "" : ", ") + p;
  return s;
}

bool holds(const StackCondition& c, const StackContext& x) {
  const bool gpu_ok = c.gpu.empty() || std::any_of(c.gpu.begin(), c.gpu.end(), [&](const std::string& p) { return x.gpu.starts_with(p); });
  return gpu_ok && among(c.dtype, x.dtype) && (!c.pipeline || *c.pipeline == (x.pp > 1)) &&
         (!c.interleaved || *c.interleaved == (x.vpp > 1)) && (!c.fsdp || *c.fsdp == x.fsdp) && among(c.zero_stage, x.zero_stage) &&
         among(c.norm, x.norm) && among(c.position_embedding, x.position_embedding);
}

std::string stacks_dir(const std::string& data_dir) { return data_dir + "/stacks"; }

std::vector<std::string> stack_names(const std::string& data_dir) { return json_stems(stacks_dir(data_dir)); }

Stack parse_stack(const Json& j, const std::string& file) {
  const JsonObject root(j, file, "");
  if (root.str("schema") != "parasim.stack/1") root.fail("schema", "expected \"parasim.stack/1\"");
  Stack s;
  s.file = file;
  s.name = root.str("name");
  if (s.name.find('@') == std::string::npos) root.fail("name", "expected <framework>@<version>, got \"" + s.name + "\"");
  if (std::filesystem::path(file).stem().string() != s.name && std::filesystem::path(file).extension() == ".json")
    root.fail("name", "\"" + s.name + "\" differs from the file's name (stacks/<name>.json)");
  s.framework = root.str("framework");
  s.release = root.str("release");
  s.description = root.str("description");
  s.source = root.str("source");
  const Json& settings = root.raw("settings");
  if (!settings.is_array()) root.fail("settings", "expected an array of {field, value, source, when?}");
  for (size_t i = 0; i < settings.size(); ++i) {
    const JsonObject o(settings[i], file, "/settings/" + std::to_string(i));
    StackSetting st;
    st.field = o.choice("field", field_names());
    st.value = o.raw("value");
    st.source = o.str("source");
    if (st.source.empty()) o.fail("source", "every value names its source (the framework's file and release)");
    if (auto w = o.object_opt("when")) st.when = parse_condition(*w);
    o.finish();
    s.settings.push_back(std::move(st));
  }
  root.finish();
  return s;
}

Stack load_stack(const std::string& data_dir, const std::string& name, const std::string& where) {
  const std::vector<std::string> names = stack_names(data_dir);
  if (std::find(names.begin(), names.end(), name) == names.end()) {
    std::string msg = where + ": unknown stack \"" + name + "\"; the stacks are:";
    for (const auto& n : names) msg += " " + n;
    const std::string close = closest_name(name, names);
    if (!close.empty()) msg += "; did you mean \"" + close + "\"?";
    throw ConfigError(msg + " (parasim list stacks)");
  }
  const std::string path = stacks_dir(data_dir) + "/" + name + ".json";
  return parse_stack(read_json_file(path), path);
}

StackContext stack_context(const Json& scenario) {
  StackContext x;
  const Json empty = Json::object();
  const auto section = [&](const char* k) -> const Json& {
    const auto it = scenario.is_object() ? scenario.find(k) : scenario.end();
    return it != scenario.end() && it->is_object() ? *it : empty;
  };
  x.dtype = str_at(section("training"), "dtype", name_of(Dtype::Bf16));
  const Json& par = section("parallel");
  x.pp = int_at(par, "pp", 1);
  x.vpp = int_at(par, "vpp", 1);
  x.zero_stage = int_at(par, "zero_stage", 0);
  x.fsdp = par.contains("fsdp") && par["fsdp"].is_object();
  return x;
}

const Json* field_value(const Json& scenario, const std::string& field) {
  const Json* node = &scenario;
  for (const auto& part : split_field(field)) {
    if (!node->is_object()) return nullptr;
    const auto it = node->find(part);
    if (it == node->end()) return nullptr;
    node = &*it;
  }
  return node;
}

std::vector<FieldOrigin> apply_stack(Json& scenario, const Stack* stack, const StackContext& x) {
  std::vector<FieldOrigin> origins;
  for (const auto& f : stack_fields()) {
    const std::string field = f.field;
    if (field_value(scenario, field)) {
      origins.push_back({field, "scenario", ""});
      continue;
    }
    FieldOrigin o{field, "default", ""};
    const auto parts = split_field(field);
    for (const StackSetting* st = nullptr; stack && !st;) {
      for (const auto& cand : stack->settings)
        if (cand.field == field && holds(cand.when, x)) {
          st = &cand;
          break;
        }
      if (!st) {
        for (const auto& cand : stack->settings)
          if (cand.field == field) o.source = stack->name + " sets it only with " + cand.when.describe();
        break;
      }
      // The value goes into an object the scenario has (never creates parallel.fsdp).
      Json* parent = &scenario;
      for (size_t i = 0; i + 1 < parts.size() && parent; ++i) {
        const auto it = parent->is_object() ? parent->find(parts[i]) : parent->end();
        parent = it != parent->end() && it->is_object() ? &*it : nullptr;
      }
      if (!parent) {
        o.source = stack->name + " sets it only where the scenario has " + field.substr(0, field.rfind('.'));
        break;
      }
      (*parent)[parts.back()] = st->value;
      o = {field, "stack", st->source};
    }
    origins.push_back(o);
  }
  return origins;
}

}  // namespace parasim
