// The Python module: parasim.run / check / collective / sweep / plan return the same JSON as the
// CLI's --json, as Python dicts; parasim.report writes or returns the page `parasim report` writes.
// Errors: bad input raises parasim.ConfigError (a ValueError) with the CLI's message. Adding a
// command: wrap its library function the way run() does below, one m.def each, and list it in
// docs/python.md.
#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <optional>
#include <set>
#include <thread>
#include <vector>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "sim/planning/sweep.h"
#include "sim/scenario/measured.h"
#include "sim/simulation.h"
#include "tools/cli_checks.h"
#include "tools/collective.h"
#include "tools/data_dir.h"
#include "tools/plan_document.h"
#include "tools/output_file.h"
#include "tools/report.h"
#include "tools/report_document.h"
#include "tools/validation.h"

namespace py = pybind11;
using namespace parasim;

namespace {

// Directory of this shared object: the build tree's python/, whose ../share/parasim is the data.
std::string module_dir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&module_dir), &info) == 0 || !info.dli_fname) return "";
  return std::filesystem::absolute(info.dli_fname).parent_path().string();
}

std::string data_dir(const std::optional<std::string>& given) {
  DataDirCandidates c;
  c.flag = given;
  if (const char* d = std::getenv("PARASIM_DATA_DIR")) c.env = d;
  c.binary_dir = module_dir();
  return resolve_data_dir(c);
}

// A JSON pointer's segment for a dict key (RFC 6901: "~" as "~0", "/" as "~1").
std::string pointer_segment(const std::string& key) {
  std::string out;
  for (char c : key) out += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
  return out;
}

// The JSON pointer of the first float in `o` that JSON cannot write (NaN, infinity), in the order
// json.dumps writes them: depth first, without recursion, each dict or list visited once (a
// cycle after it is not followed); "" when none is found.
std::string non_finite_at(const py::handle& root) {
  std::vector<std::pair<py::handle, std::string>> todo{{root, ""}};
  std::set<const PyObject*> seen;
  while (!todo.empty()) {
    auto [o, at] = todo.back();
    todo.pop_back();
    if (py::isinstance<py::float_>(o)) {
      if (!std::isfinite(o.cast<double>())) return at.empty() ? "/" : at;
      continue;
    }
    if (!seen.insert(o.ptr()).second) continue;
    std::vector<std::pair<py::handle, std::string>> kids;
    if (py::isinstance<py::dict>(o)) {
      for (const auto& [k, v] : py::reinterpret_borrow<py::dict>(o)) kids.emplace_back(v, at + "/" + pointer_segment(py::str(k).cast<std::string>()));
    } else if (py::isinstance<py::list>(o) || py::isinstance<py::tuple>(o)) {
      std::size_t i = 0;
      for (const auto& v : o) kids.emplace_back(v, at + "/" + std::to_string(i++));
    }
    todo.insert(todo.end(), kids.rbegin(), kids.rend());  // depth first, in order
  }
  return "";
}

// A dict or list as JSON, through Python's json (allow_nan=False). What JSON cannot hold is bad
// input: a NaN or infinity (named by its pointer), a cycle, nesting past Python's recursion
// limit, an object json cannot write, an integer beyond a double.
Json to_json(const py::object& o) {
  std::string text;
  try {
    text = py::module_::import("json").attr("dumps")(o, py::arg("allow_nan") = false).cast<std::string>();
  } catch (py::error_already_set& e) {
    const bool bad_input = e.matches(PyExc_ValueError) || e.matches(PyExc_TypeError) || e.matches(PyExc_RecursionError);
    if (!bad_input) throw;
    const std::string what = e.what();
    if (e.matches(PyExc_ValueError) && what.find("Out of range float") != std::string::npos) {
      const std::string at = non_finite_at(o);
      throw ConfigError("<dict>: " + (at.empty() ? std::string("/") : at) +
                        ": expected a number, got a non-finite float (JSON has no NaN or infinity)");
    }
    throw ConfigError("<dict>: not JSON: " + what.substr(0, what.find('\n')));
  }
  try {
    return Json::parse(text);
  } catch (const Json::exception& e) {
    throw ConfigError(std::string("<dict>: not JSON: ") + std::string(e.what()).substr(0, 200));
  }
}

py::object to_py(const Json& j) { return py::module_::import("json").attr("loads")(j.dump()); }

