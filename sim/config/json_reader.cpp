#include "sim/config/json_reader.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string_view>

#include "sim/core/registry.h"

namespace parasim {

namespace {
// A first pass over the text that the DOM parser does not make: it knows the JSON pointer of
// every value, so it can refuse a key given twice in one object (nlohmann keeps the last) and
// name where a number beyond double range stands.
class StrictSax : public nlohmann::json_sax<Json> {
 public:
  StrictSax(std::string file, std::size_t size, std::string cut_hint) : file_(std::move(file)), size_(size), cut_hint_(std::move(cut_hint)) {}
  bool null() override { return value(); }
  bool boolean(bool) override { return value(); }
  bool number_integer(number_integer_t) override { return value(); }
  bool number_unsigned(number_unsigned_t) override { return value(); }
  bool number_float(number_float_t, const string_t&) override { return value(); }
  bool string(string_t&) override { return value(); }
  bool binary(binary_t&) override { return value(); }
  bool start_object(std::size_t) override {
    frames_.push_back({true, {}, "", 0});
    return true;
  }
  bool key(string_t& k) override {
    Frame& f = frames_.back();
    if (!f.keys.insert(k).second) throw_config(file_, pointer_child(pointer(frames_.size() - 1), k), "key given twice in one object");
    f.key = k;
    where_ = pointer(frames_.size());
    return true;
  }
  bool end_object() override { return pop(); }
  bool start_array(std::size_t) override {
    frames_.push_back({false, {}, "", 0});
    where_ = pointer(frames_.size());
    return true;
  }
  bool end_array() override { return pop(); }
  bool parse_error(std::size_t byte, const std::string&, const nlohmann::detail::exception& ex) override {
    if (ex.id == 406)  // number overflow
      throw_config(file_, where_, "a number beyond the range of a double (about 1.8e308)");
    if (byte >= size_ && !cut_hint_.empty()) throw ConfigError(file_ + ": JSON ends early at byte " + std::to_string(byte) + " (" + cut_hint_ + ")");
    throw ConfigError(file_ + ": not valid JSON: " + ex.what());
  }

 private:
  struct Frame {
    bool object;
    std::set<std::string> keys;
    std::string key;
    std::size_t index;
  };
  // The pointer of the value the first `depth` frames lead to.
  std::string pointer(std::size_t depth) const {
    std::string p;
    for (std::size_t i = 0; i < depth; ++i)
      p = frames_[i].object ? pointer_child(p, frames_[i].key) : p + "/" + std::to_string(frames_[i].index);
    return p;
  }
  // A value was read: in an array, the next one (which may be a number that fails to parse) has
  // the next index. where_ is the pointer of the value the parser reads next.
  bool value() {
    if (!frames_.empty() && !frames_.back().object) {
      ++frames_.back().index;
      where_ = pointer(frames_.size());
    }
    return true;
  }
  bool pop() {
    frames_.pop_back();
    return value();
  }
  std::string file_;
  std::size_t size_;
  std::string cut_hint_;
  std::vector<Frame> frames_;
  std::string where_;
};
}  // namespace

Json parse_json_text(const std::string& text, const std::string& file, const std::string& cut_hint) {
  StrictSax sax(file, text.size(), cut_hint);
  Json::sax_parse(text, &sax);
  return Json::parse(text);
}

std::string read_text_file(const std::string& path) {
  std::error_code ec;
  if (path != "-" && std::filesystem::is_directory(path, ec)) throw ConfigError(path + ": is a directory, expected a file");
  std::ifstream file;
  if (path != "-") {
    file.open(path, std::ios::binary);
    if (!file) throw ConfigError(path + ": cannot open file");
  }
  std::istream& in = path == "-" ? std::cin : file;
  // Read in chunks up to a bound, so that an endless source (/dev/zero, a pipe that never closes
  // with data) is refused instead of filling memory: every input parasim reads is far smaller.
  constexpr std::size_t kMaxInputBytes = std::size_t{256} << 20;
  std::string text;
  std::array<char, 1 << 16> buf{};
  while (in.read(buf.data(), static_cast<std::streamsize>(buf.size())) || in.gcount() > 0) {
    text.append(buf.data(), static_cast<std::size_t>(in.gcount()));
    if (text.size() > kMaxInputBytes) throw ConfigError(input_name(path) + ": larger than 256 MiB; not an input parasim reads");
  }
  if (in.bad()) throw ConfigError(input_name(path) + ": cannot read file");
  return text;
}

std::string input_name(const std::string& path) { return path == "-" ? "<stdin>" : path; }

Json read_json_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw ConfigError(path + ": is a directory, expected a JSON file");
  return parse_json_text(read_text_file(path), input_name(path));
}

