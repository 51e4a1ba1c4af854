// The --json of list, profile show/diff, stack show and topology (docs/outputs.md): each parses and
// says what the data files and the text say.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "../test_util.h"
#include "sim/scenario/stack.h"

namespace parasim {
namespace {

Json cli_json(const std::string& args) {
  const auto [code, out] = test::cli_stdout(args + " --json");
  EXPECT_EQ(code, 0) << args;
  return Json::parse(out);
}

// The names of dir's *.json files, without the extension.
std::set<std::string> json_files(const std::string& dir) {
  std::set<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(test::data_dir() + "/" + dir))
    if (e.path().extension() == ".json") names.insert(e.path().stem().string());
  return names;
}

std::set<std::string> item_names(const Json& list) {
  std::set<std::string> names;
  for (const Json& i : list["items"]) names.insert(i["name"].get<std::string>());
  return names;
}

TEST(CliJson, ListNamesEveryDataFile) {
  const Json gpus = cli_json("list gpus");
  EXPECT_EQ(gpus["schema"], "parasim.list/1");
  EXPECT_EQ(item_names(gpus), json_files("calibrate/profiles"));
  for (const Json& g : gpus["items"]) {
    // The profile file's own dense bf16/fp16 peak, read here from the file (a derived profile may
    // carry its base's over).
    const Json file = Json::parse(std::ifstream(test::data_dir() + "/calibrate/profiles/" + g["name"].get<std::string>() + ".json"));
    const char* dt = g["peak_tflops"].contains("bf16") ? "bf16" : "fp16";
    const Json* stated = file.contains("compute") && file["compute"].contains("peak_tflops") ? &file["compute"]["peak_tflops"] : nullptr;
    if (stated && stated->contains(dt)) {
      EXPECT_EQ(g["peak_tflops"][dt].get<double>(), (*stated)[dt]["value"].get<double>()) << g["name"];
    }
    EXPECT_GT(g["memory_gib"].get<double>(), 10) << g["name"];
  }
  EXPECT_EQ(item_names(cli_json("list stacks")), json_files("stacks"));
  const Json models = cli_json("list models");
  EXPECT_EQ(item_names(models), json_files("models"));
  for (const Json& m : models["items"])
    if (m["name"] == "llama3-8b") {
      EXPECT_NEAR(m["params"].get<double>(), 8.03e9, 0.01e9);  // Meta: Llama 3 8B has 8.03B parameters
    }
  // The document held in a variable: a range-for over a member of a temporary reads freed memory.
  const Json schedules = cli_json("list schedules");
  for (const Json& s : schedules["items"]) EXPECT_FALSE(s["reference"].get<std::string>().empty()) << s["name"];
}

TEST(CliJson, ProfileShowCarriesEveryFiguresProvenance) {
  const Json p = cli_json("profile show h100-sxm5-80g");
  EXPECT_EQ(p["schema"], "parasim.profile/1");
  EXPECT_EQ(p["device"]["sms"], 132);  // H100 SXM5: 132 SMs (NVIDIA H100 whitepaper)
  ASSERT_FALSE(p["figures"].empty());
  for (const Json& f : p["figures"]) {
    EXPECT_FALSE(f["how"].get<std::string>().empty()) << f["name"];
    EXPECT_FALSE(f["source"].get<std::string>().empty()) << f["name"];
    if (!f["range"].is_null()) {
      EXPECT_LE(f["range"]["low"].get<double>(), f["range"]["high"].get<double>()) << f["name"];
    }
  }
  // Every figure the text prints appears in the JSON.
  const auto [code, text] = test::cli_stdout("profile show h100-sxm5-80g");
  for (const Json& f : p["figures"]) EXPECT_NE(text.find("  " + f["name"].get<std::string>() + " "), std::string::npos) << f["name"];
}

TEST(CliJson, ProfileDiffListsExactlyTheFiguresThatDiffer) {
  const Json same = cli_json("profile diff h100-sxm5-80g h100-sxm5-80g");
  EXPECT_EQ(same["differ"], 0);
  EXPECT_TRUE(same["figures"].empty());
  const Json d = cli_json("profile diff h100-sxm5-80g a100-sxm4-80g");
  EXPECT_EQ(d["differ"].get<std::size_t>(), d["figures"].size());
  bool peak = false;
  for (const Json& f : d["figures"]) {
    if (f["a"].is_null() || f["b"].is_null()) continue;
    EXPECT_TRUE(f["a"]["value"] != f["b"]["value"] || f["a"]["how"] != f["b"]["how"]) << f["name"];
    // Datasheets: H100 SXM5 989 dense BF16 TFLOP/s, A100 312.
    if (f["name"] == "peak_tflops.bf16") peak = f["a"]["value"] == 989.0 && f["b"]["value"] == 312.0;
  }
  EXPECT_TRUE(peak);
  const auto [code, text] = test::cli_stdout("profile diff h100-sxm5-80g a100-sxm4-80g");
  EXPECT_NE(text.find(std::to_string(d["differ"].get<int>()) + " figures differ"), std::string::npos) << text;
}

TEST(CliJson, StackShowAccountsForEveryStackField) {
  const Json stacks = cli_json("list stacks");
  for (const Json& item : stacks["items"]) {
    const Json st = cli_json("stack show " + item["name"].get<std::string>());
    EXPECT_EQ(st["schema"], "parasim.stack/1");
    std::set<std::string> set, defaulted;
    for (const Json& s : st["settings"]) {
      set.insert(s["field"].get<std::string>());
      EXPECT_FALSE(s["source"].get<std::string>().empty()) << s["field"];
    }
    for (const Json& f : st["defaults"]) defaulted.insert(f.get<std::string>());
    // Each field is either set (perhaps under several conditions) or left to the defaults.
    EXPECT_EQ(set.size() + defaulted.size(), stack_fields().size()) << item["name"];
    for (const auto& f : stack_fields()) EXPECT_NE(set.count(f.field), defaulted.count(f.field)) << f.field;
  }
}

TEST(CliJson, TopologyCountsAddUp) {
  // scenarios/default.json: 8 nodes of 8 GPUs.
  const Json t = cli_json("topology " + test::data_dir() + "/scenarios/default.json --dump-routes");
  EXPECT_EQ(t["schema"], "parasim.topology/1");
  EXPECT_EQ(t["vertices"]["gpu"], t["gpus"]);
  std::int64_t links = 0;
  for (const Json& s : t["link_speeds"]) links += s["links"].get<std::int64_t>();
  EXPECT_EQ(links, t["links"].get<std::int64_t>());
  // Routes to every other GPU of the first two nodes and to the last GPU.
  const std::int64_t gpn = t["gpus_per_node"];
  ASSERT_EQ(t["routes"].size(), static_cast<std::size_t>(2 * gpn - 1 + 1));
  EXPECT_EQ(t["routes"][0]["links"], 2);  // GPU 0 -> GPU 1 in one node: GPU -> NVSwitch -> GPU
  EXPECT_GT(t["routes"].back()["links"].get<int>(), 2);  // another node: through NICs and the fabric
}

}  // namespace
}  // namespace parasim
