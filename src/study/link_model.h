// What an all-reduce costs on a link, as the ring algorithm moves it: for n bytes over P ranks,
//   t = 2 (P - 1) x latency + 2 (P - 1) / P x n / bandwidth
// (2(P-1) steps, each a message of n/P bytes). The latency and bandwidth of a link are fitted
// by least squares to bench_allreduce's medians on it (catalog/links.yaml keeps the measured
// points, so the fit is redone from data), or stated where nothing here can measure the link.
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace strata::study {

struct LinkModel {
  std::string name;
  double latency_s = 0;
  double bandwidth_bytes_per_s = 0;
  std::string source;  // how the figures were obtained
};

// Fits latency and bandwidth to (bytes, seconds) all-reduce times measured over `ranks` ranks.
LinkModel fit_link(const std::string& name, const std::vector<std::pair<double, double>>& bytes_seconds, int ranks);

double allreduce_seconds(const LinkModel& link, double bytes, int ranks);
// One message of `bytes` from one rank to another (a pipeline stage's activations): one step
// of the ring, at the same latency and bandwidth.
double p2p_seconds(const LinkModel& link, double bytes);

// catalog/links.yaml: name -> {ranks, points: [[bytes, seconds], ...], source} (fitted here) or
// {latency_us, bandwidth_gbit, source} (stated). Errors name the file and line.
std::vector<LinkModel> load_links(const std::string& path);
const LinkModel& find_link(const std::vector<LinkModel>& links, const std::string& name, const std::string& where);

}  // namespace strata::study
