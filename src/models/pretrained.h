// Model directories as HF's save_pretrained writes them: config.json + model.safetensors
// (or sharded model-0000x-of-0000y.safetensors + model.safetensors.index.json).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "io/model_files.h"
#include "models/model.h"

namespace strata {

// What from_pretrained would report: names the model expected but the checkpoint lacks
// (initialised fresh, as HF does for a new task head), and checkpoint names it did not use.
struct LoadReport {
  std::vector<std::string> missing;
  std::vector<std::string> unexpected;
};

// Loads DIR into a model of the task named by its config (or `task_override`). A checkpoint
// saved with or without the base-model prefix ("bert.") loads into either. A tensor whose shape
// disagrees with config.json is an error naming both. Missing parameters are initialised with
// init_seed (HF's init rules).
template <typename T>
std::unique_ptr<Model<T>> load_pretrained(const std::string& dir, LoadReport* report = nullptr,
                                                 const Task* task_override = nullptr, uint64_t init_seed = 42);

// The same with a config the caller has adjusted (e.g. the labels of a new task head), loading
// (or initialising) only the entries `keep` accepts (a pipeline stage's); the report covers all.
template <typename T>
std::unique_ptr<Model<T>> load_pretrained(const ModelConfig& cfg, const std::string& dir,
                                                 LoadReport* report = nullptr, uint64_t init_seed = 42,
                                                 const EntryFilter& keep = {});

// Loads DIR's weights into an existing model (resume, best model at end). Every parameter must
// be there with its shape, and nothing else: anything else is a checkpoint of another model.
// Only the entries `keep` accepts are written.
template <typename T>
void load_weights(Model<T>& model, const std::string& dir, const EntryFilter& keep = {});

// Writes DIR/config.json and DIR/model.safetensors (F32, metadata format=pt, tied weights
// stored once under HF's kept name), each atomically; creates DIR if needed. Weights of more
// than max_shard_bytes go into shards with an index, as HF's save_pretrained(max_shard_size).
template <typename T>
void save_pretrained(const Model<T>& model, const std::string& dir,
                     uint64_t max_shard_bytes = io::kDefaultMaxShardBytes);

// Prints the report as HF's warnings do (to stderr); nothing when both lists are empty.
void print_load_report(const LoadReport& r, const std::string& dir);

}  // namespace strata