// A path (str or os.PathLike) as a string, or nullopt for anything else.
std::optional<std::string> as_path(const py::object& o) {
  if (py::isinstance<py::str>(o)) return o.cast<std::string>();
  if (py::hasattr(o, "__fspath__")) return o.attr("__fspath__")().cast<std::string>();
  return std::nullopt;
}

py::object run(const py::object& scenario, const std::optional<std::string>& dd) {
  const std::string dir = data_dir(dd);
  Scenario sc;
  if (const auto path = as_path(scenario)) {
    const Json root = read_json_file(*path);  // read once, as the CLI does
    const bool measured = root.is_object() && root.contains("schema") && root["schema"] == "parasim.measured/1";
    sc = measured ? parse_measured(root, *path, dir).scenario : parse_scenario(root, *path, dir);
  } else if (py::isinstance<py::dict>(scenario)) {
    sc = parse_scenario(to_json(scenario), "<dict>", dir);
  } else {
    throw py::type_error("parasim.run: expected a scenario dict or a path to a scenario JSON file");
  }
  const Registries reg;
  Json j = result_json(simulate(sc, reg).result);
  j["resolved_scenario"] = sc.resolved();  // as `parasim run --json` prints it
  return to_py(j);
}

py::object check(const py::object& measured, const std::optional<std::string>& dd, double tolerance) {
  std::vector<std::string> files;
  if (const auto path = as_path(measured)) files.push_back(*path);
  else
    for (const py::handle& h : measured) files.push_back(as_path(py::reinterpret_borrow<py::object>(h)).value_or(""));
  const std::string dir = data_dir(dd);
  Tolerances tol;
  tol.default_tolerance = checked_number("parasim.check: tolerance", tolerance, 0, true);
  const Registries reg;
  std::vector<RunCheck> checks;
  for (const auto& f : files) checks.push_back(check_run(load_measured(f, dir), reg, tol));
  return to_py(checks_json(checks));
}

py::object collective(const CollectiveQuery& base, const py::object& bytes, const std::optional<std::string>& dd) {
  CollectiveQuery q = base;
  q.bytes = py::isinstance<py::str>(bytes) ? bytes.cast<std::string>() : py::str(bytes).cast<std::string>();
  return to_py(predict_collective(q, data_dir(dd)));
}

// Runs fn (which stops early once `stop` is set) on another thread, while this one checks Python's
// signals every 0.1 s, taking the GIL for that moment only: Ctrl-C sets `stop`, and once fn has
// returned the KeyboardInterrupt is raised in place of its result.
template <class F>
auto interruptible(std::atomic<bool>& stop, F&& fn) -> decltype(fn()) {
  std::packaged_task<decltype(fn())()> task(std::forward<F>(fn));
  auto result = task.get_future();
  bool interrupted = false;
  {
    py::gil_scoped_release nogil;
    std::thread worker(std::move(task));
    while (result.wait_for(std::chrono::milliseconds(100)) != std::future_status::ready) {
      py::gil_scoped_acquire gil;
      if (!interrupted && PyErr_CheckSignals() != 0) interrupted = true, stop = true;  // the error is now set
    }
    worker.join();
  }
  if (interrupted) throw py::error_already_set();
  return result.get();
}


// vary: {key: [values]}, each key a short name or a JSON pointer (as `--vary KEY=V1,V2`), each
// value taken as the JSON it is (a Python 2 stays a number, "2" a string).
py::object sweep(const py::object& scenario, const py::dict& vary, const std::string& objective_name, double price, int jobs,
                 const std::optional<std::string>& dd) {
  const std::string dir = data_dir(dd);
  const Objective objective = parse_objective(objective_name, "objective");
  checked_number("parasim.sweep: price_per_gpu_hour", price, 0, false);
  SweepSpec spec;
  if (const auto path = as_path(scenario)) {
    spec.file = *path;
    spec.base = read_json_file(*path);
  } else if (py::isinstance<py::dict>(scenario)) {
    spec.file = "<dict>";
    spec.base = to_json(scenario);
  } else {
    throw py::type_error("parasim.sweep: expected a scenario dict or a path to a scenario JSON file");
  }
  if (vary.empty()) throw ConfigError("parasim.sweep: vary is empty; expected {key: [values], ...}");
  for (const auto& [k, v] : vary) {
    const Json values = to_json(py::reinterpret_borrow<py::object>(v));
    if (!values.is_array() || values.empty()) throw ConfigError("vary[" + py::str(k).cast<std::string>() + "]: expected a non-empty list");
    std::string arg = py::str(k).cast<std::string>() + "=";
    for (const Json& x : values) arg += (x.is_string() ? x.get<std::string>() : x.dump()) + (&x == &values.back() ? "" : ",");
    VaryAxis axis = parse_vary(arg);  // the key's name and pointer as the CLI resolves them
    axis.values = values;
    spec.axes.push_back(std::move(axis));
  }
  std::atomic<bool> stop{false};
  EvalOptions opt;
  opt.jobs = thread_count(jobs);
  opt.stop = &stop;
  const Registries reg;
  const Evaluated ev = interruptible(stop, [&] { return run_sweep(spec, dir, reg, objective, opt); });
  return to_py(sweep_json(spec, ev, objective, price));
}

