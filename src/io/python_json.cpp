#include "io/python_json.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string_view>

namespace strata::io {

std::string python_float(double v) {
  if (!std::isfinite(v)) return nlohmann::json(v).dump();
  char buf[64];
  // Scientific notation gives the shortest round-trip digits and their decimal exponent.
  const auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  const std::string_view sci(buf, static_cast<size_t>(r.ptr - buf));
  const size_t e_at = sci.find('e');
  const bool negative = sci[0] == '-';
  std::string digits;
  for (char c : sci.substr(negative ? 1 : 0, e_at - (negative ? 1 : 0)))
    if (c != '.') digits += c;
  int exp10 = 0;  // from_chars takes no '+': skip it
  const std::string_view e = sci.substr(e_at + (sci[e_at + 1] == '+' ? 2 : 1));
  std::from_chars(e.data(), e.data() + e.size(), exp10);
  std::string out = negative ? "-" : "";
  const int n = static_cast<int>(digits.size());
  if (exp10 >= -4 && exp10 < 16) {
    const int point = exp10 + 1;  // digits before the decimal point
    if (point <= 0) {
      out += "0." + std::string(static_cast<size_t>(-point), '0') + digits;
    } else if (point >= n) {
      out += digits + std::string(static_cast<size_t>(point - n), '0') + ".0";
    } else {
      out += digits.substr(0, static_cast<size_t>(point)) + "." + digits.substr(static_cast<size_t>(point));
    }
  } else {
    out += digits.substr(0, 1);
    if (n > 1) out += "." + digits.substr(1);
    const int a = std::abs(exp10);
    out += std::string(exp10 < 0 ? "e-" : "e+") + (a < 10 ? "0" : "") + std::to_string(a);
  }
  return out;
}

namespace {
void write(const nlohmann::json& j, int indent, int level, std::string& out) {
  const std::string pad(static_cast<size_t>(indent * (level + 1)), ' ');
  const std::string close_pad(static_cast<size_t>(indent * level), ' ');
  if (j.is_object() && !j.empty()) {
    out += "{\n";
    bool first = true;
    for (const auto& [key, value] : j.items()) {
      out += first ? "" : ",\n";
      first = false;
      out += pad + nlohmann::json(key).dump() + ": ";
      write(value, indent, level + 1, out);
    }
    out += "\n" + close_pad + "}";
  } else if (j.is_array() && !j.empty()) {
    out += "[\n";
    for (size_t i = 0; i < j.size(); ++i) {
      out += (i ? ",\n" : "") + pad;
      write(j[i], indent, level + 1, out);
    }
    out += "\n" + close_pad + "]";
  } else if (j.is_number_float()) {
    out += python_float(j.get<double>());
  } else {
    out += j.dump();
  }
}
}  // namespace

std::string python_json(const nlohmann::json& j, int indent) {
  std::string out;
  write(j, indent, 0, out);
  return out;
}

}  // namespace strata::io