std::vector<std::string> json_stems(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec))
    if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::string pointer_child(const std::string& pointer, const std::string& key) {
  std::string out = pointer + "/";
  for (char c : key) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

std::string generic_pointer(const std::string& pointer) {
  std::string out;
  size_t i = 0;
  while (i < pointer.size()) {
    const size_t next = pointer.find('/', i + 1);
    const std::string seg = pointer.substr(i + 1, next == std::string::npos ? std::string::npos : next - i - 1);
    const bool index = !seg.empty() && std::all_of(seg.begin(), seg.end(), [](unsigned char c) { return std::isdigit(c); });
    out += "/" + (index ? std::string("*") : seg);
    if (next == std::string::npos) break;
    i = next;
  }
  return out;
}

void throw_config(const std::string& file, const std::string& pointer, const std::string& msg) {
  throw ConfigError(file + ": " + (pointer.empty() ? "/" : pointer) + ": " + msg);
}

namespace {
std::string type_name(const Json& j) {
  if (j.is_null()) return "null";
  if (j.is_boolean()) return "a boolean";
  if (j.is_number_integer() || j.is_number_unsigned()) return "an integer";
  if (j.is_number()) return "a number";
  if (j.is_string()) return "a string";
  if (j.is_array()) return "an array";
  return "an object";
}
}  // namespace

JsonObject::JsonObject(const Json& j, std::string file, std::string pointer, const std::vector<std::string>* declared)
    : j_(j), file_(std::move(file)), pointer_(std::move(pointer)), declared_(declared) {
  if (!j_.is_object()) throw_config(file_, pointer_, "expected an object, got " + type_name(j_));
}

void JsonObject::fail(const std::string& key, const std::string& msg) const { throw_config(file_, path(key), msg); }

bool JsonObject::has(const std::string& key) const { return j_.contains(key); }

const Json* JsonObject::raw_opt(const std::string& key) const {
  if (declared_ && std::find(declared_->begin(), declared_->end(), generic_pointer(path(key))) == declared_->end())
    throw std::logic_error("the parser reads " + generic_pointer(path(key)) + ", which sim/scenario/scenario_keys.cpp does not declare");
  seen_.insert(key);
  auto it = j_.find(key);
  return it == j_.end() ? nullptr : &*it;
}

const Json& JsonObject::raw(const std::string& key) const {
  const Json* v = raw_opt(key);
  if (!v) fail(key, "missing required key");
  return *v;
}

std::string JsonObject::str(const std::string& key) const {
  const Json& v = raw(key);
  if (!v.is_string()) fail(key, "expected a string, got " + type_name(v));
  return v.get<std::string>();
}
std::string JsonObject::str(const std::string& key, const std::string& def) const {
  return has(key) ? str(key) : (seen_.insert(key), def);
}

namespace {
// "expected one of "a", "b", got "x"; did you mean "a"?" for a value not among `allowed`.
std::string not_one_of(const std::string& v, const std::vector<std::string>& allowed) {
  std::string msg = "expected one of ";
  for (size_t i = 0; i < allowed.size(); ++i) msg += (i ? ", \"" : "\"") + allowed[i] + "\"";
  msg += ", got \"" + v + "\"";
  const std::string close = closest_name(v, allowed);
  if (!close.empty()) msg += "; did you mean \"" + close + "\"?";
  return msg;
}
}  // namespace

std::string JsonObject::choice(const std::string& key, const std::vector<std::string>& allowed) const {
  const std::string v = str(key);
  for (const auto& a : allowed)
    if (a == v) return v;
  fail(key, not_one_of(v, allowed));
}
std::string JsonObject::choice(const std::string& key, const std::vector<std::string>& allowed,
                               const std::string& def) const {
  return has(key) ? choice(key, allowed) : (seen_.insert(key), def);
}

std::int64_t JsonObject::integer(const std::string& key, std::int64_t min, std::int64_t max) const {
  const Json& v = raw(key);
  if (!v.is_number_integer() && !v.is_number_unsigned()) {
    if (v.is_number_float()) {
      const double d = v.get<double>();
      // Only a whole number within int64's range may be converted (beyond it the cast is undefined).
      if (std::isfinite(d) && std::abs(d) < 9.2e18 && d == std::floor(d)) {
        const auto i = static_cast<std::int64_t>(d);
        if (i >= min && i <= max) return i;
      }
    }
    fail(key, "expected an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "], got " +
                  (v.is_number() ? v.dump() : type_name(v)));
  }
  if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX))
    fail(key, "integer out of range");
  const std::int64_t i = v.get<std::int64_t>();
  if (i < min || i > max)
    fail(key, "expected an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "], got " +
                  std::to_string(i));
  return i;
}
std::int64_t JsonObject::integer(const std::string& key, std::int64_t min, std::int64_t max,
                                 std::int64_t def) const {
  return has(key) ? integer(key, min, max) : (seen_.insert(key), def);
}

