// The text of a YAML mapping key. YAML allows a key that is itself a list or a mapping
// ("? [a, b]: 1"); yaml-cpp's as<std::string>() then throws its own exception, which names
// no file. Every config reader takes its keys through here, so such a key is a strata::Error.
#pragma once
#include <string>

#include <yaml-cpp/yaml.h>

#include "util/error.h"

namespace strata {

// `source` names the file, e.g. "job.yaml"; the key's line is added.
inline std::string yaml_key(const YAML::Node& key, const std::string& source) {
  if (!key.IsScalar())
    fail(source, " line ", key.Mark().line + 1, ": a key must be a plain name, not a ",
         key.IsSequence() ? "list" : key.IsMap() ? "mapping" : "null");
  return key.Scalar();
}

}  // namespace strata
