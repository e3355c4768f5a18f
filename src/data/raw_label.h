// A label as a file holds it, before the training data has fixed what labels mean. CSV cells
// are text, typed as pandas types them (integer, float, else string; a cell starting with
// '[' is a JSON list, for multi-label rows); JSON Lines values keep their JSON type.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace strata::data {

struct RawLabel {
  enum class Kind : uint8_t { Missing, Int, Float, String, List };
  Kind kind = Kind::Missing;
  bool from_text = false;       // read from a CSV cell: a number here may also be a label name
  int64_t i = 0;                // Int
  double f = 0;                 // Int and Float
  std::string s;                // String, and the cell text of a CSV number
  std::vector<RawLabel> items;  // List: scalars

  bool is_number() const { return kind == Kind::Int || kind == Kind::Float; }
  std::string display() const;  // for messages: 3, 0.5, 'spam', [0, 1]
};

// `file` and `line` name the record in error messages (booleans, objects, nested lists, NaN).
RawLabel label_from_text(std::string_view cell, const std::string& file, size_t line);
RawLabel label_from_json(const nlohmann::json& v, const std::string& file, size_t line);

}  // namespace strata::data
