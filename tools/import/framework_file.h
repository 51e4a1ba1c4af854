// A framework's config file read as a scenario, by the framework's name or told from the file:
// what `parasim import <framework>` and `parasim run FILE` share (tools/import/framework_config.h
// holds the readers).
#pragma once
#include <string>
#include <vector>

#include "tools/import/framework_config.h"

namespace parasim {

// The framework names `run --from` and the readers take, in the order they are tried.
const std::vector<std::string>& framework_names();

// Which framework's config `text` (the content of `path`) is, where that is unambiguous:
// "torchtitan" for a .toml file, "llm-foundry" for .yaml / .yml, "deepspeed" for a JSON object with
// DeepSpeed's batch or ZeRO keys and no parasim schema, "megatron" for text whose first word is a
// Megatron-LM option ("--num-layers ..."). "" for a parasim scenario or measured run, and for
// anything else (the caller then asks for --from).
std::string framework_of(const std::string& path, const std::string& text);

// A Hugging Face model config.json (a model, not a training job: `parasim import hf-config`).
bool is_hf_model_config(const std::string& text);

// The scenario of a `framework` config (one of framework_names()); ConfigError for another name.
ImportResult import_framework(const std::string& framework, const std::string& path, const std::string& text,
                              const ImportOptions& o);

}  // namespace parasim
