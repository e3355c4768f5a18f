// The softmax of attention scores that were computed by products of their own (nn/seq2seq_layer:
// cross attention, T5's position bias), forward and backward: plain loops over rows, the sums
// in double.
#include <cmath>

#include "kernels/cpu/cpu_ops.h"

namespace strata::kernels::cpu {

template <typename T>
void scores_softmax(T* S, const T* pos_bias, const int32_t* mask, int B, int NH, int Tq, int Tk, bool causal,
                    int first_query) {
  const int rows = B * NH * Tq;
#pragma omp parallel for schedule(static) if (static_cast<size_t>(rows) * Tk >= (size_t{1} << 15))
  for (int r = 0; r < rows; ++r) {
    const int i = r % Tq, h = (r / Tq) % NH, b = r / (Tq * NH);
    T* row = S + static_cast<size_t>(r) * Tk;
    if (pos_bias)
      for (int j = 0; j < Tk; ++j) row[j] += pos_bias[(static_cast<size_t>(i) * Tk + j) * NH + h];
    auto valid = [&](int j) {
      return (!mask || mask[static_cast<size_t>(b) * Tk + j] != 0) && (!causal || j <= first_query + i);
    };
    double mx = -INFINITY;
    for (int j = 0; j < Tk; ++j)
      if (valid(j)) mx = std::max(mx, static_cast<double>(row[j]));
    if (mx == -INFINITY) {
      for (int j = 0; j < Tk; ++j) row[j] = static_cast<T>(1.0 / Tk);
      continue;
    }
    double sum = 0;
    for (int j = 0; j < Tk; ++j) {
      const double e = valid(j) ? std::exp(static_cast<double>(row[j]) - mx) : 0.0;
      row[j] = static_cast<T>(e);
      sum += e;
    }
    for (int j = 0; j < Tk; ++j) row[j] = static_cast<T>(row[j] / sum);
  }
}

template <typename T>
void scores_softmax_backward(const T* P, T* G, T* d_pos_bias, int B, int NH, int Tq, int Tk, T scale) {
  const size_t rows = static_cast<size_t>(B) * NH * Tq;
  // Sequential: rows of different b add into the same d_pos_bias elements, in b's order.
  for (size_t r = 0; r < rows; ++r) {
    const T* p = P + r * Tk;
    T* g = G + r * Tk;
    double dot = 0;
    for (int j = 0; j < Tk; ++j) dot += static_cast<double>(g[j]) * p[j];
    T* db = d_pos_bias ? d_pos_bias + (r % Tq) * Tk * NH + (r / Tq) % NH : nullptr;  // row i, head h
    for (int j = 0; j < Tk; ++j) {
      const T ds = static_cast<T>(p[j] * (g[j] - dot));
      if (db) db[static_cast<size_t>(j) * NH] += ds;
      g[j] = ds * scale;
    }
  }
}

template void scores_softmax<float>(float*, const float*, const int32_t*, int, int, int, int, bool, int);
template void scores_softmax<double>(double*, const double*, const int32_t*, int, int, int, int, bool, int);
template void scores_softmax_backward<float>(const float*, float*, float*, int, int, int, int, float);
template void scores_softmax_backward<double>(const double*, double*, double*, int, int, int, int, double);

}  // namespace strata::kernels::cpu
