// MoE routing (sim/parallel/moe_routing.h): the busiest expert-parallel rank under random routing
// against drawing the routings, Megatron-Core's capacity and padding, and what each changes in a step.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "../test_util.h"
#include "sim/parallel/moe_dispatch.h"
#include "sim/parallel/moe_routing.h"

namespace parasim {
namespace {

// Mean over `trials` of the busiest rank's routed copies over the mean, each of ep x tokens tokens
// drawing top_k distinct experts uniformly (random logits' top-k), E / ep experts per rank.
double simulated_busiest(std::int64_t E, std::int64_t k, std::int64_t tokens, std::int64_t ep, int trials) {
  std::mt19937_64 rng(12345);
  std::uniform_int_distribution<std::int64_t> expert(0, E - 1);
  std::vector<std::int64_t> per_rank(static_cast<size_t>(ep)), chosen(static_cast<size_t>(k));
  const std::int64_t held = E / ep;
  const double mean = static_cast<double>(tokens * k);  // ep x tokens x k copies over ep ranks
  double sum = 0;
  for (int t = 0; t < trials; ++t) {
    std::fill(per_rank.begin(), per_rank.end(), 0);
    for (std::int64_t tok = 0; tok < ep * tokens; ++tok)
      for (std::int64_t i = 0; i < k; ++i) {  // k distinct experts, uniformly: redraw a repeat
        std::int64_t x = expert(rng);
        while (std::find(chosen.begin(), chosen.begin() + i, x) != chosen.begin() + i) x = expert(rng);
        chosen[static_cast<size_t>(i)] = x;
        ++per_rank[static_cast<size_t>(x / held)];
      }
    sum += static_cast<double>(*std::max_element(per_rank.begin(), per_rank.end())) / mean;
  }
  return sum / trials;
}

TEST(MoeRouting, RandomRoutingsBusiestRankMatchesItsClosedForm) {
  for (const auto& [E, k, tokens, ep] : {std::tuple{32, 4, 256, 8}, {64, 8, 128, 4}, {16, 2, 512, 16}}) {
    const double expected = forced_balance_ratio(E, k, tokens, ep, expected_max_standard_normal(ep));
    const double drawn = simulated_busiest(E, k, tokens, ep, 1500);
    EXPECT_GT(expected, 1.0);
    EXPECT_NEAR(expected - 1, drawn - 1, 0.05 * (drawn - 1)) << E << " " << k << " " << ep;
  }
}

TEST(MoeRouting, TwoRanksExpectTheHalfNormalExcess) {
  // With two ranks the counts sum to a constant: the busiest is mean + |X - mean|, E|Z| = sqrt(2 / pi).
  const double E = 64, k = 4, N = 2 * 1000.0;
  const double mean = N * k / 2, sd = std::sqrt(N * k * 0.25 * (E - k) / (E - 1));
  EXPECT_NEAR(forced_balance_ratio(64, 4, 1000, 2, expected_max_standard_normal(2)), 1 + std::sqrt(2 / std::acos(-1.0)) * sd / mean, 1e-9);
}

TEST(MoeRouting, OneRankHoldingEveryExpertIsNeverUneven) {
  EXPECT_EQ(forced_balance_ratio(128, 8, 4096, 1, 0.0), 1.0);
  // A measured busiest expert: its rank holds it and the others' share of the rest. One rank
  // holding every expert receives every token copy, the mean; one expert per rank, that expert's.
  for (const double r : {1.0, 1.3, 4.0}) {
    EXPECT_NEAR(moe_load(128, 8, 4096, 1, MoeRouting{r, 0, false}, 0.0).busiest, 1.0, 1e-12) << r;
    EXPECT_NEAR(moe_load(128, 8, 4096, 128, MoeRouting{r, 0, false}, 0.0).busiest, r, 1e-12) << r;
    EXPECT_EQ(moe_load(128, 8, 4096, 16, MoeRouting{r, 0, false}, 0.0).sent, 1.0);  // dropless: every copy sent
  }
  // More experts per rank dilute the busiest one: the busiest rank's excess falls with E / ep.
  const auto excess = [](std::int64_t ep) { return moe_load(128, 8, 4096, ep, MoeRouting{1.5, 0, false}, 0.0).busiest - 1; };
  EXPECT_GT(excess(64), excess(16));
  EXPECT_GT(excess(16), excess(4));
  EXPECT_EQ(max_expert_load(128, 8), 16.0);  // an expert can take every token: 128 / 8 times the mean
}

TEST(MoeRouting, CapacityCapsDroppedAndPaddedExperts) {
  // 4,096 tokens x top 8 over 128 experts: 256 per expert on average; one expert per rank (ep 128)
  // shows the busiest expert's own load.
  const auto load = [](double expert, double factor, bool pad, std::int64_t ep = 128) {
    return moe_load(128, 8, 4096, ep, MoeRouting{expert, factor, pad}, 0.0);
  };
  EXPECT_EQ(load(1.5, 1.25, false).busiest, 1.25);  // 320 kept of its 384
  // Only the busiest expert drops, a quarter of the mean of one of 128 experts' share.
  EXPECT_NEAR(load(1.5, 1.25, false).sent, 1 - 0.25 / 128, 1e-12);
  EXPECT_EQ(load(1.1, 1.25, false).busiest, 1.1);  // under the capacity: nothing dropped
  EXPECT_EQ(load(1.1, 1.25, false).sent, 1.0);
  EXPECT_EQ(load(1.5, 1.25, true).busiest, 1.25);  // padded: exactly the capacity, whatever the routing
  EXPECT_EQ(load(0, 1.25, true, 16).sent, 1.25);
  EXPECT_EQ(load(1.0, 0.5, false, 16).busiest, 0.5);  // below the mean every expert drops
  EXPECT_EQ(load(1.0, 0.5, false, 16).sent, 0.5);
  // Random routing with a capacity under its excess: capped.
  EXPECT_EQ(moe_load(128, 8, 4096, 16, MoeRouting{0, 1.0, false}, 3.0).busiest, 1.0);
  // get_capacity rounds up: 100 tokens x 2 / 16 = 12.5 per expert, capacity 13.
  EXPECT_DOUBLE_EQ(moe_load(16, 2, 100, 4, MoeRouting{0, 1.0, true}, 0.0).busiest, 13 / 12.5);
  // A capacity above the tokens keeps every token; padded, every expert takes all of them (E / k).
  EXPECT_EQ(load(1.3, 100, false).busiest, 1.3);
  EXPECT_EQ(load(1.3, 100, true).busiest, 16.0);
}

// Qwen3-30B-A3B on 16 H100, EP 16 over two nodes (scenarios/moe-qwen3-30b-a3b-16xh100-fp8.json).
Json qwen_ep16() { return read_json_file(test::data_dir() + "/scenarios/moe-qwen3-30b-a3b-16xh100-fp8.json"); }

SimulationOutput run_with(const Json& training_keys) {
  Json j = qwen_ep16();
  j["training"].update(training_keys);
  return simulate(test::scenario_from(j), Registries{});
}

TEST(MoeRouting, RandomRoutingIsSlowerThanAnEvenOne) {
  const Scenario sc = test::scenario_from(qwen_ep16());
  const LayerShape sh = layer_shape(sc);
  EXPECT_GT(sh.moe_busiest, 1.0);
  EXPECT_GT(run_with(Json::object()).result.step_time_s, run_with({{"moe_expert_load", 1.0}}).result.step_time_s);
}

TEST(MoeRouting, TheBusiestRankSetsThePace) {
  const Result even = run_with({{"moe_expert_load", 1.0}}).result, uneven = run_with({{"moe_expert_load", 3.0}}).result;
  EXPECT_GT(uneven.step_time_s, even.step_time_s);
  // Memory holds the mean rank's copies: the busiest rank changes from layer to layer.
  EXPECT_EQ(uneven.peak_mem_gib, even.peak_mem_gib);
  // The all-to-alls carry the busiest rank's tokens: its 8 experts hold 3 + 7 x 125 / 127 of the
  // mean's 8; a little under that ratio in time (their fixed latency does not grow).
  const double rank = (3.0 + 7 * 125.0 / 127) / 8;
  const double a2a = uneven.breakdown.at("ep_comm_s") / even.breakdown.at("ep_comm_s");
  EXPECT_LE(a2a, rank);
  EXPECT_GT(a2a, 1 + 0.9 * (rank - 1));
  // Model FLOPs are the model's, not the busiest rank's.
  EXPECT_NEAR(uneven.mfu * uneven.step_time_s, even.mfu * even.step_time_s, 1e-12 * even.mfu * even.step_time_s);
}

TEST(MoeRouting, PaddingIgnoresTheRoutingAndCapacityAboveTheTokensDropsNothing) {
  const double padded = run_with({{"moe_capacity_factor", 1.25}, {"moe_pad_to_capacity", true}}).result.step_time_s;
  EXPECT_EQ(run_with({{"moe_capacity_factor", 1.25}, {"moe_pad_to_capacity", true}, {"moe_expert_load", 1.2}}).result.step_time_s, padded);
  EXPECT_GT(padded, run_with(Json::object()).result.step_time_s);
  EXPECT_EQ(run_with({{"moe_capacity_factor", 100.0}}).result.step_time_s, run_with(Json::object()).result.step_time_s);
  const Result dropping = run_with({{"moe_capacity_factor", 0.5}}).result, dropless = run_with(Json::object()).result;
  EXPECT_LT(dropping.step_time_s, dropless.step_time_s);
  EXPECT_LT(dropping.peak_mem_gib, dropless.peak_mem_gib);
}

TEST(MoeRouting, ModelFlopsCountEveryRoutedCopyOncePaddedOrDropped) {
  const auto model_flops = [](const Result& r) { return r.mfu * r.step_time_s; };
  const Result dropless = run_with(Json::object()).result;
  for (const Json& keys : {Json{{"moe_capacity_factor", 2.0}, {"moe_pad_to_capacity", true}}, Json{{"moe_capacity_factor", 0.5}}}) {
    const Result r = run_with(keys).result;
    EXPECT_NEAR(model_flops(r), model_flops(dropless), 1e-9 * model_flops(dropless)) << keys.dump();
  }
  // So dropping makes MFU outrun HFU, past 100 % with every expert routed and almost every copy
  // dropped (a hostile tester's MFU 203 %), and the run says why: it blamed causal attention alone.
  const auto mfu_note = [](const Result& r) {
    const auto w = std::find_if(r.warnings.begin(), r.warnings.end(), [](const std::string& x) { return x.starts_with("MFU "); });
    return w == r.warnings.end() ? std::string() : *w;
  };
  Json j = qwen_ep16();
  j["model"] = read_json_file(test::data_dir() + "/models/qwen3-30b-a3b.json");
  j["model"]["moe"]["top_k"] = j["model"]["moe"]["experts"];
  j["training"]["moe_capacity_factor"] = 0.01;
  const Result dropping = simulate(test::scenario_from(j), Registries{}).result;
  ASSERT_GT(dropping.mfu, 1.0);
  EXPECT_LT(dropping.hfu, 1.0);
  EXPECT_NE(mfu_note(dropping).find("the capacity factor drops"), std::string::npos) << mfu_note(dropping);
  // Below the sustained clock the convention needs no note, dropping or not.
  EXPECT_EQ(mfu_note(run_with({{"moe_capacity_factor", 0.5}}).result), "");
  EXPECT_EQ(mfu_note(dropless), "");
}

TEST(MoeRouting, DroppingIsNeverSlowerThanKeepingEveryToken) {
  // The busiest expert at 4x the mean: a capacity under it drops some of its tokens, more the lower
  // it is; at or above it nothing is dropped.
  double last = run_with({{"moe_expert_load", 4.0}}).result.step_time_s;
  for (const double factor : {4.0, 3.99, 3.97, 3.9, 2.0, 1.0}) {
    const double t = run_with({{"moe_expert_load", 4.0}, {"moe_capacity_factor", factor}}).result.step_time_s;
    EXPECT_LE(t, last) << factor;
    last = t;
  }
}

TEST(MoeRouting, PaddingAboveTheBusiestLoadIsNotFasterThanDropless) {
  // 8 tokens per sequence: one token per expert on average, the busiest rank about 1.2x; a
  // capacity of 2x padded does more work than the dropless step, however small the GEMMs.
  for (const std::int64_t seq : {8, 4096}) {
    const Json s = {{"seq_len", seq}};
    Json padded = s;
    padded.update(Json{{"moe_capacity_factor", 2.0}, {"moe_pad_to_capacity", true}});
    EXPECT_GE(run_with(padded).result.step_time_s, run_with(s).result.step_time_s) << seq;
  }
}

TEST(MoeRouting, PaddingToCapacityRemovesTheDispatchersHostSync) {
  // 4,096 tokens x 8 / 128 experts: 256 per expert, the capacity at factor 1. Padded or dropless
  // with every expert at the mean, the GPUs do the same work; only the dropless dispatcher makes
  // the host wait for the token counts before each forward all-to-all.
  const Json even = {{"moe_expert_load", 1.0}}, padded = {{"moe_capacity_factor", 1.0}, {"moe_pad_to_capacity", true}};
  EXPECT_EQ(run_with(even).result.step_time_s, run_with(padded).result.step_time_s);
  Json even_host = even, padded_host = padded;
  even_host["host_launch_us"] = padded_host["host_launch_us"] = 30.0;
  EXPECT_LT(run_with(padded_host).result.step_time_s, run_with(even_host).result.step_time_s);
}

TEST(MoeRouting, DeduplicatingDispatchersSendEachTokenAtMostOncePerRank) {
  // HybridEP sends a token once to each rank holding one of its experts (8 of 128 here: the chance
  // 1 - C(120, 8) / C(128, 8)). Padded above the tokens every expert takes every token, so every
  // rank receives each token once: the all-to-alls grow by at most 1 / that chance.
  const Json even = {{"moe_expert_load", 1.0}}, all = {{"moe_capacity_factor", 100.0}, {"moe_pad_to_capacity", true}};
  const auto a2a = [](Json keys) {
    Json j = qwen_ep16();
    j["parallel"]["moe_dispatcher"] = "hybridep";
    j["training"].update(keys);
    return simulate(test::scenario_from(j), Registries{}).result.breakdown.at("ep_comm_s");
  };
  const double ratio = a2a(all) / a2a(even);
  EXPECT_GT(ratio, 1.0);
  EXPECT_LE(ratio, 1.0 / hit_probability(128, 8, 8) * (1 + 1e-9));
}

TEST(MoeRouting, BadRoutingIsRejectedWithTheJsonPath) {
  const auto error = [](const Json& keys) {
    Json j = qwen_ep16();
    j["training"].update(keys);
    return test::scenario_error(j);
  };
  EXPECT_NE(error({{"moe_pad_to_capacity", true}}).find("/training/moe_pad_to_capacity"), std::string::npos);
  EXPECT_NE(error({{"moe_expert_load", 0.9}}).find("/training/moe_expert_load"), std::string::npos);
  // One expert can take every token: 128 / 8 times the mean.
  EXPECT_EQ(error({{"moe_expert_load", 16.0}}), "(no error)");
  EXPECT_NE(error({{"moe_expert_load", 16.5}}).find("16.5 is more than one expert can receive: every token, experts / top_k = 128/8 = 16 "),
            std::string::npos)
      << error({{"moe_expert_load", 16.5}});
  Json j = qwen_ep16();
  j["model"] = "llama3-8b";
  j["parallel"] = Json{{"dp", 16}, {"schedule", "ddp"}};
  j["training"]["moe_capacity_factor"] = 1.0;
  EXPECT_NE(test::scenario_error(j).find("/training/moe_capacity_factor"), std::string::npos) << test::scenario_error(j);
  EXPECT_NE(test::scenario_error(j).find("no experts"), std::string::npos);
  // Megatron-Core refuses a graphed moe_preprocess when the all-to-all dispatcher drops unpadded.
  j = qwen_ep16();
  j["training"].update(Json{{"moe_capacity_factor", 1.0}, {"cuda_graph_scope", {"moe_preprocess"}}});
  EXPECT_NE(test::scenario_error(j).find("/training/cuda_graph_scope"), std::string::npos) << test::scenario_error(j);
  j["training"]["moe_pad_to_capacity"] = true;
  j["training"]["cuda_graph_scope"] = {"moe_router", "moe_preprocess"};  // moe_preprocess is captured with the router only
  EXPECT_EQ(test::scenario_error(j), "(no error)");
  j = qwen_ep16();
  j["parallel"]["moe_dispatcher"] = "deepep";
  j["training"].update(Json{{"moe_capacity_factor", 1.0}, {"moe_pad_to_capacity", true}});
  EXPECT_NE(test::scenario_error(j).find("deepep"), std::string::npos) << test::scenario_error(j);
}

}  // namespace
}  // namespace parasim
