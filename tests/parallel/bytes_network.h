// A network whose every collective takes 1 ns per byte: op durations read back the bytes moved.
#pragma once
#include <string>

#include "sim/network/network_model.h"

namespace parasim::test {

class BytesNetwork final : public NetworkModel {
 public:
  std::string name() const override { return "bytes"; }
  double time_s(const CollectiveSpec& c) const override { return c.bytes * 1e-9; }
  std::string algorithm(const CollectiveSpec&) const override { return "bytes"; }
};

}  // namespace parasim::test
