// What a job cost, as SageMaker reports it for a training job:
//   training seconds  from the first start to the end, waits for spot capacity included
//   billable seconds  the seconds instances actually ran (on demand: the training seconds less
//                     any wait; spot: the sum of the attempts)
//   cost              billable seconds x instance count x hourly price / 3600, at the spot price
//                     for spot capacity
//   spot savings      1 - cost / (the same billable seconds at the on-demand price), in percent
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace strata::jobs {

struct Billing {
  double training_seconds = 0;
  double billable_seconds = 0;
  int instance_count = 1;
  bool spot = false;
  double on_demand_usd_per_hour = 0;
  double spot_usd_per_hour = 0;

  double usd_per_hour() const { return spot ? spot_usd_per_hour : on_demand_usd_per_hour; }
  double cost_usd() const;
  double on_demand_cost_usd() const;
  double spot_savings_percent() const;  // 0 for on-demand capacity
  nlohmann::json to_json() const;
  // The lines SageMaker prints at the end of a job, and the cost.
  std::string report() const;
};

}  // namespace strata::jobs
