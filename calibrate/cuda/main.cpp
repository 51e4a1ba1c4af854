// parasim-calibrate: measures GEMMs (cuBLASLt), attention (unfused), memory bandwidth and NCCL
// collectives on the GPUs of this machine and writes a calibration profile. Never overwrites.
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

#include <CLI/CLI.hpp>
#include <cudnn_version.h>
#include <fmt/format.h>

#include "calibrate/cuda/benchmarks.h"
#include "calibrate/fit/calibration.h"

#ifndef PARASIM_DEFAULT_DATA_DIR
#define PARASIM_DEFAULT_DATA_DIR "."
#endif

using namespace parasim;
using namespace parasim::calib;

namespace {

std::string today() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", std::gmtime(&t));
  return buf;
}

std::string version3(int v) { return fmt::format("{}.{}.{}", v / 1000, (v % 1000) / 10, v % 10); }

HarnessContext context(const std::string& command) {
  HarnessContext c;
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  c.gpu_name = prop.name;
  c.sms = prop.multiProcessorCount;
  c.memory_bytes = static_cast<double>(prop.totalGlobalMem);
  int clk = 0, mclk = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&clk, cudaDevAttrClockRate, 0));
  CUDA_CHECK(cudaDeviceGetAttribute(&mclk, cudaDevAttrMemoryClockRate, 0));
  c.clock_mhz = clk / 1000.0;
  c.mem_clock_mhz = mclk / 1000.0;
  int drv = 0, rt = 0, nccl = 0;
  CUDA_CHECK(cudaDriverGetVersion(&drv));
  CUDA_CHECK(cudaRuntimeGetVersion(&rt));
  NCCL_CHECK(ncclGetVersion(&nccl));
  c.driver = fmt::format("CUDA driver API {}", version3(drv));
  c.cuda = version3(rt);
  c.cublas = std::to_string(cublasLtGetVersion());
  c.nccl = fmt::format("{}.{}.{}", nccl / 10000, (nccl / 100) % 100, nccl % 100);
  c.cudnn = fmt::format("{}.{}.{} (headers)", CUDNN_MAJOR, CUDNN_MINOR, CUDNN_PATCHLEVEL);
  c.date = today();
  c.command = command;
  return c;
}

// The sustained-clock GEMM (bf16 8192^3, random operands), before any GPU has run it.
MeasuredSustained sustained_gemm(double seconds) {
  MeasuredSustained s;
  s.dtype = "bf16";
  s.m = s.n = s.k = 8192;
  s.seconds = seconds;
  return s;
}

