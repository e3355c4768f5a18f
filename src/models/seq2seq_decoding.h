// What BART's and T5's cached decoders (models/bart/bart_decoder.h, models/t5/t5_decoder.h) do
// alike around their own layers: the source as a batch, the cross-attention keys and values
// computed once from the encoder's output, and each row's last new position for the head.
#pragma once
#include <cstdint>
#include <vector>

#include "core/batch.h"
#include "kernels/ops.h"
#include "models/config.h"
#include "nn/seq2seq_decode.h"
#include "tensor/device_array.h"

namespace strata {

// One source (token ids, unpadded) as a batch of one row, checked against the model's config;
// `who` ("bart decoder") names the decoder in errors.
Batch source_batch(const ModelConfig& c, const std::vector<int32_t>& source, const char* who);

// Every decoder layer's cross-attention keys and values over `encoder_out` [source_len, C]: one
// cache row that all decoder rows share. Layer: any spec with a `cross_attn` sublayer.
template <typename T, typename Layer>
std::vector<nn::KeyValueCache<T>> cross_attention_caches(const std::vector<Layer>& layers, nn::Flat<T> f,
                                                         const T* encoder_out, int source_len, Buffer<T>& tmp) {
  std::vector<nn::KeyValueCache<T>> caches(layers.size());
  for (size_t i = 0; i < layers.size(); ++i) {
    caches[i].reset(1, source_len, layers[i].cross_attn.k.out);
    nn::cache_keys_values(layers[i].cross_attn, f, encoder_out, 1, source_len, 0, caches[i], tmp);
  }
  return caches;
}

// Each row's last of its n new positions, x [B*n, C] -> out [B, C] (the head only needs those).
template <typename T>
void last_new_positions(const T* x, int B, int n, int C, DeviceArray<int32_t>& rows, Buffer<T>& out) {
  rows.host().resize(static_cast<size_t>(B));
  for (int b = 0; b < B; ++b) rows.host()[b] = b * n + n - 1;
  out.resize(static_cast<size_t>(B) * C);
  kernels::gather_rows(x, rows.upload(), out.data(), B, C);
}

}  // namespace strata
