#include "study/study_table.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "models/registry.h"
#include "study/projection.h"
#include "util/median.h"
#include "util/error.h"

namespace strata::study {

namespace {

// What sets a rank's throughput apart from the number of ranks: a one-rank cell with the
// same batch, threads, data-loader workers and dataset is the efficiency reference of the
// cells that share them (the learning rate does not change the time of a step).
std::string workload_key(const CellPlan& p) {
  return cat("batch ", p.per_device_batch, " threads ", p.threads_per_rank, " workers ", p.dataloader_num_workers,
             " samples ", p.max_train_samples);
}

nlohmann::json row(const CellRuns& c) {
  const CellPlan& p = c.plan;
  nlohmann::json r = {{"cell", p.id},
                      {"label", p.label},
                      {"cluster", p.cluster},
                      {"instance_type", p.instance_type},
                      {"instance_count", p.instance_count},
                      {"ranks_per_host", p.ranks_per_host},
                      {"world_size", p.world_size},
                      {"parallel", cat(p.layout.dp, "x", p.layout.pp, "x", p.layout.tp)},
                      {"threads_per_rank", p.threads_per_rank},
                      {"per_device_batch", p.per_device_batch},
                      {"global_batch", p.global_batch},
                      {"dataloader_num_workers", p.dataloader_num_workers},
                      {"max_train_samples", p.max_train_samples},
                      {"lr_scaling", p.lr_scaling},
                      {"learning_rate", p.learning_rate},
                      {"max_steps", p.max_steps},
                      {"samples", p.samples},
                      {"usd_per_hour", p.usd_per_hour}};
  // One curve of the charts: where the ranks run, how they load data and how the model is
  // split (the learning rate does not change the time).
  r["group"] = cat(p.cluster, ", workers ", p.dataloader_num_workers,
                   p.layout.pp > 1 || p.layout.tp > 1 ? cat(", pp ", p.layout.pp, " tp ", p.layout.tp) : std::string());
  std::vector<double> t, sps, bill, cost, rss;
  std::map<std::string, std::vector<double>> eval;
  int done = 0;
  std::string failure;
  for (const RunResult& run : c.runs) {
    if (!run.completed()) {
      failure = run.status.empty() ? "not run" : run.status + (run.message.empty() ? "" : ": " + run.message);
      continue;
    }
    ++done;
    t.push_back(run.train_runtime);
    sps.push_back(run.samples_per_second);
    bill.push_back(run.billable_seconds);
    cost.push_back(run.cost_usd);
    rss.push_back(run.peak_rss_mib);
    for (const auto& [k, v] : run.eval) eval[k].push_back(v);
  }
  r["repeats_done"] = done;
  r["status"] = done == static_cast<int>(c.runs.size()) && done > 0 ? "completed" : done > 0 ? "partial" : "failed";
  if (!failure.empty()) r["failure"] = failure;
  if (done > 0) {
    r["train_s"] = median(t);
    r["train_s_min"] = *std::min_element(t.begin(), t.end());
    r["train_s_max"] = *std::max_element(t.begin(), t.end());
    r["samples_per_s"] = median(sps);
    r["billable_s"] = median(bill);
    r["cost_usd"] = median(cost);
    r["peak_rss_mib"] = *std::max_element(rss.begin(), rss.end());
    for (const auto& [k, v] : eval) r[k] = median(v);
  }
  nlohmann::json runs = nlohmann::json::array();
  for (const RunResult& run : c.runs) runs.push_back(run.to_json());
  r["runs"] = runs;
  return r;
}

struct Column {
  const char* key;
  const char* header;
  int digits;  // -1: as text or integer
};
constexpr Column kColumns[] = {
    {"cell", "cell", -1},
    {"cluster", "cluster", -1},
    {"instance_type", "instance", -1},
    {"instance_count", "instances", -1},
    {"ranks_per_host", "ranks/host", -1},
    {"world_size", "ranks", -1},
    {"parallel", "dp x pp x tp", -1},
    {"per_device_batch", "batch/rank", -1},
    {"global_batch", "global batch", -1},
    {"dataloader_num_workers", "workers", -1},
    {"lr_scaling", "lr scaling", -1},
    {"learning_rate", "lr", 6},
    {"max_steps", "steps", -1},
    {"samples", "samples", -1},
    {"repeats_done", "repeats", -1},
    {"train_s", "train s (median)", 1},
    {"train_s_min", "min", 1},
    {"train_s_max", "max", 1},
    {"samples_per_s", "samples/s", 2},
    {"scaling_efficiency", "efficiency", 3},
    {"projected_train_s", "projected train s", 1},
    {"projection_error", "projection error", 3},
    {"eval_f1", "eval F1", 4},
    {"eval_accuracy", "eval accuracy", 4},
    {"peak_rss_mib", "peak RSS MiB", 1},
    {"billable_s", "billable s", 1},
    {"cost_usd", "cost USD", 6},
    {"status", "status", -1},
};

std::string cell_text(const nlohmann::json& row, const Column& c) {
  if (!row.contains(c.key)) return "";
  const nlohmann::json& v = row.at(c.key);
  if (v.is_string()) return v.get<std::string>();
  if (c.digits < 0 || v.is_number_integer()) return v.dump();
  char buf[64];
  const double x = v.get<double>();
  // Learning rates and costs are small: significant digits, not places.
  if (c.digits >= 4 && std::fabs(x) < 0.01) std::snprintf(buf, sizeof buf, "%.4g", x);
  else std::snprintf(buf, sizeof buf, "%.*f", c.digits, x);
  return buf;
}

std::string csv_quote(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char ch : s) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return q + "\"";
}

std::string budget_sentence(const nlohmann::json& b) {
  if (b.value("samples", 0) > 0)
    return cat("Every cell trains on the same number of samples, ", b.at("samples").get<int64_t>(),
               ": max_steps = samples / global batch (rounded), so cells with a larger global batch take fewer "
               "steps (the samples column is what each cell saw).");
  return cat("Every cell runs the same number of steps, ", b.at("max_steps").get<int64_t>(),
             ": cells with a larger global batch see more samples.");
}

const LinkModel* link_of(const std::vector<LinkModel>& links, const std::string& name) {
  for (const LinkModel& l : links)
    if (l.name == name) return &l;
  return nullptr;
}

// The link a cell's ranks all-reduce over: shared memory on this machine, or the namespace
// hosts' links at the cell's rate.
std::string cell_link(const CellPlan& p) {
  if (p.cluster == "local") return "shm";
  return "netns-" + (p.rate.empty() ? std::string("unlimited") : p.rate);
}

const UnitProfile* profile_of(const ProjectionContext& pc, const ProfileKey& k) {
  const auto it = pc.profiles.find(k.id());
  return it == pc.profiles.end() ? nullptr : &it->second;
}

nlohmann::json estimate_json(const StepEstimate& e) {
  return {{"compute_s", e.compute_s}, {"bubble_s", e.bubble_s}, {"comm_s", e.comm_s}, {"step_s", e.step_s()}};
}

// The projection past this machine: hosts of their own (no shared cores), shared memory (or a
// GPU type's link) within a host, spec.projection.link between hosts; from the reference
// cell's measured step and profiles, and for a GPU type its ranks' rates (gpu_rank.h).
nlohmann::json project_layouts(const StudySpec& spec, const ProjectionContext& pc, const CellPlan& ref, double ref_step_s) {
  const LinkModel* within = link_of(pc.links, pc.gpu ? pc.gpu_link : "shm");
  const LinkModel& inter = find_link(pc.links, spec.projection.link, spec.source + " projection.link");
  const UnitProfile* whole = profile_of(pc, ref.whole_batch_profile());
  nlohmann::json out = nlohmann::json::array();
  if (!within || !whole) return out;
  const double other = other_seconds(ref_step_s, *whole);
  std::optional<GpuRanks> gpu;
  ModelConfig cfg;  // a GPU rank's units' FLOPs come from its tensor-parallel slices
  if (pc.gpu) {
    gpu = GpuRanks{*pc.gpu, pc.gpu_achieved, gpu_product_precision(ref.args), 0};
    gpu->peak = gpu_peak_flops(gpu->gpu, gpu->precision, spec.source + " projection.instance_type");
    cfg = load_model_config(ref.args.model_name_or_path);
  }
  for (const ProjectedLayout& p : pc.past) {
    const UnitProfile* micro = profile_of(pc, p.profile);
    if (!micro) continue;
    LayoutShape shape{p.instances, p.ranks_per_host, 0, ref.threads_per_rank};
    StepEstimate e;
    if (gpu) {
      ModelConfig split = cfg;
      split.tensor_split = {p.layout.tp, 0};
      const std::vector<double> flops = unit_flops(*make_model<float>(split), micro->B, micro->T);
      shape.threads_per_rank = 1;
      const double host_threads = std::max(1, pc.instance_cores / p.ranks_per_host);
      e = project_layout(gpu_rank_profile(*micro, flops, *gpu), p.layout, shape, *within, inter,
                         other * ref.threads_per_rank / host_threads);
    } else {
      e = project_layout(*micro, p.layout, shape, *within, inter, other);
    }
    const int64_t global = static_cast<int64_t>(ref.per_device_batch) * p.layout.accumulation * p.layout.dp;
    const int64_t steps = spec.budget.steps(global);
    const double t = e.step_s() * steps;
    nlohmann::json j = {{"instances", p.instances},
                        {"ranks_per_host", p.ranks_per_host},
                        {"world_size", shape.world()},
                        {"instance_type", spec.projection.instance_type},
                        {"layout", p.layout_text},
                        {"dp", p.layout.dp},
                        {"pp", p.layout.pp},
                        {"tp", p.layout.tp},
                        {"steps", steps},
                        {"train_s", t},
                        {"cost_usd", t * p.instances * pc.usd_per_instance_hour / 3600}};
    j.update(estimate_json(e));
    out.push_back(j);
  }
  return out;
}

}  // namespace

