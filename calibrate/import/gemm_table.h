// Importer of published or user-measured GEMM throughput tables (format parasim.gemm_table/1:
// source, dtype, columns [b, m, n, k, flops_per_s], rows), and the fit of a profile's GEMM kernel
// model (compute.gemm_fixed_us, compute.gemm_epilogue_gbps) to one. tests/data/xla_sm90_matmul.json
// and xla_sm100_matmul.json are in this format.
#pragma once
#include <string>
#include <vector>

#include "calibrate/fit/calibration.h"

namespace parasim {

struct GemmTable {
  std::string file;
  std::string dtype;
  std::string source;  // one line: title, address, commit / date as the file gives them
  std::vector<GemmTiming> points;
};

// Throws ConfigError naming the file and the JSON pointer of anything it cannot use.
GemmTable parse_gemm_table(const Json& j, const std::string& file);
GemmTable load_gemm_table(const std::string& path);

// How a profile's GEMM model (measured points or kernel model) prices the table: mean |relative
// error| and predicted / measured total time.
struct GemmTableError {
  double mean_abs = 0, total_ratio = 0;
};
GemmTableError gemm_table_error(const Profile& p, const GemmTable& table);

// Fits the table and writes the two figures into a profile JSON (how "fitted", the table and the
// fit's errors as their source). Throws ConfigError when the fit fails or the fitted figures
// cannot reproduce the profile's best-shape efficiency. Returns lines describing what changed.
std::vector<std::string> merge_gemm_fit(Json& profile, const Profile& base, const GemmTable& table);

}  // namespace parasim
