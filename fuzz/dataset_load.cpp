#include "dataset_load.h"

#include "data/dataset.h"
#include "data/json_rows.h"
#include "util/error.h"

namespace strata::fuzz {

void load_dataset_file(const std::string& path) {
  for (const bool streaming : {false, true}) {
    data::DataOptions opts;
    opts.train_file = path;
    opts.streaming = streaming;
    opts.columns.pair = streaming ? "" : "pair";  // an optional second text: present in some seeds
    opts.warn = [](const std::string&) {};
    try {
      const data::Datasets d = data::load_datasets(opts);
      std::string text, pair;
      for (size_t i = 0; i < d.train->size(); ++i) d.train->texts(i, text, pair);
    } catch (const Error&) {
    }
  }
  try {
    data::for_each_row(path, data::detect_format(path, "", 0), [](const nlohmann::json& row, size_t) {
      if (!row.is_object()) __builtin_trap();
    });
  } catch (const Error&) {
  }
}

}  // namespace strata::fuzz
