// The HTML report of a study (its results.json): the table, and charts of train time, cost
// and scaling efficiency against ranks, eval F1 against the global batch for each LR scaling,
// and cost against time with the Pareto front (the cells no other cell beats on both).
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace strata::report {

std::string study_report_html(const nlohmann::json& results);

}  // namespace strata::report
