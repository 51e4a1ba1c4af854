// Readers of the training frameworks' own configs (`parasim import megatron|deepspeed|torchtitan|
// llm-foundry|hf-config`): each maps the options it knows onto a scenario (or, for a Hugging Face
// config.json, a model) that names the framework's stack, and lists every option it could not map,
// by name. One file per framework; the options parasim has no counterpart for are reported, never
// guessed. What a config does not say (the GPU, the node count, the model for DeepSpeed) comes from
// the command line; `parasim import` checks that the result loads.
#pragma once
#include <string>
#include <vector>

#include "sim/config/json_reader.h"
#include "models/model.h"
#include "sim/scenario/choices.h"

namespace parasim {

struct ImportOptions {
  std::string name;           // the scenario's name ("" = from the file)
  std::string gpu;            // cluster.gpu (profile name)
  std::int64_t nodes = 0;     // 0 = from the config, else 1
  std::int64_t gpus_per_node = 8;
  std::string model;          // zoo name or model JSON path; "" = from the config where it has one
  std::string stack;          // "" = the reader's default stack
  std::string data_dir;       // where a zoo model named by `model` is read (its layer count)
};

struct ImportResult {
  Json scenario;                       // parasim.scenario/1 (or parasim.model/1 for hf-config)
  std::vector<std::string> unmapped;   // options parasim has no counterpart for, by name
  std::vector<std::string> notes;      // how a value was derived
};

// Megatron-LM / NeMo command-line arguments ("--tensor-model-parallel-size 8 ...").
ImportResult import_megatron(const std::vector<std::string>& args, const ImportOptions& o);
// Splits an argument file (shell-style: whitespace, quotes, backslash-newline) into arguments.
std::vector<std::string> split_args(const std::string& text);
// A DeepSpeed config (ds_config.json).
ImportResult import_deepspeed(const Json& config, const std::string& file, const ImportOptions& o);
// A Hugging Face config.json: a parasim.model/1 object.
ImportResult import_hf_config(const Json& config, const std::string& file);
// A torchtitan job file (TOML).
ImportResult import_torchtitan(const std::string& toml_text, const std::string& file, const ImportOptions& o);
// An llm-foundry training YAML.
ImportResult import_llm_foundry(const std::string& yaml_text, const std::string& file, const ImportOptions& o);

// The scenario skeleton every reader fills: schema, name, stack, cluster from the options.
Json scenario_skeleton(const ImportOptions& o, const std::string& default_name, const std::string& default_stack);
// dp from the GPUs and the other degrees, vpp from layers per virtual stage (0: none), the pipeline
// schedule Megatron runs (interleaved with vpp > 1, else 1F1B; ddp without pipelining).
void finish_layout(Json& scenario, std::int64_t layers_per_virtual_stage, const std::string& data_dir = "");
// The options' model into the scenario (zoo name or model file), when given.
void apply_model_option(Json& scenario, const ImportOptions& o);

}  // namespace parasim