// The keyword options of parasim.plan beyond the job, by the CLI's option names (dashes as underscores).
void set_plan_option(PlanOpts& o, const std::string& k, const py::handle& v) {
  if (k == "gpus_range") o.range = py::str(v).cast<std::string>();
  else if (k == "tokens") o.tokens = v.cast<double>();
  else if (k == "price_per_gpu_hour") o.price = v.cast<double>();
  else if (k == "deadline_days") o.deadline_days = v.cast<double>();
  else if (k == "headroom") o.headroom = v.cast<double>();
  else if (k == "objective") o.objective = v.cast<std::string>();
  else if (k == "base") o.base = py::str(v).cast<std::string>();
  else if (k == "allow_cross_node_tp") o.cross_node_tp = v.cast<bool>();
  else if (k == "max_micro_batch") o.max_mb = v.cast<std::int64_t>();
  else if (k == "max_vpp") o.max_vpp = v.cast<std::int64_t>();
  else if (k == "jobs") o.jobs = v.cast<int>();
  else if (k == "top") o.top = v.cast<std::int64_t>();
  else if (k == "search") o.search = v.cast<std::string>();
  else
    throw ConfigError("parasim.plan: unknown option \"" + k + "\" (expected gpus_range, tokens, price_per_gpu_hour, deadline_days, "
                      "headroom, objective, base, allow_cross_node_tp, max_micro_batch, max_vpp, top, search, jobs, data_dir)");
}

py::object plan(const std::string& model, const std::string& gpu, std::int64_t gpus, std::int64_t seq, std::int64_t global_batch,
                const py::kwargs& options) {
  PlanOpts o;
  o.model = model, o.gpu = gpu, o.gpus = gpus, o.seq = seq, o.global_batch = global_batch;
  std::optional<std::string> dd;
  for (const auto& [k, v] : options) {
    const std::string key = py::str(k).cast<std::string>();
    if (key == "data_dir") dd = v.is_none() ? std::nullopt : std::optional<std::string>(py::str(v).cast<std::string>());
    else set_plan_option(o, key, v);
  }
  const std::string dir = data_dir(dd);
  std::atomic<bool> stop{false};
  EvalOptions opt;
  opt.jobs = thread_count(o.jobs);
  opt.stop = &stop;
  const Registries reg;
  const PlanOutcome p = interruptible(stop, [&] { return plan_outcome(o, dir, reg, opt, PlanHooks{}); });
  return to_py(plan_json(o, p));
}

// The input of a report: a path (read as the CLI reads it) or a dict, named "<dict>" in messages.
std::pair<Json, std::string> report_input(const py::object& source) {
  if (const auto path = as_path(source)) return {read_json_file(*path), input_name(*path)};
  if (py::isinstance<py::dict>(source)) return {to_json(source), "<dict>"};
  throw py::type_error("parasim.report: expected a path or a dict (a scenario, a Result, a measured run, a sweep or a plan)");
}

// With `output`, writes the report there (its extension picks HTML or Markdown, as `-o` does) and
// returns the path; without, returns the text in `format` ("html" or "md").
py::object report(const py::object& source, const py::object& output, const std::optional<std::string>& format, double tokens,
                  const std::optional<std::string>& dd) {
  const std::string dir = data_dir(dd);
  const std::optional<std::string> out = output.is_none() ? std::nullopt : as_path(output);
  if (!output.is_none() && !out) throw py::type_error("parasim.report: output must be a path or None");
  ReportFormat fmt = ReportFormat::Html;
  if (out) fmt = report_format_of(*out, "output");
  if (format) {
    const ReportFormat asked = report_format_named(*format, "parasim.report: format");
    if (out && asked != fmt) throw ConfigError("parasim.report: format \"" + *format + "\" differs from the output's extension (" + *out + ")");
    fmt = asked;
  }
  TimeToTrainOptions ttt;
  ttt.tokens = checked_number("parasim.report: tokens", tokens, 0, false);
  const auto [doc_json, name] = report_input(source);
  const Registries reg;
  const std::string text = render_report(report_document(doc_json, name, dir, reg, ttt), fmt);
  if (!out) return py::str(text);
  write_output_file(*out, text, true, "output");
  return py::str(*out);
}

}  // namespace

