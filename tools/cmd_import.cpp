// `parasim import nccl-tests|gemm-table`: measurements merged into a copy of a profile.
#include <filesystem>
#include <iostream>

#include "calibrate/import/gemm_table.h"
#include "calibrate/import/nccl_tests.h"
#include "tools/commands.h"
#include "tools/output_file.h"

namespace parasim {

void add_import_command(CLI::App& app, Context& ctx) {
  struct ImpOpts {
    std::vector<std::string> logs;
    std::string gpu, out, op, table;
    bool force = false;
  };
  auto o = std::make_shared<ImpOpts>();
  CLI::App* imp = app.add_subcommand("import", "import measurements into a calibration profile");
  imp->require_subcommand(1);
  // Both importers: refuse to overwrite, start from the base profile's JSON, merge, check that the
  // result loads, write it. `merge` adds the measurements and returns notes for stderr.
  auto import_into = [o, &ctx](const std::function<std::vector<std::string>(Json&, const Profile&)>& merge) {
    ctx.exit_code = run_guarded([&]() {
      OutputFile out(o->out, o->force, "-o");
      const std::string base_path = profile_path(ctx.data_dir, o->gpu, "--gpu");
      Json prof = read_json_file(base_path);  // read once: the base profile and the JSON the points merge into
      const Profile base = parse_profile(prof, input_name(base_path));
      for (const auto& n : merge(prof, base)) std::cerr << n << "\n";
      prof["name"] = std::filesystem::path(o->out).stem().string();
      parse_profile(prof, o->out);  // the result must load
      out.stream() << prof.dump(1) << "\n";
      out.commit();
      std::cerr << "wrote " << o->out << "\n";
      return 0;
    });
  };
  auto common = [o](CLI::App* sub) {
    sub->add_option("--gpu", o->gpu, "profile to start from (name or path)")->required();
    sub->add_option("-o,--output", o->out, "profile file to write (refused if it exists, unless --force)")->required();
    sub->add_flag("--force", o->force, "overwrite the output file");
  };
  CLI::App* nt = imp->add_subcommand("nccl-tests", "read nccl-tests output (text logs or -J JSON files) and write a profile with their points merged in");
  nt->add_option("logs", o->logs, "nccl-tests output files (text, or JSON written with -J)")->required();
  common(nt);
  nt->add_option("--op", o->op, "collective, when the log does not name its *_perf binary");
  nt->callback([o, import_into]() {
    import_into([&](Json& prof, const Profile& base) {
      std::vector<std::string> notes;
      for (const auto& f : o->logs) {
        const NcclTestsLog log = parse_nccl_tests_any(read_text_file(f), input_name(f), o->op);
        check_nccl_tests_log(log, base);
        for (auto& n : merge_nccl_tests(prof, log)) notes.push_back(std::move(n));
      }
      return notes;
    });
  });
  CLI::App* gt = imp->add_subcommand("gemm-table", "fit the profile's GEMM kernel model (gemm_fixed_us, gemm_epilogue_gbps) to a "
                                                   "table of measured GEMM throughputs (parasim.gemm_table/1) and write the profile");
  gt->add_option("table", o->table, "GEMM table JSON (format parasim.gemm_table/1, as tests/data/xla_sm90_matmul.json)")->required();
  common(gt);
  gt->callback([o, import_into]() {
    import_into([&](Json& prof, const Profile& base) { return merge_gemm_fit(prof, base, load_gemm_table(o->table)); });
  });
}

}  // namespace parasim
