// A batch's columns where the model's ops read them. A model's forward (and infer) uploads the
// batch into its state once; loss and backward read the same copies. On the CPU these are the
// batch's own vectors, nothing is copied; on a GPU each column is one host-to-device copy per
// batch (models/model.h).
#pragma once
#include <cstdint>

#include "core/batch.h"
#include "tensor/device_array.h"

namespace strata {

struct BatchInputs {
  // Null where the batch has no such column.
  const int32_t *input_ids = nullptr, *attention_mask = nullptr, *token_type_ids = nullptr, *labels = nullptr,
                *decoder_input_ids = nullptr, *sentence_order_label = nullptr;
  const double* float_labels = nullptr;

  void upload(const Batch& b) {
    input_ids = ids_.upload(b.input_ids);
    attention_mask = mask_.upload(b.attention_mask);
    token_type_ids = types_.upload(b.token_type_ids);
    labels = labels_.upload(b.labels);
    decoder_input_ids = decoder_.upload(b.decoder_input_ids);
    sentence_order_label = sop_.upload(b.sentence_order_label);
    float_labels = floats_.upload(b.float_labels);
  }

 private:
  DeviceArray<int32_t> ids_, mask_, types_, labels_, decoder_, sop_;
  DeviceArray<double> floats_;
};

}  // namespace strata
