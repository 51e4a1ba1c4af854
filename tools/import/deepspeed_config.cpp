// A DeepSpeed config (ds_config.json) -> a scenario naming deepspeed@0.16 (or --stack). A DeepSpeed
// config holds the batch, precision, optimizer and ZeRO settings; the model comes from --model.
#include <filesystem>
#include <set>

#include "tools/import/framework_config.h"

namespace parasim {

namespace {

// Keys with no effect on a step's time or memory (logging, schedules, clipping, checkpoints).
const std::set<std::string>& deepspeed_no_effect() {
  static const std::set<std::string> s = {"steps_per_print", "wall_clock_breakdown", "scheduler", "gradient_clipping", "prescale_gradients",
                                          "tensorboard", "wandb", "csv_monitor", "flops_profiler", "comms_logger", "dump_state",
                                          "checkpoint", "data_efficiency", "seed", "zero_allow_untested_optimizer", "$comment"};
  return s;
}

std::int64_t int_of(const Json& v, const std::string& where) {
  if (v.is_number_integer()) return v.get<std::int64_t>();
  if (v.is_string() && v == "auto") throw ConfigError(where + ": \"auto\" is filled in by the Hugging Face Trainer; give the number");
  throw ConfigError(where + ": expected an integer");
}

void map_zero(const Json& z, const std::string& file, ImportResult& r) {
  Json& p = r.scenario["parallel"];
  for (const auto& [k, v] : z.items()) {
    if (k == "stage") {
      p["zero_stage"] = int_of(v, file + ": /zero_optimization/stage");
    } else if (k == "overlap_comm") {
      p["overlap_grad_reduce"] = v.get<bool>();
    } else if (k == "reduce_bucket_size") {
      // elements, 2 bytes each in 16-bit training
      p["bucket_mb"] = static_cast<double>(int_of(v, file + ": /zero_optimization/reduce_bucket_size")) * 2 / 1e6;
      r.notes.push_back("parallel.bucket_mb: reduce_bucket_size elements x 2 bytes");
    } else if (k == "contiguous_gradients" || k == "round_robin_gradients" || k == "allgather_partitions" || k == "reduce_scatter" ||
               k == "allgather_bucket_size" || k == "stage3_gather_16bit_weights_on_model_save" || k == "sub_group_size") {
      // buffer layout and bucket sizes parasim does not model separately
    } else {
      r.unmapped.push_back("zero_optimization." + k);
    }
  }
}

}  // namespace

ImportResult import_deepspeed(const Json& c, const std::string& file, const ImportOptions& o) {
  if (!c.is_object()) throw ConfigError(file + ": expected a DeepSpeed config object");
  if (o.model.empty()) throw ConfigError(file + ": a DeepSpeed config names no model: give --model (a zoo name or model JSON)");
  ImportResult r;
  r.scenario = scenario_skeleton(o, std::filesystem::path(file).stem().string(), "deepspeed@0.16");
  Json& t = r.scenario["training"];
  std::int64_t gas = 0;
  for (const auto& [k, v] : c.items()) {
    const std::string where = file + ": /" + k;
    if (k == "train_batch_size") t["global_batch"] = int_of(v, where);
    else if (k == "train_micro_batch_size_per_gpu") t["micro_batch"] = int_of(v, where);
    else if (k == "gradient_accumulation_steps") gas = int_of(v, where);
    else if (k == "bf16" || k == "fp16") {
      if (v.is_object() && v.value("enabled", false)) t["dtype"] = k;
    } else if (k == "zero_optimization") map_zero(v, file, r);
    else if (k == "optimizer") {
      const std::string type = v.value("type", "");
      if (type == "SGD") t["optimizer"] = "sgd";
      else if (type != "Adam" && type != "AdamW") r.unmapped.push_back("optimizer.type " + type);
    } else if (!deepspeed_no_effect().count(k)) r.unmapped.push_back(k);
  }
  finish_layout(r.scenario, 0);
  const std::int64_t dp = r.scenario["parallel"]["dp"];
  if (!t.contains("global_batch") && t.contains("micro_batch") && gas > 0) {
    t["global_batch"] = t["micro_batch"].get<std::int64_t>() * gas * dp;
    r.notes.push_back("training.global_batch: micro batch x gradient_accumulation_steps x dp");
  }
  if (!t.contains("seq_len")) r.notes.push_back("training.seq_len: not in a DeepSpeed config; set it in the scenario");
  return r;
}

}  // namespace parasim
