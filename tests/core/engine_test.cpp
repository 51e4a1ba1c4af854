#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "sim/core/engine.h"

namespace parasim {
namespace {

Op make(std::int32_t rank, Stream s, double us, std::vector<OpId> deps = {}) {
  Op o;
  o.rank = rank;
  o.stream = s;
  o.duration = seconds_to_time(us * 1e-6);
  o.deps = std::move(deps);
  return o;
}

// The engine's and the lowering's rounding without the library call: std::llround's result (half
// away from zero) on halves, the doubles just below and above them, and values across the range.
TEST(Units, RoundHalfUpIsLlroundOnNonNegativeValues) {
  std::vector<double> xs = {0.0, 0.49999999999999994, 0.5, 1.5, 2.5, 4503599627370495.5, 4503599627370496.0, 9.2e18 / 2};
  std::mt19937_64 gen(42);
  for (int i = 0; i < 100000; ++i) {
    const double half = std::floor(static_cast<double>(gen() % (std::uint64_t{1} << 51))) + 0.5;
    xs.insert(xs.end(), {half, std::nextafter(half, 0.0), std::nextafter(half, 1e300), std::ldexp(static_cast<double>(gen() >> 11), -static_cast<int>(gen() % 64))});
  }
  for (const double x : xs) ASSERT_EQ(round_half_up(x), std::llround(x)) << x;
}

Program two_ranks() {
  Program p;
  p.labels = {"op"};
  p.ranks.resize(2);
  return p;
}

TEST(Engine, StreamRunsOpsInProgramOrder) {
  Program p = two_ranks();
  p.add(make(0, Stream::Compute, 10));
  p.add(make(0, Stream::Compute, 5));
  const Timeline t = run_program(p, {});
  // Same stream: the second starts when the first ends (10 us), ends at 15 us.
  EXPECT_EQ(t.start[1], seconds_to_time(10e-6));
  EXPECT_EQ(t.makespan, seconds_to_time(15e-6));
}

TEST(Engine, StreamsOverlapAndDependenciesCrossRanks) {
  Program p = two_ranks();
  const OpId a = p.add(make(0, Stream::Compute, 10));
  p.add(make(0, Stream::Comm, 4));              // independent: runs 0..4 beside a
  const OpId c = p.add(make(1, Stream::Compute, 3, {a}));  // waits for a on rank 0
  const Timeline t = run_program(p, {});
  EXPECT_EQ(t.start[1], 0);
  EXPECT_EQ(t.start[static_cast<size_t>(c)], seconds_to_time(10e-6));
  EXPECT_EQ(t.makespan, seconds_to_time(13e-6));
}

TEST(Engine, CollectiveStartsWhenTheLastMemberArrives) {
  Program p = two_ranks();
  p.add(make(0, Stream::Compute, 2));
  p.add(make(1, Stream::Compute, 7));
  Op c0 = make(0, Stream::Comm, 5, {0});
  Op c1 = make(1, Stream::Comm, 5, {1});
  c0.collective = c1.collective = 0;
  const OpId m0 = p.add(c0), m1 = p.add(c1);
  p.collectives.push_back({m0, m1});
  const Timeline t = run_program(p, {});
  // Rank 0 arrives at 2 us, rank 1 at 7 us: both run 7..12 us.
  EXPECT_EQ(t.start[static_cast<size_t>(m0)], seconds_to_time(7e-6));
  EXPECT_EQ(t.end[static_cast<size_t>(m0)], seconds_to_time(12e-6));
  EXPECT_EQ(t.end[static_cast<size_t>(m1)], seconds_to_time(12e-6));
}

TEST(Engine, MemoryPeakAndBreakdownComeFromAllocFreeEvents) {
  Program p = two_ranks();
  p.ranks[0].static_mem[static_cast<size_t>(MemCat::Weights)] = 100;
  Op a = make(0, Stream::Compute, 1);
  a.at_start = {MemCat::Activations, 50};
  Op b = make(0, Stream::Compute, 1);
  b.at_start = {MemCat::Activations, 30};
  b.at_end = {MemCat::Activations, -80};
  Op c = make(0, Stream::Compute, 1);
  c.at_start = {MemCat::Workspace, 10};
  p.add(a);
  p.add(b);
  p.add(c);
  const Timeline t = run_program(p, {});
  // 100 static, +50 at 0, +30 at 1 us (peak 180), -80 at 2 us, +10 at 2 us -> 110.
  EXPECT_EQ(t.memory[0].peak, 180);
  EXPECT_EQ(t.memory[0].peak_time, seconds_to_time(1e-6));
  EXPECT_EQ(t.memory[0].at_peak[static_cast<size_t>(MemCat::Activations)], 80);
  EXPECT_EQ(t.memory[0].curve.back().total, 110);
}

TEST(Engine, OverlapSlowdownAppliesOnlyWhileCommIsBusy) {
  Program p = two_ranks();
  p.add(make(0, Stream::Comm, 10));
  p.add(make(0, Stream::Compute, 1));   // all under the collective: 1 * 1.5 = 1.5 us
  p.add(make(0, Stream::Compute, 10));  // from 1.5 us: 8.5 us slowed (5.667 us of work), then 4.333 us alone
  p.add(make(1, Stream::Compute, 10));  // rank 1 has no collective: 10
  EngineOptions o;
  o.overlap_compute_slowdown = 0.5;
  const Timeline t = run_program(p, o);
  EXPECT_EQ(t.end[1], seconds_to_time(1.5e-6));
  EXPECT_NEAR(static_cast<double>(t.end[2]), static_cast<double>(seconds_to_time(10e-6 + (10e-6 - 8.5e-6 / 1.5))), 2.0);
  EXPECT_EQ(t.end[3], seconds_to_time(10e-6));
}

TEST(Engine, OverlapSlowdownFollowsACollectiveThatStartsMidKernel) {
  // Closed form: a kernel of standalone time D that a collective of length c overlaps entirely
  // (slowdown s) ends c * s / (1 + s) after start + D.
  Program p = two_ranks();
  const OpId first = p.add(make(0, Stream::Compute, 3));
  p.add(make(0, Stream::Compute, 20));           // 3 .. ; collective runs 5 .. 11 beside it
  const OpId gate = p.add(make(0, Stream::P2P, 5));  // point-to-point: no slowdown while it runs
  p.add(make(0, Stream::Comm, 6, {gate}));
  EngineOptions o;
  o.overlap_compute_slowdown = 0.2;
  const Timeline t = run_program(p, o);
  EXPECT_EQ(t.end[static_cast<size_t>(first)], seconds_to_time(3e-6));
  EXPECT_NEAR(static_cast<double>(t.end[1]), static_cast<double>(seconds_to_time(3e-6 + 20e-6 + 6e-6 - 6e-6 / 1.2)), 2.0);
  const Timeline free_run = run_program(p, {});
  EXPECT_EQ(free_run.end[1], seconds_to_time(23e-6));
  // Context parallel's K/V ring on the same stream is point-to-point: no slowdown.
  Program q = two_ranks();
  q.add(make(0, Stream::Compute, 20));
  Op ring = make(0, Stream::Comm, 6);
  ring.phase = Phase::CpComm;
  q.add(ring);
  EXPECT_EQ(run_program(q, o).end[0], seconds_to_time(20e-6));
}

TEST(Engine, DeadlockIsReportedWithTheStuckOp) {
  Program p = two_ranks();
  p.add(make(0, Stream::Compute, 1, {1}));
  p.add(make(0, Stream::Compute, 1));  // behind op 0 on the same stream, which waits for it
  EXPECT_THROW(run_program(p, {}), std::logic_error);
}

TEST(Engine, DeterministicEventOrder) {
  Program p = two_ranks();
  for (int i = 0; i < 200; ++i) p.add(make(i % 2, i % 3 ? Stream::Compute : Stream::Comm, 1 + i % 7, i > 3 ? std::vector<OpId>{i - 3} : std::vector<OpId>{}));
  const Timeline a = run_program(p, {});
  const Timeline b = run_program(p, {});
  EXPECT_EQ(a.start, b.start);
  EXPECT_EQ(a.end, b.end);
}

}  // namespace
}  // namespace parasim

