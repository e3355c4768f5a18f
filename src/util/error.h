// strata::Error: the one exception type for user-facing failures (bad input, bad config,
// corrupt files). Its message names the file / field / line and what was expected; the CLI
// prints it and exits non-zero. Programming errors use assert, not Error.
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace strata {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& msg) : std::runtime_error(msg) {}
};

// Concatenates its arguments with operator<< into one message.
template <typename... Args>
std::string cat(Args&&... args) {
  std::ostringstream os;
  (os << ... << std::forward<Args>(args));
  return os.str();
}

template <typename... Args>
[[noreturn]] void fail(Args&&... args) {
  throw Error(cat(std::forward<Args>(args)...));
}

}  // namespace strata

// STRATA_CHECK(cond, "[where] what was expected, got ", x): throws strata::Error when cond is false.
#define STRATA_CHECK(cond, ...)           \
  do {                                    \
    if (!(cond)) ::strata::fail(__VA_ARGS__); \
  } while (0)