double JsonObject::number(const std::string& key, double min, double max) const {
  const Json& v = raw(key);
  if (!v.is_number()) fail(key, "expected a number, got " + type_name(v));
  const double d = v.get<double>();
  if (!(d >= min && d <= max)) {
    std::ostringstream os;
    // The value as JSON wrote it (shortest round trip): 10000.0001 is not "10000" beside a bound of 10000.
    std::array<char, 32> got{};
    const auto r = std::to_chars(got.data(), got.data() + got.size(), d);
    os << "expected a number in [" << min << ", " << max << "], got " << std::string_view(got.data(), static_cast<size_t>(r.ptr - got.data()));
    fail(key, os.str());
  }
  return d;
}
double JsonObject::number(const std::string& key, double min, double max, double def) const {
  return has(key) ? number(key, min, max) : (seen_.insert(key), def);
}

bool JsonObject::boolean(const std::string& key) const {
  const Json& v = raw(key);
  if (!v.is_boolean()) fail(key, "expected true or false, got " + type_name(v));
  return v.get<bool>();
}
bool JsonObject::boolean(const std::string& key, bool def) const {
  return has(key) ? boolean(key) : (seen_.insert(key), def);
}

JsonObject JsonObject::object(const std::string& key) const { return JsonObject(raw(key), file_, path(key), declared_); }

std::optional<JsonObject> JsonObject::object_opt(const std::string& key) const {
  const Json* v = raw_opt(key);
  if (!v || v->is_null()) return std::nullopt;
  return JsonObject(*v, file_, path(key), declared_);
}

std::vector<std::int64_t> JsonObject::int_list(const std::string& key, std::int64_t min, std::int64_t max) const {
  const Json& v = raw(key);
  if (!v.is_array()) fail(key, "expected an array of integers, got " + type_name(v));
  std::vector<std::int64_t> out;
  for (size_t i = 0; i < v.size(); ++i) {
    const Json& e = v[i];
    const std::string p = path(key) + "/" + std::to_string(i);
    if (!e.is_number_integer() && !e.is_number_unsigned()) throw_config(file_, p, "expected an integer, got " + type_name(e));
    const auto x = e.get<std::int64_t>();
    if (x < min || x > max)
      throw_config(file_, p, "expected an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "], got " +
                                 std::to_string(x));
    out.push_back(x);
  }
  return out;
}

std::vector<std::string> JsonObject::choice_list(const std::string& key, const std::vector<std::string>& allowed) const {
  const Json& v = raw(key);
  if (!v.is_array()) fail(key, "expected an array of strings, got " + type_name(v));
  std::vector<std::string> out;
  for (size_t i = 0; i < v.size(); ++i) {
    const Json& e = v[i];
    const std::string p = path(key) + "/" + std::to_string(i);
    if (!e.is_string()) throw_config(file_, p, "expected a string, got " + type_name(e));
    const std::string x = e.get<std::string>();
    if (std::find(allowed.begin(), allowed.end(), x) == allowed.end()) throw_config(file_, p, not_one_of(x, allowed));
    if (std::find(out.begin(), out.end(), x) != out.end()) throw_config(file_, p, "\"" + x + "\" is listed twice");
    out.push_back(x);
  }
  return out;
}

void JsonObject::finish(const std::vector<std::string>& also_allowed) const {
  for (auto it = j_.begin(); it != j_.end(); ++it) {
    const std::string& k = it.key();
    if (seen_.count(k)) continue;
    bool ok = false;
    for (const auto& a : also_allowed) ok = ok || a == k;
    if (ok || k == "$comment" || k.rfind("_", 0) == 0) continue;  // comments and _notes are allowed
    std::vector<std::string> known = declared_ ? declared_here() : std::vector<std::string>(seen_.begin(), seen_.end());
    known.insert(known.end(), also_allowed.begin(), also_allowed.end());
    std::string msg = "unknown key";
    const std::string close = closest_name(k, known);
    if (!close.empty()) msg += "; did you mean \"" + close + "\"?";
    fail(k, msg);
  }
}

}  // namespace parasim

namespace parasim {

std::vector<std::string> JsonObject::declared_here() const {
  std::vector<std::string> keys;
  if (!declared_) return keys;
  const std::string prefix = generic_pointer(pointer_) + "/";
  for (const auto& d : *declared_)
    if (d.rfind(prefix, 0) == 0 && d.find('/', prefix.size()) == std::string::npos) keys.push_back(d.substr(prefix.size()));
  return keys;
}

void JsonObject::reject_undeclared() const {
  if (!declared_) return;
  const std::vector<std::string> known = declared_here();
  for (auto it = j_.begin(); it != j_.end(); ++it) {
    const std::string& k = it.key();
    if (k == "$comment" || k.rfind("_", 0) == 0 || std::find(known.begin(), known.end(), k) != known.end()) continue;
    std::string msg = "unknown key";
    const std::string close = closest_name(k, known);
    if (!close.empty()) msg += "; did you mean \"" + close + "\"?";
    fail(k, msg);
  }
}

}  // namespace parasim
