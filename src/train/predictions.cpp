#include "train/predictions.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>

#include <nlohmann/json.hpp>

#include "io/files.h"
#include "util/error.h"

namespace strata {

namespace {

// Per-label probabilities: softmax (single-label) or sigmoid (multi-label); regression: values.
std::vector<double> probabilities(const std::vector<float>& logits, ProblemType problem) {
  std::vector<double> p(logits.begin(), logits.end());
  if (problem == ProblemType::SingleLabel) {
    const double mx = *std::max_element(p.begin(), p.end());
    double sum = 0;
    for (double& x : p) sum += (x = std::exp(x - mx));
    for (double& x : p) x /= sum;
  } else if (problem == ProblemType::MultiLabel) {
    for (double& x : p) x = 1.0 / (1.0 + std::exp(-x));
  }
  return p;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

// Python's repr of a str, as run_classification writes a list of label names.
std::string python_repr(const std::string& s) {
  const char q = s.find('\'') != std::string::npos && s.find('"') == std::string::npos ? '"' : '\'';
  std::string out(1, q);
  for (char c : s) {
    if (c == q || c == '\\') out += '\\';
    out += c;
  }
  return out + q;
}

// HF's predict_results.txt line for one example.
std::string hf_prediction(const std::vector<double>& prob, const std::vector<std::string>& names, ProblemType problem) {
  if (problem == ProblemType::SingleLabel) return names[std::max_element(prob.begin(), prob.end()) - prob.begin()];
  if (problem == ProblemType::MultiLabel) {  // Python's str() of the list of predicted names
    std::string list;
    for (size_t j = 0; j < prob.size(); ++j)
      if (prob[j] > 0.5) list += (list.empty() ? "" : ", ") + python_repr(names[j]);
    return "[" + list + "]";
  }
  std::string values;  // f"{item:3.3f}"; several targets, which run_glue cannot write, as a list
  for (double v : prob) values += (values.empty() ? "" : ", ") + cat(std::fixed, std::setprecision(3), v);
  return prob.size() == 1 ? values : "[" + values + "]";
}

}  // namespace

void write_predictions(const std::string& path, const std::string& format, const std::vector<Prediction>& preds,
                       const std::vector<std::string>& names, ProblemType problem) {
  std::ostringstream out;
  if (format == "txt") {
    out << "index\tprediction\n";
    for (size_t i = 0; i < preds.size(); ++i)
      out << i << "\t" << hf_prediction(probabilities(preds[i].logits, problem), names, problem) << "\n";
    io::write_file_atomic(path, out.str());
    return;
  }
  out.precision(6);
  const bool csv = format == "csv";
  if (csv) {
    out << "index,prediction,label";
    for (const auto& n : names) out << "," << csv_field((problem == ProblemType::Regression ? "value_" : "prob_") + n);
    out << "\n";
  }
  for (size_t i = 0; i < preds.size(); ++i) {
    const Prediction& p = preds[i];
    const std::vector<double> prob = probabilities(p.logits, problem);
    std::string prediction, label;
    if (problem == ProblemType::SingleLabel) {
      prediction = names[std::max_element(prob.begin(), prob.end()) - prob.begin()];
      if (p.label >= 0) label = names[p.label];
    } else if (problem == ProblemType::MultiLabel) {
      for (size_t j = 0; j < prob.size(); ++j)
        if (prob[j] > 0.5) prediction += (prediction.empty() ? "" : "|") + names[j];
      for (size_t j = 0; j < p.target.size(); ++j)
        if (p.target[j] > 0.5) label += (label.empty() ? "" : "|") + names[j];
    } else {
      prediction = std::to_string(prob[0]);
      if (!p.target.empty()) label = std::to_string(p.target[0]);
    }
    if (csv) {
      out << i << "," << csv_field(prediction) << "," << csv_field(label);
      for (double x : prob) out << "," << x;
      out << "\n";
    } else {
      nlohmann::json j = {{"index", i}, {"prediction", prediction}};
      if (!label.empty()) j["label"] = label;
      nlohmann::json pj = nlohmann::json::object();
      for (size_t k = 0; k < names.size(); ++k) pj[names[k]] = prob[k];
      j[problem == ProblemType::Regression ? "values" : "probabilities"] = pj;
      out << j.dump() << "\n";
    }
  }
  io::write_file_atomic(path, out.str());
}

}  // namespace strata
