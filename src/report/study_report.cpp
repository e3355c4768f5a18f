#include "report/study_report.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "report/gnuplot_chart.h"
#include "report/html_page.h"
#include "study/study_table.h"
#include "util/error.h"

namespace strata::report {

namespace {

using nlohmann::json;

double num(const json& row, const char* key) { return row.contains(key) ? row.at(key).get<double>() : 0.0; }

// One series per value of `series_key`, a point per cell that has both x and y.
Chart grouped(const json& cells, const char* series_key, const char* x, const char* y, Chart chart) {
  std::map<std::string, Series> by;
  for (const json& r : cells) {
    if (!r.contains(x) || !r.contains(y)) continue;
    const std::string key = r.at(series_key).is_string() ? r.at(series_key).get<std::string>() : r.at(series_key).dump();
    Series& s = by[key];
    s.title = key;
    s.x.push_back(num(r, x));
    s.y.push_back(num(r, y));
  }
  for (auto& [k, s] : by) chart.series.push_back(std::move(s));
  return chart;
}

// Cost against time, each cell labelled, and the front of the cells that no other cell beats
// on both (faster and cheaper).
Chart pareto(const json& cells) {
  Chart c{"Cost against train time", "train time, s (median)", "cost, USD (median)", {}, false, false};
  Series all{"cells", {}, {}, {}, false};
  std::vector<std::pair<double, double>> pts;
  for (const json& r : cells) {
    if (!r.contains("train_s") || !r.contains("cost_usd")) continue;
    all.x.push_back(num(r, "train_s"));
    all.y.push_back(num(r, "cost_usd"));
    all.point_labels.push_back(r.at("cell").get<std::string>());
    pts.emplace_back(all.x.back(), all.y.back());
  }
  std::sort(pts.begin(), pts.end());
  Series front{"Pareto front", {}, {}, {}, true};
  double best_cost = 1e300;
  for (const auto& [t, cost] : pts)
    if (cost < best_cost) {
      best_cost = cost;
      front.x.push_back(t);
      front.y.push_back(cost);
    }
  c.series = {all, front};
  return c;
}

std::string fixed(double v, int digits) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

// The model checked on the measured cells, then applied to the layouts past this machine.
void projection(HtmlPage& page, const json& results) {
  page.heading("Projection");
  Series measured{"measured", {}, {}, {}, false}, projected{"projected", {}, {}, {}, false};
  for (const json& r : results.at("cells")) {
    if (!r.contains("projected_train_s")) continue;
    measured.x.push_back(num(r, "world_size"));
    measured.y.push_back(num(r, "train_s"));
    measured.point_labels.push_back(r.at("cell").get<std::string>());
    projected.x.push_back(num(r, "world_size"));
    projected.y.push_back(num(r, "projected_train_s"));
    projected.point_labels.push_back(r.at("cell").get<std::string>());
  }
  if (measured.x.empty()) {
    page.paragraph("No cell on more than one rank has a one-rank cell of the same workload and a link model: "
                   "nothing to check the projection on.");
  } else {
    Chart c{"Projected against measured train time", "ranks", "train time, s", {measured, projected}, false, true};
    page.chart(render_svg(c), "Each multi-rank cell projected from its one-rank cell's measured step and the unit "
                              "profiles (per layer unit: forward, backward, tensor-parallel traffic; slowed by ranks "
                              "sharing this machine's cores) with the models of the link it ran on "
                              "(catalog/links.yaml); the table's projection error is (projected - measured) / measured.");
  }
  const json& layouts = results.value("projection", json::array());
  if (layouts.empty()) return;
  std::vector<Series> curves;  // one per parallel layout, against the ranks
  std::vector<std::vector<std::string>> rows;
  for (const json& l : layouts) {
    // Studies run before pipeline and tensor-parallel projections have data-parallel rows only.
    const std::string split =
        cat(l.value("dp", l.at("world_size").get<int>()), " x ", l.value("pp", 1), " x ", l.value("tp", 1));
    const std::string layout = l.value("layout", "{}"), name = layout == "{}" ? "data parallel" : layout;
    auto curve = std::find_if(curves.begin(), curves.end(), [&](const Series& c) { return c.title == name; });
    if (curve == curves.end()) curve = curves.insert(curves.end(), Series{name, {}, {}, {}, true});
    curve->x.push_back(num(l, "world_size"));
    curve->y.push_back(num(l, "train_s"));
    rows.push_back({cat(l.at("instances").get<int>(), " x ", l.at("instance_type").get<std::string>()),
                    std::to_string(l.at("world_size").get<int>()), split, fixed(num(l, "compute_s"), 4),
                    fixed(l.value("bubble_s", 0.0), 4), fixed(num(l, "comm_s"), 4), fixed(num(l, "step_s"), 4),
                    std::to_string(l.at("steps").get<int64_t>()), fixed(num(l, "train_s"), 1),
                    fixed(num(l, "cost_usd"), 6)});
  }
  Chart c{"Projected train time past this machine", "ranks", "train time, s", curves, true, false};
  page.chart(render_svg(c), "The same samples budget on hosts of their own (no shared cores), shared memory within a "
                            "host and the projection's link between hosts; one curve per parallel layout, each "
                            "from the unit profile of its micro-batch and tensor-parallel degree.");
  page.table({"hosts", "ranks", "dp x pp x tp", "compute s/step", "bubble s/step", "communication s/step", "step s",
              "steps", "train s", "cost USD"},
             rows);
}

}  // namespace

std::string study_report_html(const json& results) {
  const json& cells = results.at("cells");
  HtmlPage page("Study " + results.at("study").get<std::string>());
  page.paragraph(results.at("note").get<std::string>());
  page.heading("Time, cost and efficiency against ranks");
  Chart base;
  base.integer_x = true;
  base.xlabel = "ranks (devices)";
  Chart time = base, cost = base, eff = base;
  time.title = "Train time";
  time.ylabel = "train time, s (median)";
  cost.title = "Job cost";
  cost.ylabel = "cost, USD (billable s x instances x price)";
  eff.title = "Scaling efficiency";
  eff.ylabel = "samples/s / (ranks x one-rank samples/s)";
  page.chart(render_svg(grouped(cells, "group", "world_size", "train_s", time)),
             "Median train time of each cell (the trainer's train_runtime); one curve per workload.");
  page.chart(render_svg(grouped(cells, "group", "world_size", "cost_usd", cost)),
             "Cost of each cell's job, from its billing (billable seconds, instance count, catalog price).");
  page.chart(render_svg(grouped(cells, "group", "world_size", "scaling_efficiency", eff)),
             "Throughput per rank against the one-rank cell of the same workload: 1 is perfect scaling.");
  page.heading("Model quality against the global batch");
  const char* metric = std::any_of(cells.begin(), cells.end(), [](const json& r) { return r.contains("eval_f1"); })
                           ? "eval_f1"
                           : "eval_accuracy";
  Chart f1{std::string("Validation ") + (metric == std::string("eval_f1") ? "F1" : "accuracy") + " by LR scaling",
           "global batch (samples per step)", metric, {}, true, false};
  page.chart(render_svg(grouped(cells, "lr_scaling", "global_batch", metric, f1)),
             "One curve per lr_scaling: none keeps the base learning rate, linear and sqrt grow it with the global "
             "batch against reference_global_batch.");
  page.heading("Cost against time");
  page.chart(render_svg(pareto(cells)), "Each point is a cell (its id, see the table); the line joins the cells no "
                                        "other cell beats on both time and cost.");
  projection(page, results);
  page.heading("Table");
  const study::Table t = study::results_table(results);
  page.table(t.header, t.rows);
  std::vector<std::vector<std::string>> labels;
  for (const json& r : cells)
    labels.push_back({r.at("cell").get<std::string>(), r.at("label").get<std::string>(), r.value("failure", "")});
  page.table({"cell", "axis values", "failure"}, labels);
  if (!results.at("skipped").empty()) {
    page.heading("Skipped cells");
    std::vector<std::vector<std::string>> rows;
    for (const json& s : results.at("skipped"))
      rows.push_back({s.at("label").get<std::string>(), s.at("reason").get<std::string>()});
    page.table({"axis values", "why it cannot run"}, rows);
  }
  return page.html();
}

}  // namespace strata::report
