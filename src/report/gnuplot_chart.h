// Charts drawn by gnuplot (Debian gnuplot-nox, its svg terminal): strata describes the data
// and the axes, gnuplot lays out ticks, legends and labels. docs/reports.md says why gnuplot.
#pragma once
#include <string>
#include <vector>

namespace strata::report {

struct Series {
  std::string title;
  std::vector<double> x, y;
  std::vector<std::string> point_labels;  // optional: a label beside each point
  bool lines = true;                      // points joined in x order; false: points only
};

struct Chart {
  std::string title, xlabel, ylabel;
  std::vector<Series> series;
  bool log_x = false;
  bool integer_x = false;  // x values are counts (ranks, devices): ticks on integers only
};

// The gnuplot script that draws `chart` as SVG into output_path (data inline, as datablocks).
std::string gnuplot_script(const Chart& chart, const std::string& output_path);

// Runs gnuplot on the chart in a temporary directory and returns the <svg> element, ready to
// inline in HTML. Throws strata::Error (with gnuplot's message) when gnuplot is missing or fails.
std::string render_svg(const Chart& chart);

}  // namespace strata::report
