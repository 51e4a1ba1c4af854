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
      if (!(r.bytes >= 1 && r.bytes <= kMaxPointBytes && r.time_s >= kMinPointTimeS && r.time_s <= kMaxPointTimeS))
        throw ConfigError(fmt::format("{}:{}: size {} bytes or time {} s outside what a profile holds ([1, {:g}] bytes, [{:g}, {:g}] s)",
                                      file, lineno, f[0], r.time_s, kMaxPointBytes, kMinPointTimeS, kMaxPointTimeS));
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

NcclTestsLog parse_nccl_tests_json(const std::string& text, const std::string& file, const std::string& op_override) {
  Json j;
  try {
    j = Json::parse(text);
  } catch (const Json::parse_error& e) {
    const bool cut = e.byte >= text.size();
    throw ConfigError(fmt::format("{}: {} at byte {}{}", file, cut ? "JSON ends early" : "not valid JSON", e.byte,
                                  cut ? " (nccl-tests writes the JSON file as it runs: was the run cut short?)" : ""));
  }
  auto fail = [&](const std::string& ptr, const std::string& msg) -> void { throw_config(file, ptr, msg); };
  if (!j.is_object()) fail("", "expected the nccl-tests JSON object");
  if (!j.contains("version") || !j["version"].is_number_integer()) fail("/version", "expected the nccl-tests JSON format version (an integer)");
  if (j["version"].get<int>() != 2) fail("/version", fmt::format("format version {} is not supported (expected 2)", j["version"].get<int>()));
  NcclTestsLog log;
  log.file = file;
  std::string op = op_override;
  static const std::regex op_re(R"((\w+)_perf)");
  if (op.empty() && j.contains("args") && j["args"].is_array() && !j["args"].empty() && j["args"][0].is_string()) {
    std::smatch m;
    const std::string prog = j["args"][0].get<std::string>();
    if (std::regex_search(prog, m, op_re)) op = m[1];
  }
  if (j.contains("nccl_version") && j["nccl_version"].is_number_integer()) {
    const int v = j["nccl_version"].get<int>();  // NCCL_VERSION_CODE: major*10000 + minor*100 + patch
    log.nccl_version = fmt::format("{}.{}.{}", v / 10000, (v / 100) % 100, v % 100);
  }
  if (!j.contains("config") || !j["config"].is_object()) fail("/config", "missing: cannot tell the rank count");
  const Json& cfg = j["config"];
  const auto count = [&](const char* key) -> std::int64_t {
    if (!cfg.contains(key) || !cfg[key].is_number_integer() || cfg[key].get<std::int64_t>() < 1)
      fail(std::string("/config/") + key, "expected a positive integer");
    return cfg[key].get<std::int64_t>();
  };
  const std::int64_t per_process = count("nthreads") * count("ngpus");
  if (!cfg.contains("devices") || !cfg["devices"].is_array() || cfg["devices"].empty())
    fail("/config/devices", "expected the list of processes' devices");
  std::set<std::string> hosts;
  for (size_t i = 0; i < cfg["devices"].size(); ++i) {
    const Json& d = cfg["devices"][i];
    const std::string ptr = "/config/devices/" + std::to_string(i);
    if (!d.is_object() || !d.contains("hostname") || !d["hostname"].is_string()) fail(ptr + "/hostname", "expected a string");
    hosts.insert(d["hostname"].get<std::string>());
    if (d.contains("device_info") && d["device_info"].is_string()) log.gpu_name = d["device_info"].get<std::string>();
  }
  // One devices entry per process (the first GPU of its line), each process driving per_process GPUs.
  log.ranks = per_process * static_cast<std::int64_t>(cfg["devices"].size());
  log.nodes = static_cast<std::int64_t>(hosts.size());
  if (!j.contains("results") || !j["results"].is_array()) fail("/results", "missing: no result rows (was the run cut short?)");
  for (size_t i = 0; i < j["results"].size(); ++i) {
    const Json& r = j["results"][i];
    const std::string ptr = "/results/" + std::to_string(i);
    if (!r.is_object() || !r.contains("size") || !r["size"].is_number() || r["size"].get<double>() <= 0)
      fail(ptr + "/size", "expected a positive byte count");
    if (!r.contains("out_of_place") || !r["out_of_place"].is_object()) fail(ptr + "/out_of_place", "expected {time, alg_bw, bus_bw, nwrong}");
    const Json& o = r["out_of_place"];
    const char* tkey = o.contains("time") ? "time" : "cpu_time";
    NcclTestsLog::Row row;
    row.bytes = r["size"].get<double>();
    for (const char* k : {tkey, "alg_bw", "bus_bw"})
      if (!o.contains(k) || !o[k].is_number() || !(o[k].get<double>() > 0))
        fail(ptr + "/out_of_place/" + k, "expected a positive number, got " + (o.contains(k) ? o[k].dump() : std::string("nothing")));
    row.time_s = o[tkey].get<double>() * 1e-6;
    if (!(row.bytes >= 1 && row.bytes <= kMaxPointBytes))
      fail(ptr + "/size", fmt::format("expected a byte count in [1, {:g}], got {:g}", kMaxPointBytes, row.bytes));
    if (!(row.time_s >= kMinPointTimeS && row.time_s <= kMaxPointTimeS))
      fail(ptr + "/out_of_place/" + tkey, fmt::format("expected a time in [{:g}, {:g}] s, got {:g} s", kMinPointTimeS, kMaxPointTimeS, row.time_s));
    row.algbw_gbps = o["alg_bw"].get<double>();
    row.busbw_gbps = o["bus_bw"].get<double>();
    if (o.contains("nwrong") && !o["nwrong"].is_null() && (!o["nwrong"].is_number() || o["nwrong"].get<double>() != 0))
      throw_config(file, ptr + "/out_of_place/nwrong",
                   fmt::format("the run reported {} wrong results at {} bytes; refusing to import it", o["nwrong"].dump(), row.bytes));
    log.rows.push_back(row);
  }
  if (log.rows.empty()) fail("/results", "no result rows");
  if (op.empty()) throw ConfigError(file + ": cannot tell which collective this is (args[0] names no *_perf binary); pass --op");
  bool known = false;
  for (const auto& k : kOps) known = known || k == op;
  if (!known) throw ConfigError(file + ": unknown collective \"" + op + "\"");
  log.op = canonical_op(op);
  return log;
}

NcclTestsLog parse_nccl_tests_any(const std::string& text, const std::string& file, const std::string& op_override) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '{') return parse_nccl_tests_json(text, file, op_override);
  return parse_nccl_tests(text, file, op_override);
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
