// The study's table: one row per cell, the median of its completed repeats (and the spread of
// the train time), scaling efficiency against the matching one-rank cell, cost from the job's
// billing. Kept as results.json (what `strata report` reads) and written as CSV and Markdown.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "study/cell_plan.h"
#include "study/gpu_rank.h"
#include "study/link_model.h"
#include "study/run_result.h"

namespace strata::study {

struct CellRuns {
  CellPlan plan;
  std::vector<RunResult> runs;  // one per repeat that has run
};

// The one-rank cell the projections start from: the one with the workload (workload_key) of
// the first multi-rank cell, else the first one-rank cell; null if the grid has none.
const CellPlan* projection_reference(const std::vector<CellRuns>& cells);

// What the projections need: the links' all-reduce models ("shm" within this machine,
// "netns-<rate>" between its namespace hosts, the projection's link between real hosts), this
// machine's cores, the projection instance type's price per instance, the unit profiles the
// cells and layouts name, and the layouts past this machine.
struct ProjectionContext {
  std::vector<LinkModel> links;  // empty: no projection
  int machine_cores = 1;
  double usd_per_instance_hour = 0;
  // A GPU projection type: its GPU and fractions (gpu_rank.h), the link between its GPUs
  // ("shm" where it names none) and its cores (the host work of a rank runs on its share).
  std::optional<GpuModel> gpu;
  Achieved gpu_achieved;
  std::string gpu_link = "shm";
  int instance_cores = 1;
  std::map<std::string, UnitProfile> profiles;  // by ProfileKey::id(); a cell without its profiles is not projected
  std::vector<ProjectedLayout> past;
};

// {"study", "note" (how the budget was spent, what the columns mean), "budget", "cells": [{...the row..., "runs": [...]}], "skipped": [{"label", "reason"}]}
// Each cell on more than one rank also gets projected_train_s (from its one-rank cell, the
// unit profiles and the link model of where it ran) and projection_error; "projection" holds
// spec.projection's layouts.
nlohmann::json study_results(const StudySpec& spec, const std::vector<CellRuns>& cells, const ProjectionContext& pc);

// The table as text cells: the header, then one line per cell (HTML and Markdown show it).
struct Table {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
};
Table results_table(const nlohmann::json& results);

// The table as CSV (a header line, then one line per cell) and as Markdown (with a line saying
// how the budget was spent and the cells that were skipped).
std::string results_csv(const nlohmann::json& results);
std::string results_markdown(const nlohmann::json& results);

}  // namespace strata::study
