#include "tools/md_report.h"

#include "tools/report_tables.h"

namespace parasim {

namespace {
std::string cell(const std::string& c) {
  std::string o;
  for (char ch : c) {
    if (ch == '|') o += "\\|";
    else if (ch == '\n') o += ' ';
    else o += ch;
  }
  return o;
}
std::string md_table(const Table& t) {
  std::string s;
  if (!t.caption.empty()) s += "*" + t.caption + "*\n\n";
  s += "|";
  for (const auto& h : t.header) s += " " + cell(h) + " |";
  s += "\n|";
  for (size_t i = 0; i < t.header.size(); ++i) s += "---|";
  s += "\n";
  for (const auto& r : t.rows) {
    s += "|";
    for (const auto& c : r) s += " " + cell(c) + " |";
    s += "\n";
  }
  for (const auto& n : t.notes) s += "\n" + n + "\n";
  return s + "\n";
}
}  // namespace

std::string markdown_report(const ReportDoc& doc) {
  std::string s = "# " + doc.title + "\n\n";
  for (const auto& n : doc.notes) s += "- " + n + "\n";
  if (!doc.notes.empty()) s += "\n";
  for (const ReportSection& sec : report_sections(doc)) {
    s += "## " + sec.heading + "\n\n";
    for (const Table& t : sec.tables) s += md_table(t);
  }
  return s;
}

}  // namespace parasim
