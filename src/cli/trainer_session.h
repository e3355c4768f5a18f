// One Trainer with its model and data, set up as `strata train | evaluate | predict` sets them
// up: the arguments checked against the ranks and the model, the model loaded (or made from
// its config), the data read and split into loaders, the Trainer built over the ranks'
// process groups. cmd_train.cpp drives a session from the command line and writes HF's
// result files; the Python package (src/python/) drives one from a script.
#pragma once
#include <memory>
#include <string>

#include "cli/job_data.h"
#include "data/loader.h"
#include "dist/communicator.h"
#include "dist/process_groups.h"
#include "train/trainer.h"

namespace strata::cli {

// The processes of the job: one, or the ranks MPI started (mpirun, Slurm, strata launch).
// MPI starts once per process, so a process that runs several sessions keeps one Ranks.
struct Ranks {
  dist::Layout layout;
  std::unique_ptr<dist::Communicator> world;
};
// The layout from the environment; MPI joined when it says several processes. `timeout_s`:
// how long a collective may wait (ddp_timeout) before the job is stopped.
Ranks join_ranks(double timeout_s);

// A split's batches and what its evaluation computes, read after the session started
// (Python's evaluate(eval_dataset) / predict(test_dataset)).
struct ExtraSplit {
  JobData data;  // owns the tokenizers the loader encodes with
  std::unique_ptr<data::DataLoader> loader;
  const EvalTask* task = nullptr;  // null: the Trainer's default for the model
};

class TrainerSession {
 public:
  // Everything `strata <mode>` checks and prepares before its first step; throws
  // strata::Error naming the file or option that is wrong. Rank 0 prints what it sets up.
  TrainerSession(const TrainingArguments& a, Mode mode, Ranks& ranks);

  Trainer& trainer() { return *trainer_; }
  const TrainingArguments& args() const { return args_; }
  // The job's ranks; on GPUs, with collectives that take device buffers.
  dist::Communicator& world() { return gpu_world_ ? *gpu_world_ : *ranks_.world; }
  bool is_main() const { return ranks_.world->rank() == 0; }
  // The splits the arguments and mode name; null where there is none.
  data::DataLoader* train_data() { return train_.get(); }
  data::DataLoader* eval_data() { return eval_.get(); }
  data::DataLoader* test_data() { return test_.get(); }
  const EvalTask* eval_task() const { return data_.validation.eval.get(); }
  const EvalTask* test_task() const { return data_.test.eval.get(); }
  bool test_labelled() const { return data_.test.labelled; }
  // `file` read as `strata evaluate` (Mode::Evaluate) or `strata predict` (Mode::Predict)
  // reads its file, its labels mapped by the trained model's label names.
  ExtraSplit load_split(const std::string& file, Mode mode);

 private:
  std::unique_ptr<data::DataLoader> loader(const Split& split, bool train) const;

  TrainingArguments args_;
  Ranks& ranks_;
  std::unique_ptr<dist::Communicator> gpu_world_;  // GPU ranks: ranks_.world's ranks, for device buffers
  dist::ProcessGroups groups_;
  JobData data_;
  std::unique_ptr<data::DataLoader> train_, eval_, test_;
  std::unique_ptr<Trainer> trainer_;
};

// The model's config with the task from the arguments (a bare encoder config is
// classification unless told otherwise); the labels come with the data (job_data.h).
ModelConfig model_config(const TrainingArguments& a);

// Refuses to train into a non-empty output_dir unless overwrite_output_dir or resuming, as HF does.
void check_output_dir(const TrainingArguments& a);

}  // namespace strata::cli
