#include "models/batch_json.h"

#include <algorithm>
#include <cstdint>
#include <iterator>

#include "io/files.h"
#include "util/error.h"

namespace strata {

namespace {

bool is_int32(const nlohmann::json& v) {
  if (!v.is_number_integer()) return false;
  if (v.is_number_unsigned()) return v.get<uint64_t>() <= static_cast<uint64_t>(INT32_MAX);
  const int64_t x = v.get<int64_t>();
  return x >= INT32_MIN && x <= INT32_MAX;
}

// Reads a [rows x cols] integer matrix, checking every row has the same length.
std::vector<int32_t> int_matrix(const nlohmann::json& j, const char* key, const std::string& src, int* rows,
                                int* cols) {
  if (!j.is_array() || j.empty()) fail(src, ": '", key, "' must be a non-empty list of lists of integers");
  std::vector<int32_t> out;
  for (size_t r = 0; r < j.size(); ++r) {
    const auto& row = j[r];
    if (!row.is_array()) fail(src, ": '", key, "'[", r, "] must be a list of integers");
    if (r == 0) *cols = static_cast<int>(row.size());
    if (static_cast<int>(row.size()) != *cols)
      fail(src, ": '", key, "' is ragged: row ", r, " has ", row.size(), " entries, row 0 has ", *cols,
           " (pad every row to the same length)");
    for (size_t c = 0; c < row.size(); ++c) {
      if (!is_int32(row[c]))
        fail(src, ": '", key, "'[", r, "][", c, "] = ", row[c].dump(), " is not a 32-bit integer");
      out.push_back(row[c].get<int32_t>());
    }
  }
  *rows = static_cast<int>(j.size());
  return out;
}

std::vector<int32_t> same_shape(const nlohmann::json& j, const char* key, const std::string& src, int B, int T) {
  int r = 0, c = 0;
  auto m = int_matrix(j, key, src, &r, &c);
  if (r != B || c != T) fail(src, ": '", key, "' is [", r, " x ", c, "] but input_ids is [", B, " x ", T, "]");
  return m;
}

void flatten_numbers(const nlohmann::json& j, const std::string& src, std::vector<double>& out) {
  if (j.is_array()) {
    for (const auto& v : j) flatten_numbers(v, src, out);
  } else if (j.is_number()) {
    out.push_back(j.get<double>());
  } else {
    fail(src, ": 'labels' holds ", j.dump(), "; expected numbers");
  }
}

// An optional list of one integer per row (answer positions, sentence-order labels).
std::vector<int32_t> int_list(const nlohmann::json& j, const char* key, const std::string& src, int rows) {
  std::vector<int32_t> out;
  if (!j.contains(key)) return out;
  const auto& l = j[key];
  if (!l.is_array() || l.size() != static_cast<size_t>(rows))
    fail(src, ": '", key, "' must be a list of ", rows, " integers, one per row");
  for (const auto& v : l) {
    if (!is_int32(v)) fail(src, ": '", key, "' holds ", v.dump(), "; expected integers");
    out.push_back(v.get<int32_t>());
  }
  return out;
}

}  // namespace

Batch read_batch_json(const std::string& path, const ModelConfig& cfg) {
  const nlohmann::json j = io::read_json_file(path);
  if (!j.is_object()) fail(path, ": expected a JSON object with input_ids, attention_mask, ...");
  static const char* const kKeys[] = {"input_ids",       "attention_mask", "token_type_ids",       "labels",
                                      "start_positions", "end_positions",  "sentence_order_label", "decoder_input_ids"};
  for (const auto& [k, v] : j.items())
    if (std::find(std::begin(kKeys), std::end(kKeys), k) == std::end(kKeys))
      fail(path, ": unknown key '", k, "' (expected input_ids, attention_mask, token_type_ids, labels, "
           "start_positions, end_positions, sentence_order_label, decoder_input_ids)");
  if (!j.contains("input_ids")) fail(path, ": 'input_ids' is missing");
  Batch b;
  b.input_ids = int_matrix(j["input_ids"], "input_ids", path, &b.B, &b.T);
  const size_t n = b.input_ids.size();
  b.attention_mask = j.contains("attention_mask") ? same_shape(j["attention_mask"], "attention_mask", path, b.B, b.T)
                                                  : std::vector<int32_t>(n, 1);
  b.token_type_ids = j.contains("token_type_ids") ? same_shape(j["token_type_ids"], "token_type_ids", path, b.B, b.T)
                                                  : std::vector<int32_t>(n, 0);
  if (j.contains("labels")) {
    const auto& l = j["labels"];
    if (per_token_labels(cfg.task)) {
      b.labels = same_shape(l, "labels", path, b.B, b.T);
    } else if (cfg.task == Task::Seq2SeqLM) {
      int rows = 0;
      b.labels = int_matrix(l, "labels", path, &rows, &b.Td);
      if (rows != b.B) fail(path, ": 'labels' has ", rows, " rows but input_ids has ", b.B);
    } else {
      const bool nested = l.is_array() && !l.empty() && l[0].is_array();
      const bool floats = cfg.problem_type == ProblemType::Regression ||
                          cfg.problem_type == ProblemType::MultiLabel || nested ||
                          (cfg.problem_type == ProblemType::Unset && cfg.num_labels == 1);
      if (floats) {
        flatten_numbers(l, path, b.float_labels);
      } else {
        if (!l.is_array()) fail(path, ": 'labels' must be a list with one class id per row");
        for (const auto& v : l) {
          if (!is_int32(v)) fail(path, ": 'labels' holds ", v.dump(), "; expected integer class ids");
          b.labels.push_back(v.get<int32_t>());
        }
      }
    }
  }
  if (j.contains("decoder_input_ids")) {
    if (cfg.task != Task::Seq2SeqLM) fail(path, ": 'decoder_input_ids' is for sequence-to-sequence models");
    int rows = 0, cols = 0;
    b.decoder_input_ids = int_matrix(j["decoder_input_ids"], "decoder_input_ids", path, &rows, &cols);
    if (rows != b.B || (b.Td > 0 && cols != b.Td))
      fail(path, ": 'decoder_input_ids' is [", rows, " x ", cols, "] but must be [", b.B, " x ", b.Td > 0 ? b.Td : cols,
           "] (as labels)");
    b.Td = cols;
  }
  b.start_positions = int_list(j, "start_positions", path, b.B);
  b.end_positions = int_list(j, "end_positions", path, b.B);
  b.sentence_order_label = int_list(j, "sentence_order_label", path, b.B);
  check_batch(cfg, b, path);
  return b;
}

}  // namespace strata
