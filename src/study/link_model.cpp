#include "study/link_model.h"

#include <yaml-cpp/yaml.h>

#include "io/files.h"
#include "util/error.h"
#include "util/nearest_name.h"
#include "util/yaml_key.h"

namespace strata::study {

LinkModel fit_link(const std::string& name, const std::vector<std::pair<double, double>>& pts, int ranks) {
  if (pts.size() < 2 || ranks < 2) fail("link ", name, ": a fit needs at least 2 measured sizes over at least 2 ranks");
  // t = a x + b y with x = 2(P-1), y = 2(P-1)/P n: least squares for a = latency, b = 1 / bandwidth.
  double sxx = 0, sxy = 0, syy = 0, sxt = 0, syt = 0;
  const double x = 2.0 * (ranks - 1);
  for (const auto& [n, t] : pts) {
    const double y = 2.0 * (ranks - 1) / ranks * n;
    sxx += x * x;
    sxy += x * y;
    syy += y * y;
    sxt += x * t;
    syt += y * t;
  }
  const double det = sxx * syy - sxy * sxy;
  if (det <= 0) fail("link ", name, ": the measured sizes must differ");
  double a = (sxt * syy - syt * sxy) / det;
  double b = (sxx * syt - sxy * sxt) / det;
  if (a < 0) {  // latency below what the data can resolve: the bandwidth alone, through the origin
    a = 0;
    b = syt / syy;
  }
  if (b <= 0) fail("link ", name, ": the measured times do not grow with the size");
  return {name, a, 1.0 / b, cat("fitted to ", pts.size(), " all-reduce sizes over ", ranks, " ranks")};
}

double allreduce_seconds(const LinkModel& l, double bytes, int ranks) {
  if (ranks < 2) return 0;
  return 2.0 * (ranks - 1) * l.latency_s + 2.0 * (ranks - 1) / ranks * bytes / l.bandwidth_bytes_per_s;
}

double p2p_seconds(const LinkModel& l, double bytes) { return l.latency_s + bytes / l.bandwidth_bytes_per_s; }

std::vector<LinkModel> load_links(const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::Load(io::read_file(path));
  } catch (const YAML::Exception& e) {
    fail(path, ": invalid YAML at line ", e.mark.line + 1, ": ", e.msg);
  }
  if (!root.IsMap()) fail(path, ": expected a mapping of link name -> its figures");
  std::vector<LinkModel> links;
  for (const auto& kv : root) {
    const std::string name = yaml_key(kv.first, path);
    const std::string at = cat(path, " line ", kv.first.Mark().line + 1, ": link ", name);
    const YAML::Node& v = kv.second;
    if (!v.IsMap()) fail(at, ": expected {ranks, points, source} or {latency_us, bandwidth_gbit, source}");
    try {
      const std::string source = v["source"] ? v["source"].as<std::string>() : "";
      if (v["points"]) {
        std::vector<std::pair<double, double>> pts;
        for (const auto& p : v["points"]) pts.emplace_back(p[0].as<double>(), p[1].as<double>());
        LinkModel l = fit_link(name, pts, v["ranks"].as<int>());
        l.source += "; " + source;
        links.push_back(l);
      } else {
        const double lat = v["latency_us"].as<double>(), gbit = v["bandwidth_gbit"].as<double>();
        if (!(lat >= 0) || !(gbit > 0)) fail(at, ": latency_us must be >= 0 and bandwidth_gbit > 0");
        links.push_back({name, lat * 1e-6, gbit * 1e9 / 8, "stated: " + source});
      }
    } catch (const YAML::Exception& e) {
      fail(at, ": expected {ranks, points: [[bytes, seconds], ...], source} or {latency_us, bandwidth_gbit, source}: ",
           e.msg);
    }
  }
  return links;
}

const LinkModel& find_link(const std::vector<LinkModel>& links, const std::string& name, const std::string& where) {
  std::vector<std::string> names;
  for (const LinkModel& l : links) {
    if (l.name == name) return l;
    names.push_back(l.name);
  }
  fail(where, ": no link '", name, "' in the links file", did_you_mean(name, names));
}

}  // namespace strata::study
