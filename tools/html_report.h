// One self-contained HTML page for `parasim report`: inline CSS and SVG, no script, no network.
// One function per chart; each returns an <svg> element (or "" when it has nothing to draw).
#pragma once
#include <string>

#include "tools/report_view.h"

namespace parasim {

std::string html_report(const ReportDoc& doc);

// The step per simulated rank and stream, phases coloured, bubbles and exposed communication on
// the compute lane.
std::string svg_gantt(const StepView& v);
// Memory per GPU over the step for the ranks with the highest peaks, with the capacity line.
std::string svg_memory(const StepView& v);
// The breakdown at the peak of each of those ranks, as stacked bars.
std::string svg_memory_breakdown(const StepView& v);
// Where the time goes, seconds per GPU by phase.
std::string svg_where_time_goes(const StepView& v);
// A sweep's or plan's rows: throughput against GPUs, the Pareto front, the layouts that do not fit.
std::string svg_throughput_vs_gpus(const Json& doc);
// A plan's curve: days and cost (or GPU-hours) against GPUs.
std::string svg_time_cost_curve(const Json& doc);

}  // namespace parasim
