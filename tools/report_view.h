// What `parasim report` draws, extracted from one simulated step (or read from a sweep or plan):
// plain data shared by the HTML and the Markdown renderers, so both say the same thing.
#pragma once
#include <array>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sim/simulation.h"

namespace parasim {

// A span's kind: a Phase (0 .. kPhases-1), or one of the compute stream's idle kinds below.
inline constexpr int kSpanBubble = kPhases;       // compute idle, no own communication running
inline constexpr int kSpanExposed = kPhases + 1;  // compute idle while own communication runs
inline constexpr int kSpanKinds = kPhases + 2;
const char* span_kind_name(int kind);

struct Span {
  double t0 = 0, t1 = 0;  // seconds
  int kind = 0;
  // The part of the lane's height it fills, 0 = top .. 1 = bottom: a full span fills it all; in an
  // aggregated column each kind gets a share of the height by its share of the column's time.
  double y0 = 0, y1 = 1;
};
struct Lane {
  std::string stream;
  std::vector<Span> spans;
  std::int64_t ops = 0;
  double busy_s = 0;
};
struct RankView {
  std::string title;  // "rank 0 x64 (stage 0)"
  std::vector<Lane> lanes;  // compute first; streams without ops left out
  double compute_s = 0, tp_comm_s = 0, exposed_s = 0, bubble_s = 0;
};
struct MemoryView {
  std::string title;
  std::vector<std::pair<double, double>> curve;  // (s, GiB), at most two points per drawn pixel column
  double peak_gib = 0, peak_s = 0;
  std::array<double, kMemCats> at_peak_gib{};
};

// Drawing limits: at most this many pixel columns over the step (spans closer than one column
// are merged) and this many simulated ranks (the report says when it leaves some out).
struct ViewLimits {
  int columns = 1000;
  int max_ranks = 32;
  int max_memory_curves = 8;
};

struct StepView {
  std::string scenario;
  std::vector<std::pair<std::string, std::string>> summary;  // label, value
  double step_s = 0;
  std::int64_t ops = 0, spans = 0, ranks_total = 0;
  std::vector<RankView> ranks;
  std::vector<MemoryView> memory;
  double capacity_gib = 0;
  std::vector<std::pair<std::string, double>> where_time_goes;  // label, seconds per GPU
  std::string aggregation_note;
};

StepView step_view(const Scenario& sc, const SimulationOutput& out, const ViewLimits& lim = {});

}  // namespace parasim

namespace parasim {

// One report: a simulated step and/or a sweep or plan, and time to train when known.
struct ReportDoc {
  std::string source;  // the input's name, for errors
  std::string title;
  std::vector<std::string> notes;  // where the input came from, what was re-simulated
  std::optional<StepView> step;
  std::optional<Json> time_to_train;  // the TTT object (sim/planning/goodput.h)
  std::optional<Json> table;          // a parasim.sweep/1 or parasim.plan/1 document, validated
};

// Validates the parts of a sweep or plan document the report reads (rows: objects; numbers where
// numbers are expected) and throws ConfigError naming the file and the JSON pointer otherwise.
void check_table(const Json& doc, const std::string& file);
// A row's number, or nullopt when absent or null.
std::optional<double> row_number(const Json& row, const char* key);
// "tp=8 pp=4 ..." from a row's settings.
std::string row_settings(const Json& row);

}  // namespace parasim
