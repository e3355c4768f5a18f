#include "train/optimizer.h"

#include <algorithm>

#include "util/error.h"

namespace strata {

template <typename T>
Optimizer<T>::Optimizer(const OptimizerConfig& cfg, const ParamTable& table, size_t begin, size_t end)
    : cfg_(cfg), table_(table), end_(std::min(end, table.total())) {
  if (cfg.name != "adamw" && cfg.name != "sgd") fail("optimizer '", cfg.name, "' is not supported; expected adamw or sgd");
  begin_ = std::min(begin, end_);
  m_.resize(end_ - begin_);
  m_.zero();
  if (cfg.name == "adamw") {
    v_.resize(end_ - begin_);
    v_.zero();
  }
}

template <typename T>
void Optimizer<T>::step(T* params, const T* grads, double lr) {
  ++step_;
  const auto& entries = table_.entries();
  // Walk runs of consecutive entries with the same decay: one fused kernel call per run.
  auto frozen = [&](size_t k) { return !frozen_.empty() && frozen_[k]; };
  auto decays = [&](size_t k) { return !(cfg_.exclude_bias_and_norm_from_decay && entries[k].no_decay); };
  size_t i = 0;
  while (i < entries.size()) {
    if (frozen(i)) {
      ++i;
      continue;
    }
    const bool no_decay = !decays(i);
    size_t j = i + 1;
    while (j < entries.size() && !frozen(j) && !decays(j) == no_decay &&
           entries[j].offset == entries[j - 1].offset + entries[j - 1].numel)
      ++j;
    // The run [off, run_end), clipped to the owned slice.
    const size_t off = std::max(entries[i].offset, begin_);
    const size_t run_end = std::min(entries[j - 1].offset + entries[j - 1].numel, end_);
    i = j;
    if (off >= run_end) continue;
    const size_t n = run_end - off, s = off - begin_;
    const double wd = no_decay ? 0.0 : cfg_.weight_decay;
    if (cfg_.name == "adamw") {
      kernels::adamw_update(params + off, grads + off, m_.data() + s, v_.data() + s, n,
                            {lr, cfg_.beta1, cfg_.beta2, cfg_.eps, wd, step_});
    } else {
      kernels::sgd_update(params + off, grads + off, m_.data() + s, n,
                          {lr, cfg_.momentum, cfg_.dampening, wd, cfg_.nesterov, step_ == 1});
    }
  }
}

template <typename T>
std::vector<std::pair<std::string, Buffer<T>*>> Optimizer<T>::state_buffers() {
  if (cfg_.name == "adamw") return {{"exp_avg", &m_}, {"exp_avg_sq", &v_}};
  return {{"momentum_buffer", &m_}};
}

template class Optimizer<float>;
template class Optimizer<double>;

}  // namespace strata
