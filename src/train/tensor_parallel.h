// Tensor parallelism as the Trainer drives it: the layers' collectives bound to the
// tensor-parallel communicator, and the whole model put together from the ranks' slices for
// writing (an HF model directory is always the unsplit model).
#pragma once
#include <memory>

#include "dist/communicator.h"
#include "models/model.h"

namespace strata {

// The group nn/ layers all-reduce over (nn/tensor_group.h), bound to `tensor`, which must
// outlive the model it is given to.
nn::TensorGroup<float> bind_tensor_group(dist::Communicator& tensor);

// Collective over `tensor`: fails, naming the parameter, unless every replicated parameter
// (layer norms, row-parallel biases, position embeddings) is bit-identical on every rank. Their
// gradients are identical by construction (computed from the same summed activations), so the
// ranks' optimizers keep them equal; this checks that invariant.
void check_replicas_identical(const Model<float>& local, dist::Communicator& tensor);

// Collective over `tensor`: checks the replicas (above), then every rank sends its slices; rank 0 of `tensor` gets a model of
// the same config without the split, holding the whole parameters (the others get null).
// Replicated parameters come from rank 0. Only the parameters are filled.
std::unique_ptr<Model<float>> gather_whole_model(const Model<float>& local, dist::Communicator& tensor);

}  // namespace strata
