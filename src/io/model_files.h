// The weight files of a model directory as HF's save_pretrained writes them: one
// model.safetensors, or, above a size, shards model-0000k-of-0000n.safetensors with
// model.safetensors.index.json mapping each tensor to its shard (read by SafetensorsDir).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "io/safetensors.h"

namespace strata::io {

// The folder of DIR that holds the HF model: DIR itself, or, for a sentence-transformers export
// whose root has no config.json, the folder its modules.json names for the Transformer module
// ("path": "" is the root, "0_Transformer" a subfolder). Errors name modules.json.
std::string hf_model_dir(const std::string& dir);

// HF's default max_shard_size of save_pretrained (transformers 4.36: "5GB").
inline constexpr uint64_t kDefaultMaxShardBytes = 5'000'000'000ULL;

// Writes the tensors into DIR: one file when they fit in max_shard_bytes, else shards filled
// in the order given (a tensor larger than the limit gets a shard of its own), as HF shards.
// Every file is written atomically, the index last; weight files of an earlier save in DIR
// that this one does not write are removed after.
void write_model_weights(const std::string& dir, const std::vector<TensorToWrite>& tensors,
                         const std::map<std::string, std::string>& metadata, uint64_t max_shard_bytes);

// "5GB", "500MB", "2GiB", "100kB" or a plain byte count, with HF's units (KB/MB/GB decimal,
// KiB/MiB/GiB binary). Errors name `where` and show what is expected.
uint64_t parse_shard_size(const std::string& text, const std::string& where);

}  // namespace strata::io