namespace parasim {
namespace {

TEST(Engine, SharedLinkOpsShareBandwidthByProcessorSharing) {
  Program p;
  p.labels = {"op"};
  p.ranks.resize(1);
  Op a = make(0, Stream::Comm, 10);
  Op b = make(0, Stream::P2P, 10);
  a.shared_link = b.shared_link = 0;
  Op delay = make(0, Stream::Compute, 5);
  p.add(a);
  const OpId d = p.add(delay);
  b.deps = {d};
  p.add(b);
  const Timeline t = run_program(p, {});
  // A alone for 5 us (5 left), then A and B at half speed: A ends at 5 + 2*5 = 15 us; B has done
  // 5 by then and finishes its last 5 alone: 20 us.
  EXPECT_EQ(t.end[0], seconds_to_time(15e-6));
  EXPECT_EQ(t.end[2], seconds_to_time(20e-6));
}

TEST(Engine, SharedLinkOnDifferentRanksDoesNotInterfere) {
  Program p;
  p.labels = {"op"};
  p.ranks.resize(2);
  Op a = make(0, Stream::Comm, 10), b = make(1, Stream::Comm, 10);
  a.shared_link = b.shared_link = 0;
  p.add(a);
  p.add(b);
  const Timeline t = run_program(p, {});
  EXPECT_EQ(t.end[0], seconds_to_time(10e-6));
  EXPECT_EQ(t.end[1], seconds_to_time(10e-6));
}

}  // namespace
}  // namespace parasim
