#include "calibrate/import/nccl_tests.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include <fmt/format.h>

namespace parasim {

namespace {
// The collectives a profile holds points for (calibrate/profile/profile.cpp, collective_points/op),
// by nccl-tests' names. reduce_perf is not one: parasim prices no reduce-to-one-rank.
const std::vector<std::string> kOps = {"all_reduce", "all_gather", "reduce_scatter", "alltoall", "broadcast", "sendrecv"};

std::string canonical_op(const std::string& op) {
  if (op == "alltoall") return "all_to_all";
  if (op == "sendrecv") return "send_recv";
  return op;
}
// nccl-tests' name of an op (its binary is alltoall_perf, sendrecv_perf).
std::string nccl_name(const std::string& op) {
  if (op == "all_to_all") return "alltoall";
  if (op == "send_recv") return "sendrecv";
  return op;
}

// The collective of a log: the one it names (its *_perf binary), or --op when it names none.
// --op contradicting the named one is an error: the points would be stored under the wrong op.
std::string pick_op(const std::string& named, const std::string& named_where, const std::string& op_override,
                    const std::string& file) {
  if (!named.empty() && !op_override.empty() && canonical_op(named) != canonical_op(op_override))
    throw ConfigError(fmt::format("{}: --op {} contradicts the log, which ran {}_perf; leave --op out (it is for logs that name "
                                  "no *_perf binary)", named_where, op_override, named));
  const std::string op = nccl_name(named.empty() ? op_override : named);
  if (op.empty()) throw ConfigError(file + ": cannot tell which collective this is; pass --op");
  if (std::find(kOps.begin(), kOps.end(), op) == kOps.end()) {
    std::string valid;
    for (const auto& k : kOps) valid += (valid.empty() ? "" : ", ") + canonical_op(k);
    throw ConfigError(file + ": unknown collective \"" + op + "\" (expected one of " + valid + ")");
  }
  return canonical_op(op);
}

// A whole token as a number: "29x.3" is not 29.
double number_field(const std::string& tok, const char* column, const std::string& where) {
  double v = 0;
  const char* end = tok.data() + tok.size();
  const auto [ptr, ec] = std::from_chars(tok.data(), end, v);
  if (ec == std::errc::result_out_of_range)
    throw ConfigError(fmt::format("{}: column {}: \"{}\" is out of range", where, column, tok));
  if (ec != std::errc() || ptr != end || !std::isfinite(v))
    throw ConfigError(fmt::format("{}: column {}: expected a number, got \"{}\"", where, column, tok));
  return v;
}

// One result row: size count type redop root time algbw busbw #wrong [time algbw busbw #wrong].
NcclTestsLog::Row parse_row(const std::string& line, const std::string& where) {
  std::istringstream ls(line);
  std::vector<std::string> f;
  for (std::string w; ls >> w;) f.push_back(w);
  if (f.size() < 9) throw ConfigError(fmt::format("{}: truncated result row (expected at least 9 columns, got {})", where, f.size()));
  NcclTestsLog::Row r;
  r.where = where;
  r.bytes = number_field(f[0], "size", where);
  r.time_s = number_field(f[5], "time (us)", where) * 1e-6;
  r.algbw_gbps = number_field(f[6], "algbw", where);
  r.busbw_gbps = number_field(f[7], "busbw", where);
  if (!(r.bytes >= 1 && r.bytes <= kMaxPointBytes && r.time_s >= kMinPointTimeS && r.time_s <= kMaxPointTimeS))
    throw ConfigError(fmt::format("{}: size {} bytes or time {} s outside what a profile holds ([1, {:g}] bytes, [{:g}, {:g}] s)", where,
                                  f[0], r.time_s, kMaxPointBytes, kMinPointTimeS, kMaxPointTimeS));
  if (f[8] != "0" && f[8] != "N/A")
    throw ConfigError(fmt::format("{}: the run reported {} wrong results at {} bytes; refusing to import it", where, f[8], f[0]));
  return r;
}

// The header of a text log seen so far: where the run began, its ranks, hosts and GPU names.
struct TextHeader {
  int run_line = 0;
  std::set<std::string> ranks;  // as written: a rank number may be any run of digits
  std::set<std::string> hosts;
  std::string named_op, named_where;
};

// A '#' line: a run's start, a device line or the table header. Refuses a second run in one file
// and a log whose ranks ran on different GPUs.
void header_line(const std::string& line, const std::string& where, int lineno, bool seen_rows, TextHeader& h, NcclTestsLog& log) {
  static const std::regex rank_re(R"(^#\s+Rank\s+(\d+)\s+Group\s+\d+\s+Pid\s+\d+\s+on\s+(\S+)\s+device\s+\d+\s+\[[^\]]*\]\s+(.+?)\s*$)");
  static const std::regex op_re(R"((\w+)_perf)");
  std::smatch m;
  const bool starts = line.find("Collective test starting") != std::string::npos;
  const bool is_rank = std::regex_match(line, m, rank_re);
  if ((starts && h.run_line) || ((starts || is_rank) && seen_rows))
    throw ConfigError(fmt::format("{}: a second run starts here (the first began at line {}); the file holds appended runs, which "
                                  "would mix two group shapes: split it into one file per run",
                                  where, h.run_line ? h.run_line : 1));
  if (starts) h.run_line = lineno;
  if (is_rank) {
    if (!h.ranks.insert(m[1]).second)
      throw ConfigError(fmt::format("{}: rank {} is listed twice (two runs in one file?)", where, std::string(m[1])));
    h.hosts.insert(m[2]);
    if (!log.gpu_name.empty() && log.gpu_name != m[3].str())
      throw ConfigError(fmt::format("{}: this rank ran on \"{}\", rank 0 on \"{}\" ({}); a profile holds one GPU's figures", where,
                                    std::string(m[3]), log.gpu_name, log.gpu_where));
    if (log.gpu_name.empty()) log.gpu_where = where;
    log.gpu_name = m[3];
  } else if (h.named_op.empty() && std::regex_search(line, m, op_re)) {
    h.named_op = m[1];
    h.named_where = where;
  }
}
}  // namespace

NcclTestsLog parse_nccl_tests(const std::string& text, const std::string& file, const std::string& op_override) {
  NcclTestsLog log;
  log.file = file;
  TextHeader h;
  std::istringstream in(text);
  std::string line;
  int lineno = 0;
  bool in_results = false;
  static const std::regex ver_re(R"(NCCL version (\S+))");
  while (std::getline(in, line)) {
    ++lineno;
    const std::string where = fmt::format("{}:{}", file, lineno);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::smatch m;
    if (std::regex_search(line, m, ver_re)) log.nccl_version = m[1];
    if (line.empty()) continue;
    if (line[0] == '#') {
      header_line(line, where, lineno, !log.rows.empty(), h, log);
      if (line.find("out-of-place") != std::string::npos) in_results = true;
      continue;
    }
    if (!in_results) {
      if (line.find("NCCL INFO") != std::string::npos) continue;  // NCCL_DEBUG chatter before the table
      throw ConfigError(fmt::format("{}: unexpected text before the results table: \"{}\"", where, line.substr(0, 60)));
    }
    if (line.find("NCCL INFO") != std::string::npos || line.find("NCCL WARN") != std::string::npos) continue;
    log.rows.push_back(parse_row(line, where));
  }
  if (log.rows.empty()) throw ConfigError(file + ": no nccl-tests result rows found (is this an nccl-tests log?)");
  log.op = pick_op(h.named_op, h.named_where, op_override, file);
  if (h.ranks.empty()) throw ConfigError(file + ": no '#  Rank ... on HOST device ...' lines: cannot tell the rank count");
  log.ranks = static_cast<std::int64_t>(h.ranks.size());
  log.nodes = static_cast<std::int64_t>(h.hosts.size());
  return log;
}

namespace {
// config.devices: one entry per process (the first GPU of its line), each process driving
// nthreads x ngpus GPUs. A process listed twice (same host and pid, or the same rank) is a damaged
// or concatenated file, not more ranks.
void json_devices(const Json& cfg, const std::string& file, NcclTestsLog& log) {
  auto fail = [&](const std::string& ptr, const std::string& msg) -> void { throw_config(file, ptr, msg); };
  const auto count = [&](const char* key) -> std::int64_t {
    if (!cfg.contains(key) || !cfg[key].is_number_integer() || cfg[key].get<std::int64_t>() < 1 || cfg[key].get<std::int64_t>() > 1 << 20)
      fail(std::string("/config/") + key, "expected a positive integer");
    return cfg[key].get<std::int64_t>();
  };
  const std::int64_t per_process = count("nthreads") * count("ngpus");
  if (!cfg.contains("devices") || !cfg["devices"].is_array() || cfg["devices"].empty())
    fail("/config/devices", "expected the list of processes' devices");
  std::set<std::string> hosts;
  std::map<std::string, size_t> seen;  // "host pid" or "rank N" -> first index
  for (size_t i = 0; i < cfg["devices"].size(); ++i) {
    const Json& d = cfg["devices"][i];
    const std::string ptr = "/config/devices/" + std::to_string(i);
    if (!d.is_object() || !d.contains("hostname") || !d["hostname"].is_string()) fail(ptr + "/hostname", "expected a string");
    const std::string host = d["hostname"].get<std::string>();
    hosts.insert(host);
    std::vector<std::string> keys;
    if (d.contains("pid") && d["pid"].is_number_integer()) keys.push_back(host + " pid " + d["pid"].dump());
    if (d.contains("rank") && d["rank"].is_number_integer()) keys.push_back("rank " + d["rank"].dump());
    for (const auto& k : keys)
      if (const auto [it, fresh] = seen.emplace(k, i); !fresh)
        fail(ptr, fmt::format("{} is listed twice (first at /config/devices/{}): a repeated device list, not more ranks", k, it->second));
    if (d.contains("device_info") && d["device_info"].is_string()) {
      const std::string gpu = d["device_info"].get<std::string>();
      if (!log.gpu_name.empty() && gpu != log.gpu_name)
        fail(ptr + "/device_info", fmt::format("this process ran on \"{}\", an earlier one on \"{}\"; a profile holds one GPU's figures",
                                               gpu, log.gpu_name));
      if (log.gpu_name.empty()) log.gpu_where = file + ": " + ptr + "/device_info";
      log.gpu_name = gpu;
    }
  }
  log.ranks = per_process * static_cast<std::int64_t>(cfg["devices"].size());
  log.nodes = static_cast<std::int64_t>(hosts.size());
}

// results[i].out_of_place: {time (or cpu_time) in us, alg_bw, bus_bw, nwrong}.
NcclTestsLog::Row json_row(const Json& r, const std::string& file, const std::string& ptr) {
  auto fail = [&](const std::string& p, const std::string& msg) -> void { throw_config(file, p, msg); };
  if (!r.is_object() || !r.contains("size") || !r["size"].is_number() || r["size"].get<double>() <= 0)
    fail(ptr + "/size", "expected a positive byte count");
  if (!r.contains("out_of_place") || !r["out_of_place"].is_object()) fail(ptr + "/out_of_place", "expected {time, alg_bw, bus_bw, nwrong}");
  const Json& o = r["out_of_place"];
  const char* tkey = o.contains("time") ? "time" : "cpu_time";
  NcclTestsLog::Row row;
  row.where = file + ": " + ptr;
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
    fail(ptr + "/out_of_place/nwrong",
         fmt::format("the run reported {} wrong results at {} bytes; refusing to import it", o["nwrong"].dump(), row.bytes));
  return row;
}
}  // namespace

NcclTestsLog parse_nccl_tests_json(const std::string& text, const std::string& file, const std::string& op_override) {
  const Json j = parse_json_text(text, file, "nccl-tests writes the JSON file as it runs: was the run cut short?");
  auto fail = [&](const std::string& ptr, const std::string& msg) -> void { throw_config(file, ptr, msg); };
  if (!j.is_object()) fail("", "expected the nccl-tests JSON object");
  if (!j.contains("version") || !j["version"].is_number_integer()) fail("/version", "expected the nccl-tests JSON format version (an integer)");
  if (j["version"].get<std::int64_t>() != 2) fail("/version", fmt::format("format version {} is not supported (expected 2)", j["version"].dump()));
  NcclTestsLog log;
  log.file = file;
  std::string named;
  static const std::regex op_re(R"((\w+)_perf)");
  if (j.contains("args") && j["args"].is_array() && !j["args"].empty() && j["args"][0].is_string()) {
    std::smatch m;
    const std::string prog = j["args"][0].get<std::string>();
    if (std::regex_search(prog, m, op_re)) named = m[1];
  }
  if (j.contains("nccl_version") && j["nccl_version"].is_number_integer()) {
    const std::int64_t v = j["nccl_version"].get<std::int64_t>();  // NCCL_VERSION_CODE: major*10000 + minor*100 + patch
    log.nccl_version = fmt::format("{}.{}.{}", v / 10000, (v / 100) % 100, v % 100);
  }
  if (!j.contains("config") || !j["config"].is_object()) fail("/config", "missing: cannot tell the rank count");
  json_devices(j["config"], file, log);
  if (!j.contains("results") || !j["results"].is_array()) fail("/results", "missing: no result rows (was the run cut short?)");
  for (size_t i = 0; i < j["results"].size(); ++i) log.rows.push_back(json_row(j["results"][i], file, "/results/" + std::to_string(i)));
  if (log.rows.empty()) fail("/results", "no result rows");
  log.op = pick_op(named, file + ": /args/0", op_override, file);
  return log;
}

NcclTestsLog parse_nccl_tests_any(const std::string& text, const std::string& file, const std::string& op_override) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '{') return parse_nccl_tests_json(text, file, op_override);
  return parse_nccl_tests(text, file, op_override);
}

void check_nccl_tests_log(const NcclTestsLog& log, const Profile& profile) {
  if (!log.gpu_name.empty() && log.gpu_name != profile.device.name)
    throw ConfigError(fmt::format("{}: the log ran on \"{}\", but profile {} is for \"{}\"; import it into a profile of that GPU "
                                  "(--gpu)", log.gpu_where, log.gpu_name, profile.name, profile.device.name));
  if (log.ranks < 2) return;
  const double link = profile.nvlink_gbps.value;
  const double share = static_cast<double>(log.ranks - 1) / static_cast<double>(log.ranks);
  for (const auto& r : log.rows) {
    const double gbps = r.bytes / r.time_s / 1e9 * share;
    if (gbps > link)
      throw ConfigError(fmt::format("{}: {:g} bytes in {:g} us moves {:.4g} GB/s through each GPU's links, above the {:g} GB/s "
                                    "per direction of profile {} (network.nvlink_gbps); no GPU moves data that fast: a wrong "
                                    "size or time?", r.where, r.bytes, r.time_s * 1e6, gbps, link, profile.name));
  }
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
