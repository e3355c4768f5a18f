#include "models/param_table.h"

#include "util/error.h"

namespace strata {

size_t ParamTable::add(std::string name, std::vector<int64_t> shape, bool no_decay) {
  size_t numel = 1;
  for (int64_t d : shape) numel *= static_cast<size_t>(d);
  // No padding between entries: consecutive adds stay contiguous (fused q/k/v relies on it).
  const size_t offset = total_;
  index_.emplace(name, entries_.size());
  entries_.push_back({std::move(name), std::move(shape), offset, numel, no_decay});
  total_ = offset + numel;
  return offset;
}

const ParamEntry* ParamTable::find(std::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &entries_[it->second];
}

const ParamEntry& ParamTable::at(std::string_view name) const {
  const ParamEntry* e = find(name);
  if (!e) fail("no parameter named '", name, "'");
  return *e;
}

}  // namespace strata
