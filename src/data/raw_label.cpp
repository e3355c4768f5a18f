#include "data/raw_label.h"

#include <charconv>
#include <cmath>

#include "util/error.h"

namespace strata::data {

namespace {

bool parse_int(std::string_view t, int64_t* out) {
  if (t.empty()) return false;
  const char* b = t.data();
  if (*b == '+') ++b;  // from_chars takes '-' but not '+'
  const auto [p, ec] = std::from_chars(b, t.data() + t.size(), *out);
  return ec == std::errc() && p == t.data() + t.size() && b != t.data() + t.size();
}

bool parse_float(std::string_view t, double* out) {
  if (t.empty()) return false;
  const char* b = t.data();
  if (*b == '+') ++b;
  const auto [p, ec] = std::from_chars(b, t.data() + t.size(), *out);
  return ec == std::errc() && p == t.data() + t.size();
}

RawLabel scalar_from_json(const nlohmann::json& v, const std::string& file, size_t line, bool in_list) {
  RawLabel r;
  const char* ctx = in_list ? "a label list holds " : "label is ";
  if (v.is_null()) {
    if (in_list) fail(file, ": line ", line, ": ", ctx, "null; expected label names or 0/1 values");
    return r;
  }
  if (v.is_boolean()) fail(file, ": line ", line, ": ", ctx, "a boolean (", v.dump(), "); write 0/1 or a label name");
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
    fail(file, ": line ", line, ": ", ctx, v.dump(), ", too large for a label");
  if (v.is_number_integer()) {
    r.kind = RawLabel::Kind::Int;
    r.i = v.get<int64_t>();
    r.f = static_cast<double>(r.i);
  } else if (v.is_number_float()) {
    r.kind = RawLabel::Kind::Float;
    r.f = v.get<double>();
  } else if (v.is_string()) {
    r.kind = RawLabel::Kind::String;
    r.s = v.get<std::string>();
  } else {
    fail(file, ": line ", line, ": ", ctx, "a JSON ", v.type_name(), "; expected a number, a string",
         in_list ? "" : " or a list of them");
  }
  return r;
}

}  // namespace

std::string RawLabel::display() const {
  switch (kind) {
    case Kind::Missing:
      return "(none)";
    case Kind::Int:
      return std::to_string(i);
    case Kind::Float:
      return from_text ? s : nlohmann::json(f).dump();
    case Kind::String:
      return "'" + s + "'";
    case Kind::List: {
      std::string out = "[";
      for (size_t k = 0; k < items.size(); ++k) out += (k ? ", " : "") + items[k].display();
      return out + "]";
    }
  }
  return "";
}

RawLabel label_from_text(std::string_view cell, const std::string& file, size_t line) {
  RawLabel r;
  r.from_text = true;
  if (cell.empty()) return r;
  if (cell.front() == '[') {
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(cell);
    } catch (const nlohmann::json::exception&) {  // parse_error, or out_of_range for 1e400
      fail(file, ": line ", line, ": label cell ", std::string(cell),
           " starts with '[' but is not a JSON list such as [0, 1] or [\"a\", \"b\"]");
    }
    r = label_from_json(j, file, line);
    r.from_text = true;
    return r;
  }
  r.s = std::string(cell);
  if (parse_int(cell, &r.i)) {
    r.kind = RawLabel::Kind::Int;
    r.f = static_cast<double>(r.i);
  } else if (parse_float(cell, &r.f)) {
    if (!std::isfinite(r.f)) fail(file, ": line ", line, ": label ", r.s, " is not a finite number");
    r.kind = RawLabel::Kind::Float;
  } else {
    r.kind = RawLabel::Kind::String;
  }
  return r;
}

RawLabel label_from_json(const nlohmann::json& v, const std::string& file, size_t line) {
  if (!v.is_array()) return scalar_from_json(v, file, line, false);
  RawLabel r;
  r.kind = RawLabel::Kind::List;
  r.items.reserve(v.size());
  for (const auto& e : v) {
    if (e.is_array())
      fail(file, ": line ", line, ": label is a nested list; expected a flat list of names or 0/1 values");
    r.items.push_back(scalar_from_json(e, file, line, true));
  }
  return r;
}

}  // namespace strata::data
