#include "calibrate/import/nccl_tests.h"

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include <fmt/format.h>

namespace parasim {

namespace {
const std::vector<std::string> kOps = {"all_reduce", "all_gather", "reduce_scatter", "alltoall", "broadcast", "sendrecv", "reduce"};

std::string canonical_op(const std::string& op) {
  if (op == "alltoall") return "all_to_all";
  if (op == "sendrecv") return "send_recv";
  return op;
}
}  // namespace

NcclTestsLog parse_nccl_tests(const std::string& text, const std::string& file, const std::string& op_override) {
  NcclTestsLog log;
  log.file = file;
  std::set<std::string> hosts;
  std::istringstream in(text);
  std::string line;
  int lineno = 0;
  bool in_results = false;
  static const std::regex rank_re(R"(^#\s+Rank\s+(\d+)\s+Group\s+\d+\s+Pid\s+\d+\s+on\s+(\S+)\s+device\s+\d+\s+\[[^\]]*\]\s+(.+?)\s*$)");
  static const std::regex op_re(R"((\w+)_perf)");
  static const std::regex ver_re(R"(NCCL version (\S+))");
  std::string op = op_override;
  while (std::getline(in, line)) {
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::smatch m;
    if (std::regex_search(line, m, ver_re)) log.nccl_version = m[1];
    if (line.empty()) continue;
    if (line[0] == '#') {
      if (std::regex_match(line, m, rank_re)) {
        ++log.ranks;
        hosts.insert(m[2]);
        log.gpu_name = m[3];
      } else if (op.empty() && std::regex_search(line, m, op_re)) {
        op = m[1];
      }
      if (line.find("out-of-place") != std::string::npos) in_results = true;
      continue;
    }
    if (!in_results) {
      if (line.find("NCCL INFO") != std::string::npos) continue;  // NCCL_DEBUG chatter before the table
      throw ConfigError(fmt::format("{}:{}: unexpected text before the results table: \"{}\"", file, lineno, line.substr(0, 60)));
    }
    if (line.find("NCCL INFO") != std::string::npos || line.find("NCCL WARN") != std::string::npos) continue;
    std::istringstream ls(line);
    std::vector<std::string> f;
    for (std::string w; ls >> w;) f.push_back(w);
    // size count type redop root time algbw busbw #wrong [time algbw busbw #wrong]
    if (f.size() < 9) throw ConfigError(fmt::format("{}:{}: truncated result row (expected at least 9 columns, got {})", file, lineno, f.size()));
    try {
      NcclTestsLog::Row r;
      r.bytes = std::stod(f[0]);
      r.time_s = std::stod(f[5]) * 1e-6;
      r.algbw_gbps = std::stod(f[6]);
      r.busbw_gbps = std::stod(f[7]);
      if (!(r.bytes > 0 && r.time_s > 0)) throw std::invalid_argument("non-positive");
      if (f[8] != "0" && f[8] != "N/A")
        throw ConfigError(fmt::format("{}:{}: the run reported {} wrong results at {} bytes; refusing to import it", file, lineno, f[8], f[0]));
      log.rows.push_back(r);
    } catch (const std::invalid_argument&) {
      throw ConfigError(fmt::format("{}:{}: not a result row: \"{}\"", file, lineno, line.substr(0, 60)));
    } catch (const std::out_of_range&) {
      throw ConfigError(fmt::format("{}:{}: number out of range in \"{}\"", file, lineno, line.substr(0, 60)));
    }
  }
  if (log.rows.empty()) throw ConfigError(file + ": no nccl-tests result rows found (is this an nccl-tests log?)");
  if (op.empty()) throw ConfigError(file + ": cannot tell which collective this is; pass --op");
  bool known = false;
  for (const auto& k : kOps) known = known || k == op;
  if (!known) throw ConfigError(file + ": unknown collective \"" + op + "\"");
  log.op = canonical_op(op);
  if (log.ranks == 0) throw ConfigError(file + ": no '#  Rank ... on HOST device ...' lines: cannot tell the rank count");
  log.nodes = static_cast<std::int64_t>(hosts.size());
  return log;
}

std::vector<std::string> merge_nccl_tests(Json& profile, const NcclTestsLog& log) {
  std::vector<std::string> notes;
  Json& pts = profile["network"]["collective_points"];
  if (!pts.is_array()) pts = Json::array();
  Json kept = Json::array();
  std::int64_t replaced = 0;
  for (const auto& p : pts) {
    if (p.value("op", "") == log.op && p.value("ranks", 0) == log.ranks && p.value("nodes", 1) == log.nodes) ++replaced;
    else kept.push_back(p);
  }
  if (replaced)
    notes.push_back(fmt::format("replaced {} existing {} points for {} ranks on {} node(s)", replaced, log.op, log.ranks, log.nodes));
  const std::string src = fmt::format("imported: nccl-tests {} log {} ({} ranks, {} node(s), {}{})", log.op, log.file, log.ranks, log.nodes,
                                      log.gpu_name, log.nccl_version.empty() ? "" : ", NCCL " + log.nccl_version);
  for (const auto& r : log.rows)
    kept.push_back({{"op", log.op}, {"ranks", log.ranks}, {"nodes", log.nodes}, {"bytes", r.bytes}, {"time_s", r.time_s},
                    {"algo", "nccl default"}, {"busbw_gbps", r.busbw_gbps}, {"algbw_gbps", r.algbw_gbps}, {"source", src}});
  pts = kept;
  notes.push_back(fmt::format("added {} {} points from {}", log.rows.size(), log.op, log.file));
  return notes;
}

}  // namespace parasim