const CellPlan* projection_reference(const std::vector<CellRuns>& cells) {
  const CellPlan* first = nullptr;
  for (const CellRuns& c : cells)
    if (c.plan.invalid.empty() && c.plan.world_size == 1) {
      first = &c.plan;
      break;
    }
  for (const CellRuns& m : cells)
    if (m.plan.invalid.empty() && m.plan.world_size > 1) {
      for (const CellRuns& c : cells)
        if (c.plan.invalid.empty() && c.plan.world_size == 1 && workload_key(c.plan) == workload_key(m.plan))
          return &c.plan;
      break;
    }
  return first;
}

nlohmann::json study_results(const StudySpec& spec, const std::vector<CellRuns>& cells, const ProjectionContext& pc) {
  nlohmann::json rows = nlohmann::json::array(), skipped = nlohmann::json::array();
  struct Reference {
    double samples_per_s, step_s;
    const CellPlan* plan;
  };
  std::map<std::string, Reference> one_rank;  // workload -> its one-rank cell
  for (const CellRuns& c : cells) {
    if (!c.plan.invalid.empty()) {
      skipped.push_back({{"cell", c.plan.id}, {"label", c.plan.label}, {"reason", c.plan.invalid}});
      continue;
    }
    rows.push_back(row(c));
    const nlohmann::json& r = rows.back();
    if (c.plan.world_size == 1 && r.contains("samples_per_s"))
      one_rank.emplace(workload_key(c.plan), Reference{r.at("samples_per_s").get<double>(),
                                                       r.at("train_s").get<double>() / c.plan.max_steps, &c.plan});
  }
  size_t i = 0;
  for (const CellRuns& c : cells) {
    if (!c.plan.invalid.empty()) continue;
    nlohmann::json& r = rows[i++];
    const auto ref = one_rank.find(workload_key(c.plan));
    if (ref == one_rank.end() || !r.contains("samples_per_s")) continue;
    if (ref->second.samples_per_s > 0)
      r["scaling_efficiency"] = r.at("samples_per_s").get<double>() / (c.plan.world_size * ref->second.samples_per_s);
    const LinkModel* link = link_of(pc.links, cell_link(c.plan));
    const UnitProfile* whole = profile_of(pc, ref->second.plan->whole_batch_profile());
    const UnitProfile* micro = profile_of(pc, c.plan.micro_profile());
    if (c.plan.world_size > 1 && link && whole && micro) {
      const LayoutShape shape{c.plan.instance_count, c.plan.ranks_per_host, pc.machine_cores, c.plan.threads_per_rank};
      const StepEstimate e =
          project_layout(*micro, c.plan.layout, shape, *link, *link, other_seconds(ref->second.step_s, *whole));
      const double projected = e.step_s() * c.plan.max_steps;
      r["projected_train_s"] = projected;
      r["projected_comm_s"] = e.comm_s * c.plan.max_steps;
      r["projected_bubble_s"] = e.bubble_s * c.plan.max_steps;
      r["projection_error"] = (projected - r.at("train_s").get<double>()) / r.at("train_s").get<double>();
    }
  }
  nlohmann::json projection = nlohmann::json::array();
  const CellPlan* ref = projection_reference(cells);
  if (!pc.past.empty() && !pc.links.empty() && ref) {
    const auto measured = one_rank.find(workload_key(*ref));
    if (measured != one_rank.end() && measured->second.plan == ref)
      projection = project_layouts(spec, pc, *ref, measured->second.step_s);
  }
  nlohmann::json budget = {{"samples", spec.budget.samples}, {"max_steps", spec.budget.max_steps}};
  const std::string note = cat(budget_sentence(budget), " Medians over ", spec.repeats,
                               " repeat(s); min and max are the spread of the train time. Efficiency = samples/s / "
                               "(ranks x samples/s of the one-rank cell with the same workload).");
  return {{"study", spec.name},
          {"note", note},
          {"budget", budget},
          {"reference_global_batch", spec.reference_global_batch},
          {"repeats", spec.repeats},
          {"cells", rows},
          {"projection", projection},
          {"skipped", skipped}};
}

