// A CSV or TSV data file of arbitrary bytes: the same bytes are read as data.csv
// (comma-delimited) and as data.tsv (tab-delimited).
#include <cstddef>
#include <cstdint>

#include "dataset_load.h"
#include "scratch_dir.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  for (const char* name : {"data.csv", "data.tsv"})
    strata::fuzz::load_dataset_file(strata::fuzz::scratch().write(name, data, size));
  return 0;
}
