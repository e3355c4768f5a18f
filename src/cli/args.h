// A small "--name value" / "--flag" parser for the subcommands. Unknown options are errors
// that list the valid ones; every value is checked for its type.
#pragma once
#include <map>
#include <set>
#include <string>
#include <vector>

namespace strata::cli {

class Args {
 public:
  // `valued`: options that take a value; `flags`: options that do not.
  Args(const std::string& command, int argc, char** argv, std::set<std::string> valued, std::set<std::string> flags);
  bool has(const std::string& name) const;
  std::string str(const std::string& name) const;  // required
  std::string str_or(const std::string& name, const std::string& dflt) const;
  double num_or(const std::string& name, double dflt) const;
  int int_or(const std::string& name, int dflt) const;
  std::vector<double> nums_or(const std::string& name, std::vector<double> dflt) const;  // "a,b"
  // A flag: absent -> dflt; "--name" or "--name=true" -> true; "--name=false" -> false.
  bool flag_or(const std::string& name, bool dflt) const;
  const std::vector<std::string>& positional() const { return positional_; }

 private:
  std::string command_;
  std::map<std::string, std::string> values_;
  std::vector<std::string> positional_;
};

}  // namespace strata::cli
