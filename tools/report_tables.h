// The tables of a report, shared by the HTML page (beside its charts) and the Markdown file
// (which has only these), so both carry the same figures.
#pragma once
#include <string>
#include <vector>

#include "tools/report_view.h"

namespace parasim {

struct Table {
  std::string caption;
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> notes;  // lines under the table
  bool align_numbers = true;       // right-align cells that are numbers (not in figure / value lists)
};

struct ReportSection {
  std::string id, heading;
  std::vector<Table> tables;
  std::string chart;  // which chart goes above the tables: gantt, memory, time, throughput, curve, or ""
};

// The report's sections in order; charts are named, drawn only by the HTML renderer.
std::vector<ReportSection> report_sections(const ReportDoc& doc);

}  // namespace parasim