// That GEMM on GPUs 0 .. gpus-1 at once, one host thread per GPU, so that every board of the node
// draws training-like power together.
MeasuredSustained sustained_on_gpus(int gpus, double seconds, const Method& m) {
  MeasuredSustained s = sustained_gemm(seconds);
  s.burst_s.assign(static_cast<size_t>(gpus), 0.0);
  s.sustained_s.assign(static_cast<size_t>(gpus), 0.0);
  std::vector<std::exception_ptr> errors(static_cast<size_t>(gpus));
  std::vector<std::thread> threads;
  for (int g = 0; g < gpus; ++g)
    threads.emplace_back([&, g] {
      try {
        CUDA_CHECK(cudaSetDevice(g));
        const GemmResult r = bench_gemm(s.m, s.n, s.k, s.dtype, m, seconds);
        s.burst_s[static_cast<size_t>(g)] = r.time.p50;
        s.sustained_s[static_cast<size_t>(g)] = r.sustained.p50;
      } catch (...) {
        errors[static_cast<size_t>(g)] = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
  return s;
}

#ifdef PARASIM_WITH_MPI
// Under mpirun: every rank joins the NCCL sweep; rank 0 writes the profile. An error on any rank
// aborts the job (the others would wait forever in a collective).
int run_mpi(int argc, char** argv, const std::string& base, const std::string& out, const std::string& data_dir, bool quick,
            double sustain_s) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  try {
    int exists = rank == 0 && std::filesystem::exists(out) ? 1 : 0;
    MPI_CHECK(MPI_Bcast(&exists, 1, MPI_INT, 0, MPI_COMM_WORLD));
    if (exists) throw HarnessError(out + ": exists; parasim-calibrate never overwrites a profile");
    const std::string base_path = base.find('/') != std::string::npos ? base : data_dir + "/calibrate/profiles/" + base + ".json";
    const Json base_json = read_json_file(base_path);
    std::string command = "mpirun ...";
    for (int i = 0; i < argc; ++i) command += " " + std::string(argv[i]);
    Method m;
    if (quick) {
      m.min_iters = 10;
      m.min_seconds = 0.01;
    }
    std::vector<double> sizes;
    for (double b = 1024; b <= (quick ? 1.0 * (1 << 30) : 8.0 * (1 << 30)); b *= quick ? 16 : 4) sizes.push_back(b);
    int nodes = 1;
    const auto results = bench_nccl_mpi({"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "send_recv"}, sizes, m, &nodes);
    // The sustained GEMM on every rank's GPU at once (bench_nccl_mpi selected it); rank 0 gathers.
    HarnessExtras extras;
    MeasuredSustained& sus = extras.sustained;
    if (sustain_s > 0) {
      sus = sustained_gemm(sustain_s);
      sus.nodes = nodes;
      MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
      const GemmResult g = bench_gemm(sus.m, sus.n, sus.k, sus.dtype, m, sustain_s);
      int size = 1;
      MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size));
      double mine[2] = {g.time.p50, g.sustained.p50};
      std::vector<double> all(2 * static_cast<size_t>(size));
      MPI_CHECK(MPI_Gather(mine, 2, MPI_DOUBLE, all.data(), 2, MPI_DOUBLE, 0, MPI_COMM_WORLD));
      for (int r = 0; r < size; ++r) {
        sus.burst_s.push_back(all[2 * static_cast<size_t>(r)]);
        sus.sustained_s.push_back(all[2 * static_cast<size_t>(r) + 1]);
      }
    }
    if (rank == 0) {
      const HarnessContext ctx = context(command);
      std::vector<MeasuredCollective> colls;
      std::vector<std::string> notes;
      for (const auto& r : results) {
        if (!r.correct) {
          notes.push_back(fmt::format("dropped {} {} bytes: wrong result", r.op, r.bytes));
          continue;
        }
        MeasuredCollective c{r.op, r.ranks, r.bytes, r.time.p10, r.time.p50, r.time.p90};
        c.nodes = r.op == "send_recv" ? std::min(nodes, 2) : nodes;
        if (r.op == "send_recv") c.ranks = 2;
        colls.push_back(c);
      }
      notes.push_back(fmt::format("multi-node NCCL sweep under MPI: {} ranks on {} node(s); GEMM, memory and attention figures are the base profile's",
                                  results.empty() ? 0 : results.front().ranks, nodes));
      const Json prof = build_measured_profile(base_json, std::filesystem::path(out).stem().string(), ctx, {}, {}, colls, Json::object(), notes, extras);
      std::ofstream f(out);
      if (!f) throw HarnessError(out + ": cannot write");
      f << prof.dump(1) << "\n";
      std::cerr << "wrote " << out << "\n";
    }
    MPI_Finalize();
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "parasim-calibrate: rank " << rank << ": error: " << e.what() << "\n";
    MPI_Abort(MPI_COMM_WORLD, 2);
    return 2;
  }
}
#endif

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"parasim-calibrate: measure GEMM, attention, memory and NCCL timings and write a parasim profile"};
  std::string base, out, data_dir = PARASIM_DEFAULT_DATA_DIR;
  bool quick = false;
  int gpus = 0;
  std::vector<std::string> dtypes = {"bf16"};
  app.add_option("--base", base, "datasheet profile to start from (peaks, link rates): name or path")->required();
  app.add_option("-o,--output", out, "profile file to write (refused if it exists)")->required();
  app.add_flag("--quick", quick, "a reduced sweep (target: under 3 minutes on one H200)");
  app.add_option("--gpus", gpus, "GPUs for the NCCL sweep (default: all visible)");
  app.add_option("--dtypes", dtypes, "GEMM dtypes: bf16 fp16 fp8 tf32");
  app.add_option("--data-dir", data_dir, "where models/ and calibrate/profiles/ live");
  double sustain_s = -1;
  app.add_option("--sustain-seconds", sustain_s,
                 "seconds every GPU runs a bf16 8192^3 GEMM at once for the sustained clock and the spread between GPUs "
                 "(default 20, 3 with --quick; 0 skips)");
  bool mpi = false;
#ifdef PARASIM_WITH_MPI
  app.add_flag("--mpi", mpi,
               "multi-node NCCL sweep under mpirun (one rank per GPU): rank 0 writes --base plus the measured groups; "
               "the other benchmarks are skipped");
#endif
  CLI11_PARSE(app, argc, argv);
  if (sustain_s < 0) sustain_s = quick ? 3.0 : 20.0;
#ifdef PARASIM_WITH_MPI
  if (mpi) return run_mpi(argc, argv, base, out, data_dir, quick, sustain_s);
#endif
  (void)mpi;
  try {
    if (std::filesystem::exists(out)) throw HarnessError(out + ": exists; parasim-calibrate never overwrites a profile");
    const std::string base_path = base.find('/') != std::string::npos ? base : data_dir + "/calibrate/profiles/" + base + ".json";
    const Json base_json = read_json_file(base_path);
    std::string command;
    for (int i = 0; i < argc; ++i) command += (i ? " " : "") + std::string(argv[i]);
    int visible = 0;
    CUDA_CHECK(cudaGetDeviceCount(&visible));
    const HarnessContext ctx = context(command);
    std::cerr << fmt::format("parasim-calibrate: {} ({} SMs), {} GPU(s) visible, CUDA {}, NCCL {}\n", ctx.gpu_name, ctx.sms, visible, ctx.cuda, ctx.nccl);
    Method m;
    if (quick) {
      m.min_iters = 10;
      m.min_seconds = 0.01;
    }
    // GEMMs: zoo shapes (derived from models/) and a log grid.
    const std::vector<std::string> models = quick ? std::vector<std::string>{"llama3-8b", "llama3-70b"}
                                                  : std::vector<std::string>{"llama3-8b", "llama3-70b", "llama3.1-405b", "gpt3-175b", "mpt-7b", "llama2-13b"};
    const auto shapes = calibration_shapes(data_dir, models, quick ? std::vector<std::int64_t>{1, 8} : std::vector<std::int64_t>{1, 2, 4, 8},
                                           quick ? std::vector<std::int64_t>{4096} : std::vector<std::int64_t>{2048, 4096, 8192},
                                           quick ? 1024 : 256, quick ? 8192 : 16384);
    std::vector<MeasuredGemm> gemms;
    std::vector<std::string> notes;
    for (const auto& dt : dtypes) {
      int unsupported = 0;
      for (const auto& s : shapes) {
        const GemmResult r = bench_gemm(s.m, s.n, s.k, dt, m);
        if (!r.supported) {
          ++unsupported;
          continue;
        }
        gemms.push_back({s, dt, r.time.p10, r.time.p50, r.time.p90, r.algo_id, r.tile_id, r.correct});
      }
      if (unsupported > 0) notes.push_back(fmt::format("{} of {} {} GEMM shapes skipped: cuBLASLt has no algorithm for them", unsupported, shapes.size(), dt));
    }
    std::cerr << fmt::format("  {} GEMMs measured\n", gemms.size());
    std::vector<MeasuredBandwidth> bw;
    for (const auto& b : bench_memory(quick ? 1 << 30 : 4.0 * (1 << 30), m)) bw.push_back({b.what, b.gbps()});
    HarnessExtras extras;
    extras.gap_kernels = 256;
    extras.kernel_gap_s = bench_kernel_gap(m, extras.gap_kernels).p50;
    Json attn = Json::array();
    for (std::int64_t s : quick ? std::vector<std::int64_t>{2048, 4096} : std::vector<std::int64_t>{1024, 2048, 4096, 8192}) {
      const AttentionResult a = bench_attention_unfused(32, s, 128, m);
      attn.push_back({{"batch_heads", a.batch_heads}, {"seq", a.seq}, {"head_dim", a.head_dim}, {"causal", a.causal},
                      {"fwd_p50_s", a.fwd.p50}, {"fwd_p10_s", a.fwd.p10}, {"fwd_p90_s", a.fwd.p90}, {"kernel", a.kernel}});
    }
    extras.attention_heads = {32, 2048, 112, 108, 0, 0};  // BLOOM's head dim 108 against the aligned 112
    extras.attention_heads.aligned_s = bench_attention_scores_fused_qkv(32, 2048, 112, m).p50;
    extras.attention_heads.unaligned_s = bench_attention_scores_fused_qkv(32, 2048, 108, m).p50;
    std::vector<MeasuredCollective> colls;
    const int ranks = gpus > 0 ? std::min(gpus, visible) : visible;
    if (ranks >= 2) {
      std::vector<double> sizes;
      for (double b = 1024; b <= (quick ? 1.0 * (1 << 30) : 8.0 * (1 << 30)); b *= quick ? 16 : 4) sizes.push_back(b);
      std::vector<int> groups;
      for (int g = 2; g <= ranks; g *= 2) groups.push_back(g);
      if (groups.empty() || groups.back() != ranks) groups.push_back(ranks);
      for (int g : groups)
        for (const auto& r : bench_nccl(g, {"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "send_recv"}, sizes, m))
          if (r.correct) colls.push_back({r.op, r.ranks, r.bytes, r.time.p10, r.time.p50, r.time.p90});
    } else {
      std::cerr << "  one GPU visible: NCCL sweep skipped\n";
    }
    if (ranks < 2) notes.push_back("NCCL sweep skipped: one GPU visible");
    if (sustain_s > 0) {
      std::cerr << fmt::format("  sustained bf16 8192^3 GEMM on {} GPU(s) at once for {:.0f} s\n", std::max(ranks, 1), sustain_s);
      extras.sustained = sustained_on_gpus(std::max(ranks, 1), sustain_s, m);
    }
    Json extra = {{"attention_unfused", attn},
                  {"attention_note", "fused attention (cuDNN SDPA) is not measured yet; attention efficiencies are the base profile's"}};
    const Json prof = build_measured_profile(base_json, std::filesystem::path(out).stem().string(), ctx, gemms, bw, colls, extra, notes, extras);
    std::ofstream f(out);
    if (!f) throw HarnessError(out + ": cannot write");
    f << prof.dump(1) << "\n";
    std::cerr << "wrote " << out << "\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "parasim-calibrate: error: " << e.what() << "\n";
    return 2;
  }
}
