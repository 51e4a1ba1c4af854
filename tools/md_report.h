// The Markdown variant of `parasim report`: the same sections and tables as the HTML page, for
// design documents (no charts).
#pragma once
#include <string>

#include "tools/report_view.h"

namespace parasim {

std::string markdown_report(const ReportDoc& doc);

}  // namespace parasim
