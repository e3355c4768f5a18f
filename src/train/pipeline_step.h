// The forward and backward passes of one optimizer step on one pipeline stage: each batch is
// cut into micro-batches (micro_batches.h) and run in the schedule's order
// (dist/pipeline_schedule.h: GPipe or 1F1B). Between stages, activations go forward and their
// gradients back as non-blocking messages over the pipeline group: receives are posted ahead,
// sends return at once, so transfers overlap the stage's compute and a stage waits only for
// what it cannot start without. Each micro-batch in flight has its own ModelState (the model
// keeps nothing of a micro-batch itself).
//
// With one stage (no pipeline) the same code runs the micro-batches one after another with no
// messages: 1F1B on one stage is forward, loss, backward per micro-batch.
//
// Replica threads (one stage, one micro-batch per batch): the batch is cut by rows into R
// parts that run forward and backward at once on R threads of this process, each
// single-threaded, each into its own gradient buffer (part 0 into the model's); the buffers are
// then summed in part order. Part r of the batch that is micro-batch k of the step is dropout
// micro-batch k*R + r, so the step equals gradient accumulation over the parts (to the rounding
// of the sums). On a few cores and a small model this beats threading each operation: no
// barrier after every kernel, and each product runs on one core's cache.
//
// Parameters shared between stages (pipeline_stages.h) are kept in sync here: borrowers send
// their gradient to the owner during the step's last backward, and receive the updated values
// after the optimizer step (refresh_borrowed_parameters).
#pragma once
#include <functional>
#include <memory>
#include <vector>

#include "dist/communicator.h"
#include "dist/pipeline_schedule.h"
#include "models/model.h"
#include "train/data_parallel_step.h"
#include "train/pipeline_stages.h"

namespace strata {

class PipelineStep {
 public:
  // pipeline: this replica's stages, ranked by stage (null: one stage). head_only: backward runs
  // the head alone (freeze_base_model), and the stages without it run no backward. activations:
  // how every micro-batch's state keeps its blocks' saved tensors (kept, recomputed, offloaded).
  // replicas: replica threads (above); more than 1 needs one stage and one micro-batch.
  PipelineStep(Model<float>& model, const PipelineStages& stages, dist::Communicator* pipeline,
               dist::PipelineKind kind, int micro_batches, bool head_only, const nn::ActivationPolicy& activations,
               int replicas = 1);
  ~PipelineStep();

  int stage() const { return stage_; }
  int replicas() const { return replicas_; }
  int stages() const { return layout_.count(); }
  bool is_first() const { return stage_ == 0; }
  bool is_last() const { return stage_ == stages() - 1; }
  const PipelineStages& layout() const { return layout_; }

  // Zeroes the gradients of the parameters this stage borrows (DataParallelStep zeroes the
  // window it owns).
  void zero_borrowed_grads();
  // Forward and backward of `batch` in micro-batches. They are numbers first, first+1, ... of
  // the `total` micro-batches of this optimizer step, which all pass through here in order
  // (each batch of the gradient accumulation is one call); the data-parallel step reduces
  // during the last one's backward. norm: the loss normaliser (labels of the global batch);
  // dropout(k): the dropout of micro-batch k. Returns the sum of the micro-batches' losses on
  // the last stage, 0 on the others.
  double run(const Batch& batch, int first, int total, double norm, const std::function<nn::DropoutCtx(int)>& dropout,
             DataParallelStep& dp);
  // After the optimizer step: owners send the new values of shared parameters to borrowers.
  void refresh_borrowed_parameters();

  // Inference forward of one batch (dropout off). One stage: Model::infer in the first state.
  // Several: through the stages, batch after batch, each running its units' forward; a stage
  // sends its output on and goes on with the next batch while it travels. On the last stage
  // returns the state to read the head outputs and loss from; null on the others.
  ModelState* infer(const Batch& b);
  void finish_infer();  // waits for the last outputs sent and for the other stages

  // The parameters this stage keeps: those it owns and those it borrows (what a load writes).
  EntryFilter keeps() const;
  // Gives the memory of the parameters and gradients this stage does not keep back (to the OS,
  // or a GPU's driver), after something wrote the whole model: a whole load, a gather to save.
  void release_other_stages();
  // Collective over the pipeline group: the first stage receives every stage's window of the
  // parameters, so that it holds the whole model (to save it); call release_other_stages after.
  void gather_parameters_to_first();

  // Resident bytes of the gradients of the borrowed parameters (outside the stage's window).
  size_t borrowed_gradient_bytes() const;
  // The most the states' offload pools held (ModelState::offload_pool_bytes), summed.
  size_t offload_pool_bytes() const;

  // Seconds spent waiting for messages, and running the schedule (the passes and those waits;
  // not the data-parallel reduction's final wait), over all steps so far.
  double idle_seconds() const { return idle_s_; }
  double schedule_seconds() const { return schedule_s_; }

 private:
  struct Slot;
  Slot& slot(size_t i);  // made on first use
  Slot& slot_of(int micro);
  // What a stage receives from the one before (and sends its gradient back), and what it sends
  // on (and receives the gradient of), in floats: Model::boundary_values at its range's ends.
  size_t input_values(const Batch& b) const { return model_.boundary_values(b, layout_.units(stage_).begin - 1); }
  size_t output_values(const Batch& b) const { return model_.boundary_values(b, layout_.units(stage_).end - 1); }
  void post_activation_recv(const std::vector<Batch>& micro, int j);
  void post_gradient_recv(const std::vector<Batch>& micro, int j);
  void wait(std::unique_ptr<dist::Request>& r, double& idle);  // adds the time waited to idle
  void post_shared_gradient_recvs();
  void add_shared_gradients();
  void send_shared_gradients();
  void settle(double& idle);  // waits for every send, then for the other stages
  double run_replicas(const Batch& batch, int first, int total, double norm,
                      const std::function<nn::DropoutCtx(int)>& dropout, DataParallelStep& dp);

  Model<float>& model_;
  const PipelineStages& layout_;
  dist::Communicator* comm_;
  dist::PipelineKind kind_;
  int micro_;
  bool head_only_;
  nn::ActivationPolicy activations_;
  int stage_;
  int replicas_;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::vector<Buffer<float>> replica_grads_;  // replicas 1..R-1's gradients (0 writes the model's)
  // Shared parameters: gradients received from borrowers (owner), sends to owners (borrower).
  std::vector<Buffer<float>> shared_in_;
  std::vector<std::unique_ptr<dist::Request>> shared_recvs_, shared_sends_;
  int64_t infer_count_ = 0;
  double idle_s_ = 0, schedule_s_ = 0;
};

}  // namespace strata
