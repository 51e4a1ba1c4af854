// Sinks on a finished run: the summary table, the Result JSON (contract v1), the Chrome trace.
#pragma once
#include <ostream>
#include <string>

#include "sim/cost/kernels.h"
#include "sim/metrics/time_partition.h"
#include "sim/simulation.h"

namespace parasim {

// `time`, when given, prints "where the time went" as a partition of the step (docs/outputs.md);
// otherwise the per-phase totals.
void print_summary(std::ostream& os, const Scenario& sc, const Result& r, const TimePartition& time);
Json result_json(const Result& r);
// Chrome trace event format: one process per simulated rank, one thread per stream, memory as a
// counter track. Opens in Perfetto and chrome://tracing.
// The caller owns the file (tools/output_file.h: written whole or not at all).
void write_chrome_trace(std::ostream& out, const Scenario& sc, const Program& p, const Timeline& t);

// The size of a trace of `ops` ops, MiB (about what the whole-step program behind it takes in memory).
inline constexpr double kDefaultTimelineMaxMib = 1024;
double trace_mib(double ops);
// A folded step (sim/steady_state.h) whose whole-step timeline would pass max_mib: a ConfigError
// naming `option` (and `cap_option`, the option that raises the cap, if any), before the whole
// step is simulated.
void check_timeline_size(const SimulationOutput& out, double max_mib, const char* option, const char* cap_option);
// Per-kernel table of one transformer layer plus the embedding and output layers, one microbatch on
// one rank: shape or bytes, FLOPs, time, achieved rate and what priced it; block totals and the
// GEMM / attention / memory-bound split of the layer.
void print_kernels(std::ostream& os, const Scenario& sc, const LayerGraph& g, const std::vector<KernelRow>& rows);
Json kernels_json(const std::vector<KernelRow>& rows);
// The lowered schedule of one simulated rank, one line per op.
void dump_program(std::ostream& os, const Program& p, const Timeline& t, std::int32_t rank);

// "128 experts, top 8, 3.35B active" for an MoE model; "" for a dense one.
std::string moe_summary(const ModelSpec& m);
// A rate for the summary: whole above 100 (496052), three significant digits below (0.00291), so a
// tiny rate never prints as 0.
std::string rate_text(double per_s);

}  // namespace parasim
