#include <gtest/gtest.h>

#include "sim/core/engine.h"
#include "sim/host_launch.h"

namespace parasim {
namespace {

constexpr double kUs = 1e-6;

// One rank, `n` ops of `us` each on the compute stream, with label 0 ("kernel") unless `sync_at`.
Program chain(int n, double us, int sync_at = -1) {
  Program p;
  p.labels = {"kernel", "after sync"};
  p.ranks.resize(1);
  for (int i = 0; i < n; ++i) {
    Op o;
    o.stream = Stream::Compute;
    o.duration = seconds_to_time(us * kUs);
    o.label = i == sync_at ? 1 : 0;
    if (i > 0) o.deps = {static_cast<OpId>(i - 1)};
    p.add(std::move(o));
  }
  return p;
}

HostLaunch launches(std::int64_t per_op, double launch_us, bool sync_label = false) {
  HostLaunch h;
  h.per_launch = seconds_to_time(launch_us * kUs);
  h.launches = {per_op, per_op};
  h.sync_before = {0, static_cast<char>(sync_label)};
  return h;
}

double makespan_us(const Program& p) { return static_cast<double>(run_program(p, EngineOptions{}).makespan) / kPicosPerSecond / kUs; }

// Kernels of 1 us, each op 3 launches of 5 us: op i's kernels are issued from 15 i + 5 to 15 (i + 1),
// so every op ends at its last kernel's issue and the step is kernels x launch cost: 100 x 3 x 5 us.
TEST(HostLaunch, StepOfShortKernelsIsBoundByKernelsTimesLaunchCost) {
  Program p = chain(100, 1.0);
  EXPECT_NEAR(makespan_us(p), 100.0, 1e-6);  // the GPU alone
  add_host_issue(p, launches(3, 5.0));
  EXPECT_NEAR(makespan_us(p), 100 * 3 * 5.0, 1e-6);
}

// Kernels of 100 us against 15 us of launches per op: the host runs ahead, and only the first
// launch shows: 5 + 100 x 100 us.
TEST(HostLaunch, HostAheadOfLongKernelsCostsOnlyTheFirstLaunch) {
  Program p = chain(100, 100.0);
  add_host_issue(p, launches(3, 5.0));
  EXPECT_NEAR(makespan_us(p), 5.0 + 100 * 100.0, 1e-6);
}

// A sync point before op 50: the host waits for op 49 to end (5 + 50 x 100 us), then issues op 50
// (one launch, 5 us) and runs ahead again: one more launch exposed, 10 + 100 x 100 us.
TEST(HostLaunch, SyncPointExposesTheLaunchAfterIt) {
  Program p = chain(100, 100.0, 50);
  add_host_issue(p, launches(1, 5.0, true));
  EXPECT_NEAR(makespan_us(p), 10.0 + 100 * 100.0, 1e-6);
  // Launches of 50 us against 1 us kernels: op 49 ends at 50 x 50 + 1 us; after the sync the host
  // starts over from there, and op 99 ends 50 x 50 + 1 us later.
  Program q = chain(100, 1.0, 50);
  add_host_issue(q, launches(1, 50.0, true));
  EXPECT_NEAR(makespan_us(q), 2 * (50 * 50.0 + 1), 1e-6);
}

// An op on another stream after a sync point waits for the gate's end even without a dependency
// of its own: the host issues it only once the GPU has reached the sync.
TEST(HostLaunch, GateOnAnotherStreamBecomesADependency) {
  Program p = chain(2, 100.0);
  Op c;
  c.stream = Stream::Comm;
  c.duration = seconds_to_time(10 * kUs);
  c.label = 1;
  p.add(std::move(c));  // emitted after op 1, on the comm stream, no dependency
  add_host_issue(p, launches(1, 5.0, true));
  const Timeline t = run_program(p, EngineOptions{});
  // Gate: op 1 (ends at 5 + 200 us); the comm op is issued 5 us later.
  EXPECT_NEAR(static_cast<double>(t.start[2]) / kPicosPerSecond / kUs, 210.0, 1e-6);
}

Kernel kernel(LayerModule m, KernelKind kind = KernelKind::Memory, std::int64_t batch = 1) {
  Kernel k;
  k.module = m;
  k.kind = kind;
  k.batch = batch;
  return k;
}

// Launches of a block: an expert GEMM once per local expert, a graphed part once per replay.
TEST(HostLaunch, BlockLaunchesCountExpertGemmsAndGraphReplays) {
  Block b;
  b.kernels = {kernel(LayerModule::BlockNorm), kernel(LayerModule::Router, KernelKind::Gemm), kernel(LayerModule::Router),
               kernel(LayerModule::TokenDispatch), kernel(LayerModule::Experts, KernelKind::Gemm, 16),
               kernel(LayerModule::Experts), kernel(LayerModule::Experts, KernelKind::Gemm, 16)};
  EXPECT_EQ(block_launches(b, {}), 1 + 2 + 1 + 16 + 1 + 16);
  EXPECT_EQ(block_launches(b, graphed_modules({"moe_router"})), 1 + 1 + 1 + 16 + 1 + 16);
  // A block entirely inside one graph is one launch.
  Block a;
  a.kernels = {kernel(LayerModule::QkvProj, KernelKind::Gemm), kernel(LayerModule::FusedAttn), kernel(LayerModule::AttnOut, KernelKind::Gemm)};
  EXPECT_EQ(block_launches(a, graphed_modules({"attn"})), 1);
}

}  // namespace
}  // namespace parasim
