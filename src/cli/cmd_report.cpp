// `strata report DIR`: one self-contained HTML file (charts by gnuplot, inlined) for a study
// directory (strata study), a job directory (strata job run) or a training output_dir
// (strata train). For a study it also writes the table as CSV and Markdown. docs/reports.md.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>

#include "cli/commands.h"
#include "io/files.h"
#include "report/run_report.h"
#include "report/study_report.h"
#include "study/study_table.h"
#include "util/error.h"

namespace strata::cli {

namespace {

namespace fs = std::filesystem;

struct ReportOptions {
  std::string dir;
  std::string output;  // "" = DIR/report.html
};

int report_run(const ReportOptions& o) {
  if (!fs::is_directory(o.dir))
    fail("strata report: ", o.dir, " is not a directory (expected a study directory, a job directory or a training "
         "output_dir)");
  const std::string out = o.output.empty() ? o.dir + "/report.html" : o.output;
  std::string html;
  if (fs::exists(o.dir + "/study.json")) {
    const std::string results_path = o.dir + "/results.json";
    if (!fs::exists(results_path))
      fail("strata report: ", o.dir, " is a study directory without results.json: no cell has run yet (strata study)");
    const nlohmann::json results = io::read_json_file(results_path);
    html = report::study_report_html(results);
    io::write_file_atomic(o.dir + "/results.csv", study::results_csv(results));
    io::write_file_atomic(o.dir + "/results.md", study::results_markdown(results));
  } else if (fs::exists(o.dir + "/status.json") || fs::exists(o.dir + "/trainer_log.jsonl")) {
    html = report::run_report_html(o.dir);
  } else {
    fail("strata report: ", o.dir, " holds neither study.json (a study), status.json (a job) nor trainer_log.jsonl "
         "(a training run)");
  }
  io::write_file_atomic(out, html);
  std::printf("wrote %s (%.1f KiB)\n", out.c_str(), html.size() / 1024.0);
  return 0;
}

}  // namespace

Run define_report(CLI::App& cmd) {
  auto o = std::make_shared<ReportOptions>();
  cmd.add_option("dir", o->dir, "a study directory, a job directory or a training output_dir")->required()->type_name("DIR");
  cmd.add_option("--output,-o", o->output, "the HTML file (default DIR/report.html)")->type_name("FILE");
  return [o](const auto&) { return report_run(*o); };
}

}  // namespace strata::cli
