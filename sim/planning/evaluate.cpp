#include "sim/planning/evaluate.h"

#include <algorithm>
#include <cctype>
#include <mutex>
#include <thread>

namespace parasim {

Json outcome_json(const Outcome& o) {
  if (!o.row) return {{"skipped", o.skipped}, {"skipped_example", o.skipped_example}};
  Json j = row_json(*o.row, 0);
  j["index"] = o.row->index;
  return j;
}

Outcome outcome_from_json(const Json& j) {
  Outcome o;
  if (j.contains("skipped")) {
    o.skipped = j.at("skipped").get<std::string>();
    o.skipped_example = j.value("skipped_example", "");
    return o;
  }
  o.row = row_from_json(j);
  o.row->index = j.at("index").get<std::size_t>();
  return o;
}

std::vector<std::size_t> balanced_share(const std::vector<double>& costs, int parts, int part) {
  std::vector<std::size_t> order(costs.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return costs[a] > costs[b]; });
  std::vector<double> load(static_cast<std::size_t>(std::max(1, parts)), 0.0);
  std::vector<std::size_t> mine;
  for (std::size_t i : order) {
    const auto least = static_cast<std::size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    load[least] += costs[i];
    if (static_cast<int>(least) == part) mine.push_back(i);
  }
  std::sort(mine.begin(), mine.end());
  return mine;
}

double expected_cost(std::int64_t microbatches, const FoldPoints& fold, std::int64_t layers, std::int64_t pp, std::int64_t vpp) {
  const std::int64_t simulated = std::min(microbatches, fold.simulated());
  return static_cast<double>(simulated) * static_cast<double>(layers + pp * vpp);
}

Evaluated evaluate_all(std::size_t n, const std::function<Outcome(std::size_t)>& eval, const EvalOptions& opt) {
  std::vector<std::optional<Outcome>> slots(n);
  // This process's indices: all, or its balanced share of a distributed run.
  std::vector<std::size_t> todo;
  const Distribution* dist = opt.distribution && opt.distribution->parts > 1 ? opt.distribution : nullptr;
  if (dist) {
    std::vector<double> costs(n, 1.0);
    if (opt.cost)
      for (std::size_t i = 0; i < n; ++i) costs[i] = opt.cost(i);
    todo = balanced_share(costs, dist->parts, dist->part);
  } else {
    todo.resize(n);
    for (std::size_t i = 0; i < n; ++i) todo[i] = i;
  }
  std::size_t done = 0;
  std::mutex mu;
  parallel_for(todo.size(), opt.jobs, opt.stop, [&](std::size_t k) {
    const std::size_t i = todo[k];
    Outcome o = eval(i);
    std::lock_guard<std::mutex> lock(mu);
    slots[i] = std::move(o);
    ++done;
    if (opt.progress) opt.progress(done, todo.size());
  });
  if (dist) dist->gather(slots);
  Evaluated ev;
  ev.total = n;
  for (auto& s : slots) {
    if (!s) continue;
    ++ev.evaluated;
    if (s->row) {
      ev.rows.push_back(std::move(*s->row));
    } else {
      ++ev.skipped[s->skipped];
      ev.skipped_examples.emplace(s->skipped, s->skipped_example);
    }
  }
  // A part other than 0 holds its own share only.
  ev.interrupted = ev.evaluated < (dist && !dist->root() ? todo.size() : n);
  return ev;
}

std::string without_file(const std::string& message, const std::string& file) {
  return !file.empty() && message.rfind(file + ": ", 0) == 0 ? message.substr(file.size() + 2) : message;
}

std::string error_kind(const std::string& message, const std::string& file) {
  const std::string m = without_file(message, file);
  std::string out;
  for (size_t i = 0; i < m.size();) {
    const bool after_word = i > 0 && (std::isalnum(static_cast<unsigned char>(m[i - 1])) || m[i - 1] == '_');
    size_t end = i;
    while (end < m.size() && (std::isdigit(static_cast<unsigned char>(m[end])) || m[end] == '.')) ++end;
    const bool word_follows = end < m.size() && std::isalpha(static_cast<unsigned char>(m[end]));  // "80g"
    if (std::isdigit(static_cast<unsigned char>(m[i])) && !after_word && !word_follows) {
      i = end;
      out += 'N';
    } else if (std::isdigit(static_cast<unsigned char>(m[i]))) {
      while (i < m.size() && std::isalnum(static_cast<unsigned char>(m[i]))) out += m[i++];
    } else {
      out += m[i++];
    }
  }
  return out;
}

}  // namespace parasim
