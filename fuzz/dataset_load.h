// What the CSV and JSON Lines targets do with a data file: load it as `strata train` loads a
// text-classification train_file (the scan, the label inference and mapping), once in memory
// and once streaming with every text re-read by offset, then walk it row by row as the
// question-answering and token-classification readers do.
#pragma once
#include <string>

namespace strata::fuzz {

void load_dataset_file(const std::string& path);

}  // namespace strata::fuzz
