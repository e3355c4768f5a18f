#include "train/tensor_parallel.h"

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/ops.h"
#include "models/registry.h"
#include "models/tensor_split.h"
#include "tensor/device_array.h"
#include "util/error.h"

namespace strata {

void check_replicas_identical(const Model<float>& local, dist::Communicator& tensor) {
  // FNV-1a over the bytes of every replicated parameter, one hash per entry.
  std::string mine;
  for (const ParamEntry& e : local.table().entries()) {
    if (!e.replicated()) continue;
    uint64_t h = 1469598103934665603ull;
    const StagedRead<float> values(local.params(), e.offset, e.numel);
    const auto* p = reinterpret_cast<const unsigned char*>(values.data());
    for (size_t i = 0; i < e.numel * sizeof(float); ++i) h = (h ^ p[i]) * 1099511628211ull;
    mine.append(reinterpret_cast<const char*>(&h), sizeof h);
  }
  const std::vector<std::string> all = tensor.all_gather_bytes(mine, "replicated parameters' hashes");
  for (size_t r = 1; r < all.size(); ++r) {
    if (all[r] == all[0]) continue;
    size_t k = 0;
    while (k + sizeof(uint64_t) <= mine.size() && all[r].compare(k, sizeof(uint64_t), all[0], k, sizeof(uint64_t)) == 0)
      k += sizeof(uint64_t);
    std::string name;
    size_t i = 0;
    for (const ParamEntry& e : local.table().entries())
      if (e.replicated() && i++ == k / sizeof(uint64_t)) name = e.name;
    fail("tensor parallelism: the replicated parameter ", name, " differs between tensor-parallel ranks 0 and ", r,
         " (their gradients must be identical by construction)");
  }
}

nn::TensorGroup<float> bind_tensor_group(dist::Communicator& tensor) {
  nn::TensorGroup<float> g;
  g.degree = tensor.size();
  g.rank = tensor.rank();
  g.all_reduce_sum = [&tensor](float* x, size_t n) { tensor.all_reduce_sum(x, n, "tensor-parallel sum"); };
  g.all_reduce_max = [&tensor](float* x, size_t n) { tensor.all_reduce_max(x, n, "tensor-parallel max"); };
  g.all_reduce_sum_f64 = [&tensor](double* x, size_t n) { tensor.all_reduce_sum(x, n, "tensor-parallel loss sums"); };
  return g;
}

std::unique_ptr<Model<float>> gather_whole_model(const Model<float>& local, dist::Communicator& tensor) {
  check_replicas_identical(local, tensor);
  const bool root = tensor.rank() == 0;
  std::unique_ptr<Model<float>> whole;
  if (root) {
    ModelConfig cfg = local.config();
    cfg.tensor_split = {};
    whole = make_model<float>(cfg);
    // Every parameter is written below, some by ops: backed whole first (a GPU's memory is
    // not backed on touch).
    kernels::back_memory(whole->params().data(), whole->params().size() * sizeof(float));
  }
  // One tensor at a time: each rank puts its slice into zeros and the sum lands at the root
  // (adding zeros is exact), so no rank holds more than one whole tensor besides its model. The
  // slices meet in host memory (a save, not a step).
  std::vector<float> buf;
  for (const ParamEntry& e : local.table().entries()) {
    float* dst = root ? whole->params().data() + whole->table().at(e.name).offset : nullptr;
    if (e.replicated()) {
      if (root) kernels::copy(local.params().data() + e.offset, dst, e.numel);
      continue;
    }
    buf.assign(global_numel(e), 0.0f);
    put_slice(e, local.tensor_split(), StagedRead<float>(local.params(), e.offset, e.numel).data(), buf.data());
    tensor.reduce_sum(buf.data(), buf.size(), 0, "tensor-parallel slices of a parameter, to save");
    if (root)
      kernels::copy_bytes(dst, whole->params().device(), buf.data(), kernels::Device::cpu(), buf.size() * sizeof(float));
  }
  return whole;
}

}  // namespace strata