PYBIND11_MODULE(parasim, m) {
  m.doc() = "parasim: discrete-event performance simulator for distributed LLM training (docs/python.md)";
  m.attr("__version__") = PARASIM_VERSION;
  static py::exception<ConfigError> config_error(m, "ConfigError", PyExc_ValueError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const ConfigError& e) {
      PyErr_SetString(config_error.ptr(), e.what());
    } catch (const RangeError& e) {
      PyErr_SetString(config_error.ptr(), e.what());
    }
  });
  m.def("run", &run, py::arg("scenario"), py::arg("data_dir") = py::none(),
        "Simulate one training step of a scenario (a dict, or a path to a scenario or measured-run JSON file); returns "
        "the Result (parasim.result/1) as `parasim run --json` prints it.");
  m.def("check", &check, py::arg("measured"), py::arg("data_dir") = py::none(), py::arg("tolerance") = 0.10,
        "Compare predictions with measured runs (a path or a list of paths to parasim.measured/1 files); returns what "
        "`parasim check --json` prints.");
  m.def(
      "collective",
      [](const std::string& gpu, const std::string& op, const py::object& bytes, std::int64_t ranks, std::int64_t gpus_per_node,
         const std::string& network, const std::string& algorithm, const std::string& protocol, const std::string& inter_node,
         std::int64_t nics_per_node, double nic_gbps, std::int64_t concurrent_groups, bool all, const std::optional<std::string>& dd) {
        CollectiveQuery q;
        q.gpu = gpu, q.op = op, q.ranks = ranks, q.gpus_per_node = gpus_per_node, q.network = network, q.algorithm = algorithm;
        q.protocol = protocol, q.inter_node = inter_node, q.nics_per_node = nics_per_node, q.nic_gbps = nic_gbps;
        q.concurrent_groups = concurrent_groups, q.all = all;
        return collective(q, bytes, dd);
      },
      py::arg("gpu"), py::arg("op") = "all_reduce", py::arg("bytes") = "1GiB", py::arg("ranks") = 8, py::arg("gpus_per_node") = 8,
      py::arg("network") = "analytical", py::arg("algorithm") = "auto", py::arg("protocol") = "auto",
      py::arg("inter_node") = "rail_optimized", py::arg("nics_per_node") = 0, py::arg("nic_gbps") = 0.0,
      py::arg("concurrent_groups") = 1, py::arg("all") = false, py::arg("data_dir") = py::none(),
      "Predict one collective; returns what `parasim collective --json` prints (parasim.collective/1).");
  m.def("sweep", &sweep, py::arg("scenario"), py::kw_only(), py::arg("vary"), py::arg("objective") = "throughput",
        py::arg("price_per_gpu_hour") = 0.0, py::arg("jobs") = 0, py::arg("data_dir") = py::none(),
        "Simulate every combination of vary={key: [values]} (short names or JSON pointers, as `--vary`) on a scenario "
        "(a dict or a path) and rank them; returns what `parasim sweep --json` prints (parasim.sweep/1). jobs=0: one "
        "thread per core.");
  m.def("plan", &plan, py::arg("model"), py::arg("gpu"), py::arg("gpus"), py::arg("seq"), py::arg("global_batch"),
        "Enumerate, prune, simulate and rank every layout of a training job; returns what `parasim plan --json` prints "
        "(parasim.plan/1). Options as the CLI's, dashes as underscores: gpus_range, tokens, price_per_gpu_hour, "
        "deadline_days, headroom, objective, base, allow_cross_node_tp, max_micro_batch, max_vpp, top, search "
        "('bound': only what the top rows need), jobs (0: one per core), data_dir.");
  m.def("report", &report, py::arg("source"), py::arg("output") = py::none(), py::kw_only(), py::arg("format") = py::none(),
        py::arg("tokens") = 0.0, py::arg("data_dir") = py::none(),
        "The page `parasim report` writes, for a scenario, a Result, a measured run, a sweep or a plan (a path or a dict). "
        "With output (a path ending .html, .htm or .md) writes it there and returns the path; without, returns the text "
        "in format ('html', the default, or 'md'). tokens > 0 adds the time to train.");
}
