#include "jobs/billing.h"

#include <cmath>
#include <cstdio>

namespace strata::jobs {

namespace {
// Rounded to `digits` decimals, as the nearest double to that decimal (it prints short).
double round_to(double v, int digits) {
  const double scale = std::pow(10.0, digits);
  return std::round(v * scale) / scale;
}
}  // namespace

double Billing::cost_usd() const { return billable_seconds * instance_count * usd_per_hour() / 3600.0; }

double Billing::on_demand_cost_usd() const {
  return billable_seconds * instance_count * on_demand_usd_per_hour / 3600.0;
}

double Billing::spot_savings_percent() const {
  const double od = on_demand_cost_usd();
  return spot && od > 0 ? 100.0 * (1.0 - cost_usd() / od) : 0.0;
}

nlohmann::json Billing::to_json() const {
  nlohmann::json j = {{"training_seconds", round_to(training_seconds, 3)},
                      {"billable_seconds", round_to(billable_seconds, 3)},
                      {"instance_count", instance_count},
                      {"capacity", spot ? "spot" : "on-demand"},
                      {"usd_per_hour", usd_per_hour()},
                      {"on_demand_usd_per_hour", on_demand_usd_per_hour},
                      {"cost_usd", round_to(cost_usd(), 6)},
                      {"on_demand_cost_usd", round_to(on_demand_cost_usd(), 6)}};
  if (spot) j["spot_savings_percent"] = round_to(spot_savings_percent(), 1);
  return j;
}

std::string Billing::report() const {
  char buf[512];
  int n = std::snprintf(buf, sizeof buf, "Training seconds: %.0f\nBillable seconds: %.0f\n", std::round(training_seconds),
                        std::round(billable_seconds));
  if (spot) n += std::snprintf(buf + n, sizeof buf - n, "Managed Spot Training savings: %.1f%%\n", spot_savings_percent());
  std::snprintf(buf + n, sizeof buf - n, "Cost: %.6f USD (%d x %.4f USD/h%s; on demand %.6f USD)\n", cost_usd(),
                instance_count, usd_per_hour(), spot ? " spot" : "", on_demand_cost_usd());
  return buf;
}

}  // namespace strata::jobs
