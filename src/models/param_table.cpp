#include "models/param_table.h"

#include "util/error.h"

namespace strata {

size_t ParamTable::add(std::string name, std::vector<int64_t> shape, bool no_decay) {
  size_t numel = 1;
  for (int64_t d : shape) numel *= static_cast<size_t>(d);
  // No padding between entries: consecutive adds stay contiguous (fused q/k/v relies on it).
  const size_t offset = total_;
  index_.emplace(name, entries_.size());
  std::vector<int64_t> global = shape;
  entries_.push_back({std::move(name), std::move(shape), offset, numel, no_decay, std::move(global)});
  total_ = offset + numel;
  return offset;
}

size_t ParamTable::add_split(std::string name, std::vector<int64_t> global_shape, bool no_decay, int split_dim,
                             int parts, int degree) {
  if (degree <= 1 || split_dim < 0) return add(std::move(name), std::move(global_shape), no_decay);
  std::vector<int64_t> local = global_shape;
  const int64_t d = local.at(static_cast<size_t>(split_dim));
  if (d % (static_cast<int64_t>(parts) * degree) != 0)
    fail(name, ": dimension ", split_dim, " (", d, ") does not split into ", parts, " x ", degree, " equal pieces");
  local[static_cast<size_t>(split_dim)] = d / degree;
  const size_t offset = add(std::move(name), std::move(local), no_decay);
  ParamEntry& e = entries_.back();
  e.global_shape = std::move(global_shape);
  e.split_dim = split_dim;
  e.split_parts = parts;
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
