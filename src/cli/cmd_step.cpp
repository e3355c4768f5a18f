// `strata step`: the numerics command. One forward + backward with dropout off, optionally
// one optimizer step, everything written to a .safetensors file for comparison with
// another framework (loss, logits, grad.<HF name>, and updated <HF name>).
#include <cstdio>
#include <vector>

#include "cli/args.h"
#include "models/batch_json.h"
#include "cli/commands.h"
#include "io/safetensors.h"
#include "models/pretrained.h"
#include "train/optimizer.h"
#include "util/error.h"

namespace strata::cli {

namespace {

template <typename T>
int run_step(const Args& a) {
  const std::string dir = a.str("model"), batch_path = a.str("batch"), out = a.str("out");
  LoadReport report;
  auto model = load_pretrained<T>(dir, &report);
  print_load_report(report, dir);
  const Batch batch = read_batch_json(batch_path, model->config());
  const bool qa = model->config().task == Task::QuestionAnswering;
  if (qa ? batch.start_positions.empty() : batch.labels.empty() && batch.float_labels.empty())
    fail(batch_path, ": '", qa ? "start_positions" : "labels",
         "' is missing; strata step needs targets to compute a loss and gradients");

  const std::unique_ptr<ModelState> state = model->new_state();
  const nn::DropoutCtx no_dropout{false, 0};
  model->forward(batch, no_dropout, *state);
  const LossResult loss = model->loss(batch, *state);
  model->grads().zero();
  model->backward(batch, no_dropout, *state);

  const ParamTable& table = model->table();
  const DType dt = dtype_of<T>();
  const T loss_value = static_cast<T>(loss.loss);
  std::vector<io::TensorToWrite> tensors = {{"loss", dt, {}, &loss_value}};
  for (const HeadOutput<T>& o : model->head_outputs(batch, *state)) tensors.push_back({o.name, dt, o.shape, o.data});
  for (const ParamEntry& e : table.entries())
    tensors.push_back({"grad." + e.name, dt, e.shape, model->grads().data() + e.offset});

  std::unique_ptr<Optimizer<T>> opt;
  if (a.has("optimizer")) {
    OptimizerConfig oc;
    oc.name = a.str("optimizer");
    oc.lr = a.num_or("lr", 1e-3);
    oc.weight_decay = a.num_or("weight-decay", 0.0);
    const auto betas = a.nums_or("betas", {0.9, 0.999});
    if (betas.size() != 2) fail("strata step: --betas expects two numbers, e.g. 0.9,0.999");
    oc.beta1 = betas[0];
    oc.beta2 = betas[1];
    oc.eps = a.num_or("eps", 1e-8);
    oc.momentum = a.num_or("momentum", 0.0);
    oc.exclude_bias_and_norm_from_decay = a.has("exclude-bias-norm-decay");
    opt = std::make_unique<Optimizer<T>>(oc, table);
    opt->step(model->params().data(), model->grads().data(), oc.lr);
    for (const ParamEntry& e : table.entries())
      tensors.push_back({e.name, dt, e.shape, model->params().data() + e.offset});
  }
  io::write_safetensors(out, tensors,
                        {{"format", "pt"}, {"model", dir}, {"architecture", model->config().architecture()},
                         {"optimizer", a.str_or("optimizer", "none")}});
  std::printf("%s  loss %.9g  (%zu gradients%s) -> %s\n", model->config().architecture().c_str(), loss.loss,
              table.entries().size(), opt ? ", updated parameters" : "", out.c_str());
  return 0;
}

}  // namespace

int cmd_step(int argc, char** argv) {
  const Args a("step", argc, argv,
               {"model", "batch", "out", "optimizer", "lr", "weight-decay", "betas", "eps", "momentum", "threads",
                "precision"},
               {"exclude-bias-norm-decay"});
  kernels::set_num_threads(a.int_or("threads", 0));
  const std::string precision = a.str_or("precision", "fp32");
  if (precision == "fp32") return run_step<float>(a);
  if (precision == "fp64") return run_step<double>(a);
  fail("strata step: --precision must be fp32 or fp64, got '", precision, "'");
}

}  // namespace strata::cli
