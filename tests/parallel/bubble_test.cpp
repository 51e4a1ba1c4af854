// Closed forms for pipeline bubbles with equal stages and free communication (MODELING.md):
// GPipe and 1F1B (p-1)/(m+p-1), interleaved (p-1)/(v*m+p-1), naive (p-1)/p; ZB-H1 below 1F1B.
#include <gtest/gtest.h>

#include "../test_util.h"

namespace parasim {
namespace {

// Equal stages: 32 identical layers, a vocabulary small enough that the embedding and output
// layers cost well under 0.1 % of a stage, no per-kernel overhead.
Scenario pipeline(std::int64_t p, std::int64_t m, std::int64_t v, const std::string& schedule, std::int64_t mb = 1) {
  Json j = test::base_scenario();
  j["model"] = {{"name", "eq"}, {"layers", 32}, {"hidden", 4096}, {"heads", 32}, {"vocab", 64}, {"activation", "gelu"}};
  j["cluster"] = {{"gpu", "h100-sxm5-80g"}, {"nodes", 1}, {"gpus_per_node", p}};
  j["training"] = {{"global_batch", m * mb}, {"micro_batch", mb}, {"seq_len", 2048}};
  j["parallel"] = {{"dp", 1}, {"pp", p}, {"vpp", v}, {"schedule", schedule}};
  Scenario sc = test::scenario_from(j);
  sc.profile.kernel_overhead_us.value = 0;
  return sc;
}

double bubble(const Scenario& sc) { return test::simulate_with(sc, test::FreeNetwork{}).result.bubble_fraction; }

TEST(Bubble, GPipeAnd1F1BMatchClosedForm) {
  for (std::int64_t p : {2, 4, 8})
    for (std::int64_t m : {1, 2, 4, 8, 16}) {
      const double expect = static_cast<double>(p - 1) / static_cast<double>(m + p - 1);
      EXPECT_NEAR(bubble(pipeline(p, m, 1, "gpipe")), expect, 0.005) << "gpipe p=" << p << " m=" << m;
      EXPECT_NEAR(bubble(pipeline(p, m, 1, "1f1b")), expect, 0.005) << "1f1b p=" << p << " m=" << m;
    }
}

TEST(Bubble, InterleavedMatchesClosedForm) {
  for (std::int64_t p : {2, 4, 8})
    for (std::int64_t v : {2, 4})
      for (std::int64_t k : {1, 2, 4}) {
        const std::int64_t m = k * p;  // Megatron requires m divisible by p
        const double expect = static_cast<double>(p - 1) / static_cast<double>(v * m + p - 1);
        EXPECT_NEAR(bubble(pipeline(p, m, v, "interleaved")), expect, 0.005) << "p=" << p << " v=" << v << " m=" << m;
      }
}

TEST(Bubble, NaiveModelParallelIsPMinusOneOverP) {
  for (std::int64_t p : {2, 4, 8}) {
    // No microbatching: the whole batch of 4 sequences goes through as one.
    const double expect = static_cast<double>(p - 1) / static_cast<double>(p);
    EXPECT_NEAR(bubble(pipeline(p, 1, 1, "naive", 4)), expect, 0.005) << "p=" << p;
  }
}

TEST(Bubble, ZeroBubbleH1IsStrictlyBelow1F1B) {
  for (std::int64_t p : {4, 8})
    for (std::int64_t m : {8, 16}) {
      const double zb = bubble(pipeline(p, m, 1, "zb-h1"));
      const double ofob = bubble(pipeline(p, m, 1, "1f1b"));
      EXPECT_LT(zb, ofob - 0.01) << "p=" << p << " m=" << m;
    }
}

TEST(Bubble, SchedulesDoTheSameWork) {
  // Same FLOPs whatever the order: MFU x step is invariant across schedules.
  const auto work = [](const Scenario& sc) {
    const auto r = test::simulate_with(sc, test::FreeNetwork{}).result;
    return r.tflops_per_gpu * r.step_time_s;
  };
  const double ref = work(pipeline(4, 8, 1, "1f1b"));
  EXPECT_NEAR(work(pipeline(4, 8, 1, "gpipe")) / ref, 1.0, 1e-9);
  EXPECT_NEAR(work(pipeline(4, 8, 2, "interleaved")) / ref, 1.0, 1e-9);
  EXPECT_NEAR(work(pipeline(4, 8, 1, "zb-h1")) / ref, 1.0, 1e-9);
}

}  // namespace
}  // namespace parasim