Table results_table(const nlohmann::json& results) {
  Table t;
  for (const Column& c : kColumns) t.header.push_back(c.header);
  for (const nlohmann::json& r : results.at("cells")) {
    std::vector<std::string> line;
    for (const Column& c : kColumns) line.push_back(cell_text(r, c));
    t.rows.push_back(line);
  }
  return t;
}

std::string results_csv(const nlohmann::json& results) {
  std::string out;
  for (const Column& c : kColumns) out += std::string(out.empty() ? "" : ",") + c.key;
  out += ",label\n";
  for (const nlohmann::json& r : results.at("cells")) {
    std::string line;
    for (const Column& c : kColumns) {
      if (!line.empty()) line += ',';
      line += csv_quote(cell_text(r, c));
    }
    out += line + "," + csv_quote(r.value("label", "")) + "\n";
  }
  return out;
}

std::string results_markdown(const nlohmann::json& results) {
  std::string out = cat("# Study ", results.at("study").get<std::string>(), "\n\n",
                        results.at("note").get<std::string>(), "\n\n|");
  const Table t = results_table(results);
  for (const std::string& h : t.header) out += " " + h + " |";
  out += "\n|";
  for (size_t i = 0; i < t.header.size(); ++i) out += "---|";
  out += "\n";
  for (const auto& line : t.rows) {
    out += "|";
    for (const std::string& c : line) out += " " + c + " |";
    out += "\n";
  }
  out += "\nCells:\n\n";
  for (const nlohmann::json& r : results.at("cells"))
    out += cat("- ", r.at("cell").get<std::string>(), ": ", r.at("label").get<std::string>(),
               r.contains("failure") ? " (" + r.at("failure").get<std::string>() + ")" : "", "\n");
  if (!results.at("skipped").empty()) {
    out += "\nSkipped (they cannot run):\n\n";
    for (const nlohmann::json& s : results.at("skipped"))
      out += cat("- ", s.at("label").get<std::string>(), ": ", s.at("reason").get<std::string>(), "\n");
  }
  return out;
}

}  // namespace strata::study
