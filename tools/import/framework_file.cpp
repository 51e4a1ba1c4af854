#include "tools/import/framework_file.h"

#include <algorithm>
#include <cctype>

#include "sim/config/json_reader.h"
#include "sim/core/registry.h"

namespace parasim {

const std::vector<std::string>& framework_names() {
  static const std::vector<std::string> names = {"megatron", "deepspeed", "torchtitan", "llm-foundry"};
  return names;
}

namespace {

bool ends_with(const std::string& s, const std::string& tail) { return s.size() >= tail.size() && s.ends_with(tail); }

// DeepSpeed's own top-level keys (deepspeed/runtime/config.py): a JSON object holding one of them
// and no parasim schema is a DeepSpeed config.
bool is_deepspeed(const std::string& text) {
  const Json j = Json::parse(text, nullptr, false);
  if (!j.is_object() || j.contains("schema")) return false;
  for (const char* k : {"train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps", "zero_optimization"})
    if (j.contains(k)) return true;
  return false;
}

}  // namespace

bool is_hf_model_config(const std::string& text) {
  const Json j = Json::parse(text, nullptr, false);
  return j.is_object() && !j.contains("schema") && (j.contains("architectures") || j.contains("model_type"));
}

std::string framework_of(const std::string& path, const std::string& text) {
  if (ends_with(path, ".toml")) return "torchtitan";
  if (ends_with(path, ".yaml") || ends_with(path, ".yml")) return "llm-foundry";
  if (is_deepspeed(text)) return "deepspeed";
  // Megatron-LM's arguments (megatron/training/arguments.py): text, not JSON, holding its layout
  // options (an argument file may open with comments and the script: "pretrain_gpt.py --num-layers").
  const bool json = Json::accept(text);
  const auto has = [&](const char* option) {
    for (size_t at = text.find(option); at != std::string::npos; at = text.find(option, at + 1)) {
      const size_t end = at + std::string(option).size();
      if ((at == 0 || std::isspace(static_cast<unsigned char>(text[at - 1]))) &&
          (end == text.size() || std::isspace(static_cast<unsigned char>(text[end])) || text[end] == '='))
        return true;
    }
    return false;
  };
  // A hybrid model's arguments may give no --num-layers: its pattern is the layer count.
  if (!json && (has("--num-layers") || has("--tensor-model-parallel-size") || has("--hybrid-layer-pattern") || has("--hybrid-override-pattern")))
    return "megatron";
  return "";
}

ImportResult import_framework(const std::string& framework, const std::string& path, const std::string& text,
                              const ImportOptions& o) {
  if (framework == "megatron") return import_megatron(split_args(text), o);
  if (framework == "deepspeed") return import_deepspeed(parse_json_text(text, path), path, o);
  if (framework == "torchtitan") return import_torchtitan(text, path, o);
  if (framework == "llm-foundry") return import_llm_foundry(text, path, o);
  std::string names;
  for (const auto& n : framework_names()) names += (names.empty() ? "" : ", ") + n;
  const std::string close = closest_name(framework, framework_names());
  throw ConfigError("--from: expected one of " + names + ", got '" + framework + "'" + (close.empty() ? "" : " (did you mean '" + close + "'?)"));
}

}  // namespace parasim
