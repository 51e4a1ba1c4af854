#include "sim/core/program.h"

#include <stdexcept>

namespace parasim {

const char* stream_name(Stream s) {
  switch (s) {
    case Stream::Compute: return "compute";
    case Stream::Comm: return "comm";
    case Stream::P2P: return "p2p";
    case Stream::Copy: return "copy";
  }
  return "?";
}

const char* phase_name(Phase p) {
  static const char* names[kPhases] = {"forward", "backward", "weight_grad", "recompute", "optimizer", "dp_comm",
                                       "tp_comm", "pp_comm",  "cp_comm",     "fsdp_gather", "ep_comm", "offload", "other"};
  return names[static_cast<int>(p)];
}

const char* memcat_name(MemCat c) {
  static const char* names[kMemCats] = {"weights", "grads", "optimizer", "activations", "gathered_params",
                                        "comm_buffers", "workspace"};
  return names[static_cast<int>(c)];
}

std::int32_t Program::label(const std::string& s, OpRole role) {
  // Labels repeat in regular patterns; search from the back where the recent ones are.
  for (size_t i = labels.size(); i-- > 0 && labels.size() - i <= 64;)
    if (labels[i] == s) {
      if (label_roles[i] != role) throw std::logic_error("op label \"" + s + "\" emitted with two roles (sim/parallel/op_labels.h)");
      return static_cast<std::int32_t>(i);
    }
  labels.push_back(s);
  label_roles.push_back(role);
  return static_cast<std::int32_t>(labels.size() - 1);
}

}  // namespace parasim
