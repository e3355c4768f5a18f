#include "cli/args.h"

#include <cstdlib>

#include "util/error.h"

namespace strata::cli {

namespace {
std::string list(const std::set<std::string>& a, const std::set<std::string>& b) {
  std::string s;
  for (const auto* set : {&a, &b})
    for (const auto& n : *set) s += (s.empty() ? "--" : ", --") + n;
  return s;
}
}  // namespace

Args::Args(const std::string& command, int argc, char** argv, std::set<std::string> valued,
           std::set<std::string> flags)
    : command_(command) {
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--", 0) != 0) {
      positional_.push_back(a);
      continue;
    }
    std::string name = a.substr(2), value;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    } else if (valued.count(name)) {
      if (i + 1 >= argc) fail("strata ", command_, ": option --", name, " needs a value");
      value = argv[++i];
    }
    if (!valued.count(name) && !flags.count(name))
      fail("strata ", command_, ": unknown option --", name, " (valid: ", list(valued, flags), ")");
    values_[name] = value;
  }
}

bool Args::has(const std::string& name) const { return values_.count(name) > 0; }

std::string Args::str(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) fail("strata ", command_, ": missing required option --", name);
  return it->second;
}

std::string Args::str_or(const std::string& name, const std::string& dflt) const {
  auto it = values_.find(name);
  return it == values_.end() ? dflt : it->second;
}

double Args::num_or(const std::string& name, double dflt) const {
  auto it = values_.find(name);
  if (it == values_.end()) return dflt;
  char* end = nullptr;
  const double v = std::strtod(it->second.c_str(), &end);
  if (it->second.empty() || *end) fail("strata ", command_, ": --", name, " expects a number, got '", it->second, "'");
  return v;
}

int Args::int_or(const std::string& name, int dflt) const {
  auto it = values_.find(name);
  if (it == values_.end()) return dflt;
  char* end = nullptr;
  const long v = std::strtol(it->second.c_str(), &end, 10);
  if (it->second.empty() || *end) fail("strata ", command_, ": --", name, " expects an integer, got '", it->second, "'");
  return static_cast<int>(v);
}

bool Args::flag_or(const std::string& name, bool dflt) const {
  auto it = values_.find(name);
  if (it == values_.end()) return dflt;
  if (it->second.empty() || it->second == "true") return true;
  if (it->second == "false") return false;
  fail("strata ", command_, ": --", name, " takes no value, or =true / =false; got '", it->second, "'");
}

std::vector<double> Args::nums_or(const std::string& name, std::vector<double> dflt) const {
  auto it = values_.find(name);
  if (it == values_.end()) return dflt;
  std::vector<double> out;
  const std::string& s = it->second;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t comma = std::min(s.find(',', start), s.size());
    const std::string part = s.substr(start, comma - start);
    char* end = nullptr;
    const double v = std::strtod(part.c_str(), &end);
    if (part.empty() || *end) fail("strata ", command_, ": --", name, " expects comma-separated numbers, got '", s, "'");
    out.push_back(v);
    start = comma + 1;
  }
  return out;
}

}  // namespace strata::cli
