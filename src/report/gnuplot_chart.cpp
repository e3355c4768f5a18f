#include "report/gnuplot_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <numeric>

#include "io/files.h"
#include "io/temp_dir.h"
#include "jobs/process.h"
#include "util/error.h"

namespace strata::report {

namespace {

namespace fs = std::filesystem;

// A gnuplot string in double quotes: backslashes and quotes escaped; '@' would start an
// enhanced-text macro, '_' and '^' sub/superscripts, so the terminal runs with noenhanced.
std::string quoted(const std::string& s) {
  std::string q = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') q += '\\';
    q += c == '\n' ? ' ' : c;
  }
  return q + "\"";
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

}  // namespace

std::string gnuplot_script(const Chart& chart, const std::string& output_path) {
  std::string s = "set terminal svg size 720,420 noenhanced font 'sans,12' background '#ffffff'\n";
  s += "set output " + quoted(output_path) + "\n";
  s += "set title " + quoted(chart.title) + "\n";
  s += "set xlabel " + quoted(chart.xlabel) + "\nset ylabel " + quoted(chart.ylabel) + "\n";
  s += "set grid\nset key outside right top vertical\nset offsets graph 0.05, graph 0.05, graph 0.08, graph 0.08\n";
  if (chart.log_x) s += "set logscale x 2\n";
  if (chart.integer_x) s += "set xtics 1\nset format x '%.0f'\n";
  std::string plot;
  for (size_t i = 0; i < chart.series.size(); ++i) {
    const Series& se = chart.series[i];
    std::vector<size_t> order(se.x.size());
    std::iota(order.begin(), order.end(), size_t{0});
    if (se.lines) std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return se.x[a] < se.x[b]; });
    const std::string block = "$s" + std::to_string(i);
    s += block + " << EOD\n";
    for (size_t k : order) {
      if (!std::isfinite(se.x[k]) || !std::isfinite(se.y[k])) continue;
      s += number(se.x[k]) + " " + number(se.y[k]);
      if (!se.point_labels.empty()) s += " " + quoted(se.point_labels[k]);
      s += "\n";
    }
    s += "EOD\n";
    plot += (plot.empty() ? "plot " : ", ") + block + " using 1:2 with " + (se.lines ? "linespoints" : "points") +
            " pointtype 7 pointsize 0.8 linewidth 2 title " + quoted(se.title);
    if (!se.point_labels.empty())
      plot += ", " + block + " using 1:2:3 with labels offset char 0.8,0.6 left font 'sans,9' notitle";
  }
  if (plot.empty()) plot = "plot NaN notitle";  // an empty chart still draws its axes
  return s + plot + "\n";
}

std::string render_svg(const Chart& chart) {
  const io::TempDir tmp("strata_report");
  const std::string& dir = tmp.path();
  const std::string script = dir + "/chart.gp", svg = dir + "/chart.svg";
  io::write_file_atomic(script, gnuplot_script(chart, svg));
  if (!jobs::on_path("gnuplot"))
    fail("strata report: gnuplot is not on PATH; it draws the charts (Debian: apt-get install gnuplot-nox, or "
         "scripts/install_deps.sh)");
  const jobs::CommandResult r = jobs::run_command({"gnuplot", script});
  if (r.status != 0 || !fs::exists(svg))
    fail("strata report: gnuplot failed on the chart '", chart.title, "' (exit status ", r.status, "): ", r.output);
  const std::string text = io::read_file(svg);
  const size_t start = text.find("<svg");
  if (start == std::string::npos) fail("strata report: gnuplot wrote no <svg> element for '", chart.title, "'");
  return text.substr(start);
}

}  // namespace strata::report
