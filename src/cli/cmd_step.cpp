// `strata step`: the numerics command. One forward + backward with dropout off (in fp32, fp64,
// or fp32 with bf16 / fp16 products as mixed-precision training runs them), optionally one
// optimizer step, everything written to a .safetensors file for comparison with
// another framework (loss, logits, grad.<HF name>, and updated <HF name>). --device cuda runs
// it on a GPU: the model, batch and optimizer state live there, the outputs are copied back.
#include <cmath>
#include <cstdio>
#include <optional>
#include <vector>

#include <CLI/CLI.hpp>

#include "kernels/ops.h"
#include "models/batch_checks.h"
#include "models/batch_json.h"
#include "cli/commands.h"
#include "io/safetensors.h"
#include "models/pretrained.h"
#include "train/loss_scaler.h"
#include "train/mixed_precision.h"
#include "train/optimizer.h"
#include "util/error.h"

namespace strata::cli {

namespace {

struct StepOptions {
  std::string model, batch, out, precision = "fp32", half_precision_backend = "auto", device = "cpu";
  std::string save;  // the model after the step, as an HF model directory (none: "")
  std::optional<std::string> optimizer;
  double lr = 1e-3, weight_decay = 0, eps = 1e-8, momentum = 0;
  std::vector<double> betas = {0.9, 0.999};
  bool exclude_bias_norm_decay = false;
  int threads = 0;
};

// loss_scale: fp16's, as a training run applies it (train/loss_scaler.h): the loss's gradient
// is seeded that many times larger and the gradients divided back, so that small ones survive
// fp16's range in the products. Where a gradient overflows the scale halves and the pass runs
// again, as training would skip the step and back off.
template <typename T>
int run_step(const StepOptions& a, double loss_scale = 1) {
  const std::string &dir = a.model, &batch_path = a.batch, &out = a.out;
  LoadReport report;
  auto model = load_pretrained<T>(dir, &report);
  print_load_report(report, dir);
  const Batch batch = read_batch_json(batch_path, model->config());
  const bool qa = model->config().task == Task::QuestionAnswering;
  if (qa ? batch.start_positions.empty() : batch.labels.empty() && batch.float_labels.empty())
    fail(batch_path, ": '", qa ? "start_positions" : "labels",
         "' is missing; strata step needs targets to compute a loss and gradients");

  nn::ActivationPolicy policy;  // as training keeps activations under this precision
  policy.products = kernels::matmul_precision();
  const std::unique_ptr<ModelState> state = model->new_state(policy);
  const nn::DropoutCtx no_dropout{false, 0};
  LossResult loss{};
  for (;; loss_scale /= 2) {
    model->forward(batch, no_dropout, *state);
    loss = model->loss(batch, *state, label_count(model->config(), batch) / loss_scale);
    loss.loss /= loss_scale;
    model->grads().zero();
    model->backward(batch, no_dropout, *state);
    if (loss_scale == 1) break;
    kernels::scale(model->grads().data(), model->grads().size(), static_cast<T>(1 / loss_scale));
    if (std::isfinite(kernels::sum_squares(model->grads().data(), model->grads().size()))) break;
  }

  const ParamTable& table = model->table();
  const DType dt = dtype_of<T>();
  const T loss_value = static_cast<T>(loss.loss);
  std::vector<io::TensorToWrite> tensors = {{"loss", dt, {}, &loss_value}};
  std::vector<std::vector<T>> host_outputs;  // on a GPU
  for (const HeadOutput<T>& o : outputs_on_host(model->head_outputs(batch, *state), host_outputs))
    tensors.push_back({o.name, dt, o.shape, o.data});
  const StagedRead<T> grads(model->grads(), 0, model->grads().size());
  for (const ParamEntry& e : table.entries())
    tensors.push_back({"grad." + e.name, dt, e.shape, grads.data() + e.offset});

  std::unique_ptr<Optimizer<T>> opt;
  if (a.optimizer) {
    OptimizerConfig oc;
    oc.name = *a.optimizer;
    oc.lr = a.lr;
    oc.weight_decay = a.weight_decay;
    oc.beta1 = a.betas[0];
    oc.beta2 = a.betas[1];
    oc.eps = a.eps;
    oc.momentum = a.momentum;
    oc.exclude_bias_and_norm_from_decay = a.exclude_bias_norm_decay;
    opt = std::make_unique<Optimizer<T>>(oc, table);
    opt->step(model->params().data(), model->grads().data(), oc.lr);
  }
  const StagedRead<T> params(model->params(), 0, opt ? model->params().size() : 0);
  if (opt)
    for (const ParamEntry& e : table.entries()) tensors.push_back({e.name, dt, e.shape, params.data() + e.offset});
  if (!a.save.empty()) save_pretrained(*model, a.save);
  io::write_safetensors(out, tensors,
                        {{"format", "pt"}, {"model", dir}, {"architecture", model->config().architecture()},
                         {"optimizer", a.optimizer.value_or("none")}});
  std::printf("%s  loss %.9g  (%zu gradients%s%s) -> %s\n", model->config().architecture().c_str(), loss.loss,
              table.entries().size(), opt ? ", updated parameters" : "",
              loss_scale != 1 ? cat(", loss scale ", loss_scale).c_str() : "", out.c_str());
  return 0;
}

}  // namespace

Run define_step(CLI::App& cmd) {
  auto o = std::make_shared<StepOptions>();
  cmd.add_option("--model", o->model, "model directory (config.json + model.safetensors)")->required();
  cmd.add_option("--batch", o->batch, "BATCH.json: input_ids, attention_mask, [token_type_ids], labels")->required();
  cmd.add_option("--out", o->out, "OUT.safetensors: loss, logits, grad.<name> (and updated <name>)")->required();
  cmd.add_option("--optimizer", o->optimizer, "also take one optimizer step")->check(CLI::IsMember({"adamw", "sgd"}));
  cmd.add_option("--lr", o->lr, "learning rate")->capture_default_str();
  cmd.add_option("--weight-decay", o->weight_decay, "weight decay")->capture_default_str();
  cmd.add_option("--betas", o->betas, "AdamW betas, e.g. 0.9,0.999")->delimiter(',')->expected(2)->default_str("0.9,0.999");
  cmd.add_option("--eps", o->eps, "AdamW epsilon")->capture_default_str();
  cmd.add_option("--momentum", o->momentum, "SGD momentum")->capture_default_str();
  cmd.add_flag("--exclude-bias-norm-decay", o->exclude_bias_norm_decay, "no weight decay on biases and LayerNorm weights");
  cmd.add_option("--precision", o->precision,
                 "fp32, fp64, or bf16 / fp16: fp32 with the products' inputs rounded (strata train's bf16 / fp16)")
      ->capture_default_str();
  cmd.add_option("--half-precision-backend", o->half_precision_backend,
                 "bf16 / fp16 products: auto (native where the CPU has them) or emulated (any CPU)")
      ->check(CLI::IsMember({"auto", "emulated"}))
      ->capture_default_str();
  cmd.add_option("--threads", o->threads, "compute threads (0: all cores)")->capture_default_str();
  cmd.add_option("--device", o->device, "where the step runs: cpu, cuda or cuda:N (fp32, bf16, fp16)")
      ->capture_default_str();
  cmd.add_option("--save", o->save,
                 "DIR: also save the model (after the optimizer step, if any) as an HF model directory");
  return [o](const auto&) {
    kernels::set_num_threads(o->threads);
    kernels::Device device;
    if (!kernels::parse_device(o->device, &device))
      fail("strata step: --device must be cpu, cuda or cuda:N, got '", o->device, "'");
    if (device.is_cuda() && o->precision == "fp64")
      fail("strata step: --precision fp64 runs on the CPU only (the gradient checks' precision); use --device cpu");
    try {
      kernels::use_device(device);
    } catch (const std::runtime_error& e) {
      fail("strata step: ", e.what(), "; use --device cpu");
    }
    if (o->precision == "fp32") return run_step<float>(*o);
    if (o->precision == "fp64") return run_step<double>(*o);
    if (o->precision == "bf16" || o->precision == "fp16") {
      TrainingArguments mixed;
      (o->precision == "bf16" ? mixed.bf16 : mixed.fp16) = true;
      mixed.half_precision_backend = o->half_precision_backend;
      const MixedPrecision m = mixed_precision(mixed);
      const MatmulPrecisionScope products(m.train, m.path);
      return run_step<float>(*o, m.loss_scaling() ? LossScalerState().scale : 1.0);
    }
    fail("strata step: --precision must be fp32, fp64, bf16 or fp16, got '", o->precision, "'");
  };
}

}  // namespace strata::cli
