// `strata step` against Hugging Face Transformers itself: golden tensors made by the HF
// oracle (tests/fixtures/make_fixtures.sh) for every architecture and head. Each case runs
// the real CLI in fp32 and fp64 and compares loss, logits, every gradient and every
// parameter after one AdamW step with HF's float64 results, printing the worst tensors
// side by side (as llm.c's test_gpt2 does).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "io/files.h"
#include "io/safetensors.h"
#include "kernels/device.h"
#include "kernels/emulated_gpu.h"
#include "kernels/matmul_precision.h"
#include "test_paths.h"

namespace {

namespace fs = std::filesystem;
using strata::io::SafetensorsFile;
using strata::io::TensorView;
namespace test = strata::test;

std::vector<double> values(const TensorView& t) {
  std::vector<double> v(t.numel());
  strata::io::convert_to<double>(t, v.data());
  return v;
}

double max_abs(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::abs(x));
  return m;
}

struct Worst {
  double err = 0;
  std::string name;
};

// Runs strata step on one fixture; returns the path of its output.
// `backend`: how bf16 / fp16 products run (auto: natively); `device`: where (cpu, cuda).
std::string run_step(const std::string& c, const std::string& precision, const std::string& backend,
                     const std::string& device = "cpu") {
  const std::string dir = test::fixture_dir();
  const fs::path out =
      fs::path(testing::TempDir()) / (c + "." + precision + "." + backend + "." + device + ".safetensors");
  const std::string cmd = test::strata_binary() + " step --model " + dir + "/" + c + " --batch " + dir + "/" +
                          c + ".inputs.json --out " + out.string() +
                          " --optimizer adamw --lr 1e-3 --weight-decay 0.01 --threads 2 --precision " + precision +
                          " --half-precision-backend " + backend + " --device " + device + " > /dev/null";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  return out.string();
}

// Compares one output file with the fixture's f64 reference. Errors are max |ours - HF| over
// the tensor's max |HF|; gradients that are mathematically zero (the key bias: softmax is
// shift-invariant) are measured against the model's largest gradient instead. Parameters
// after AdamW are measured against the model's largest parameter: AdamW's first step moves
// every weight by about lr * sign(g), so where |g| is near eps the fp32 rounding of g shows
// up as a fraction of lr, whatever the tensor's own scale (HF's own f32 run differs from its
// f64 run by 2e-5 of the largest parameter on these models). Where the reference gradient is
// itself within the gradient tolerance of zero (the start/end biases of a QA head: softmax rows
// sum to one, so their gradients vanish exactly), the sign of g - and so the direction of
// AdamW's first step - is rounding noise: those elements are left out of the parameter
// comparison in fp32, bf16 and fp16 and counted in the report (gradients exactly zero in both runs, e.g.
// embedding rows no token used, are compared: only weight decay moves them).
// Whether the fixture's FFN is a ReLU (T5's feed_forward_proj "relu"). Its gradients are
// discontinuous in the pre-activations: where bf16 / fp16 rounding moves one across zero, a
// whole token's contribution to a weight row appears or vanishes, so the worst gradient error
// is a matter of luck, not of the recipe (t5-cond-gen over five input draws: bf16 0.09 to 0.35,
// fp16 0.002 to 0.09, each worst element at such a kink). Its half-precision runs compare what
// stays continuous, the loss and the logits; t5-v1_1-cond-gen (gated GELU) checks T5's
// gradients and AdamW step in bf16 / fp16.
bool relu_ffn(const std::string& c) {
  const nlohmann::json cfg = strata::io::read_json_file(test::fixture_dir() + "/" + c + "/config.json");
  for (const char* key : {"feed_forward_proj", "hidden_act", "activation_function", "activation"})
    if (cfg.contains(key) && cfg[key] == "relu") return true;
  return false;
}

void compare(const std::string& c, const std::string& precision, double grad_tol, double param_tol,
             const std::string& backend = "emulated", const std::string& device = "cpu") {
  const bool forward_only = (precision == "bf16" || precision == "fp16") && relu_ffn(c);
  const SafetensorsFile ref(test::fixture_dir() + "/" + c + ".ref.safetensors");
  const SafetensorsFile ours(run_step(c, precision, backend, device));
  double grad_max = 0, param_max = 0;
  for (const TensorView& t : ref.tensors()) {
    if (t.name.starts_with("f64/grad/")) grad_max = std::max(grad_max, max_abs(values(t)));
    if (t.name.starts_with("f64/param_after_adamw/")) param_max = std::max(param_max, max_abs(values(t)));
  }

  Worst worst_grad, worst_param;
  int compared = 0, undetermined = 0;
  for (const TensorView& t : ref.tensors()) {
    if (!t.name.starts_with("f64/") || t.name.starts_with("f64/hidden_states")) continue;
    std::string key = t.name.substr(4);
    const bool is_param = key.starts_with("param_after_adamw/");
    if (forward_only && (is_param || key.starts_with("grad/"))) continue;
    if (key.starts_with("grad/")) key = "grad." + key.substr(5);
    if (is_param) key = key.substr(std::string("param_after_adamw/").size());
    const TensorView* o = ours.find(key);
    ASSERT_NE(o, nullptr) << c << ": strata step wrote no tensor " << key;
    ASSERT_EQ(o->numel(), t.numel()) << key;
    const auto a = values(*o), r = values(t);
    std::vector<double> ref_grad, our_grad;
    if (is_param && precision != "fp64") {
      const TensorView* g = ref.find("f64/grad/" + key);
      const TensorView* og = ours.find("grad." + key);
      ASSERT_TRUE(g && og) << c << ": no gradient for " << key;
      ref_grad = values(*g);
      our_grad = values(*og);
    }
    double diff = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      const bool both_zero = !ref_grad.empty() && ref_grad[i] == 0 && our_grad[i] == 0;
      if (!ref_grad.empty() && !both_zero && std::abs(ref_grad[i]) < grad_tol * grad_max) {
        ++undetermined;
        continue;
      }
      diff = std::max(diff, std::abs(a[i] - r[i]));
    }
    double scale = max_abs(r);
    if (key.starts_with("grad.") && scale < 1e-6 * grad_max) scale = grad_max;
    if (is_param) scale = param_max;
    const double err = scale > 0 ? diff / scale : diff;
    Worst& w = is_param ? worst_param : worst_grad;
    if (err > w.err) w = {err, key};
    ++compared;
  }
  std::printf("  %-32s %s%s  worst loss/logits/grad %.2e (%s)  worst param after AdamW %.2e  [%d tensors; %d "
              "elements with a vanishing gradient left out]%s\n",
              c.c_str(), precision.c_str(), backend == "auto" ? " native" : "", worst_grad.err, worst_grad.name.c_str(), worst_param.err, compared,
              undetermined, forward_only ? " (ReLU FFN: loss and logits only)" : "");
  EXPECT_LT(worst_grad.err, grad_tol) << c << " " << precision << ": " << worst_grad.name;
  EXPECT_LT(worst_param.err, param_tol) << c << " " << precision << ": " << worst_param.name;
}

class HfParity : public testing::TestWithParam<std::string> {};

// fp32: HF's own f32-vs-f64 gap on these models is ~1e-6 (fixtures/README.md); the brief
// asks for 1e-4. fp64 must agree to near double rounding.
TEST_P(HfParity, Fp32StepMatchesTransformers) { compare(GetParam(), "fp32", 1e-5, 1e-4); }
TEST_P(HfParity, Fp64StepMatchesTransformers) { compare(GetParam(), "fp64", 1e-10, 1e-10); }
// Mixed precision against the same float64 results: the products' inputs rounded to bf16 (8
// significant bits) or fp16 (11, with the loss scaled by 2^16), everything else fp32. Measured
// over the 25 fixtures (docs/mixed_precision.md): worst loss/logits/gradient error 4.7e-2 in
// bf16 (median 1.1e-2), 4.4e-3 in fp16 (median 1.3e-3), parameters after AdamW 1.2e-7 of the
// largest; the bounds leave 2x. (llm.c's test_gpt2.cu allows bf16 7.9% of each element plus an
// absolute threshold.) The emulated path runs everywhere, the native one where the CPU has it.
TEST_P(HfParity, Bf16StepMatchesTransformers) { compare(GetParam(), "bf16", 1e-1, 1e-5); }
TEST_P(HfParity, Fp16StepMatchesTransformers) { compare(GetParam(), "fp16", 1e-2, 1e-5); }
TEST_P(HfParity, NativeBf16StepMatchesTransformers) {
  std::string why;
  if (!strata::kernels::native_matmul_available(strata::kernels::MatmulPrecision::Bf16, &why)) GTEST_SKIP() << why;
  compare(GetParam(), "bf16", 1e-1, 1e-5, "auto");
}

// The same step on a GPU, against HF at the CPU's fp32 tolerance (TF32 off: exact fp32
// products). CTest label gpu; skipped without a GPU.
class HfParityOnGpu : public HfParity {};
TEST_P(HfParityOnGpu, Fp32StepMatchesTransformers) {
  if (strata::kernels::cuda_device_count() == 0 || strata::kernels::emulated::enabled())
    GTEST_SKIP() << "no GPU: " << strata::kernels::cuda_unavailable_reason();
  compare(GetParam(), "fp32", 1e-5, 1e-4, "emulated", "cuda");
}
// Mixed precision on the GPU (cuBLASLt's bf16 / fp16 products, fp32 accumulation) at the CPU's
// mixed-precision bounds: the products' inputs are rounded as on the CPU.
TEST_P(HfParityOnGpu, Bf16StepMatchesTransformers) {
  if (strata::kernels::cuda_device_count() == 0 || strata::kernels::emulated::enabled())
    GTEST_SKIP() << "no GPU: " << strata::kernels::cuda_unavailable_reason();
  compare(GetParam(), "bf16", 1e-1, 1e-5, "emulated", "cuda");
}
TEST_P(HfParityOnGpu, Fp16StepMatchesTransformers) {
  if (strata::kernels::cuda_device_count() == 0 || strata::kernels::emulated::enabled())
    GTEST_SKIP() << "no GPU: " << strata::kernels::cuda_unavailable_reason();
  compare(GetParam(), "fp16", 1e-2, 1e-5, "emulated", "cuda");
}

// On the emulated GPU (kernels/emulated_gpu.h) the step must give the CPU's output file byte for
// byte: its ops are the CPU's, so any difference is data the model moved wrongly. Every pointer an
// op reads is checked to be device memory and the host cannot touch that memory, so this also
// shows that the model, its batch and its outputs go through the device seam only.
class HfParityOnEmulatedGpu : public HfParity {};
TEST_P(HfParityOnEmulatedGpu, StepEqualsTheCpuBitForBit) {
  if (!strata::kernels::emulated::enabled()) GTEST_SKIP() << "STRATA_EMULATED_GPU=1 not set";
  for (const char* precision : {"fp32", "bf16"}) {
    const std::string cpu = strata::io::read_file(run_step(GetParam(), precision, "emulated", "cpu"));
    const std::string gpu = strata::io::read_file(run_step(GetParam(), precision, "emulated", "cuda"));
    EXPECT_FALSE(cpu.empty());
    EXPECT_TRUE(cpu == gpu) << precision << ": the emulated GPU's step differs from the CPU's";
  }
}

std::vector<std::string> fixture_cases() {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(test::fixture_dir())) {
    const std::string n = e.path().filename().string();
    if (n.ends_with(".ref.safetensors")) out.push_back(n.substr(0, n.size() - std::string(".ref.safetensors").size()));
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string case_name(const testing::TestParamInfo<std::string>& i) {
  std::string s = i.param;
  std::replace(s.begin(), s.end(), '-', '_');
  return s;
}
INSTANTIATE_TEST_SUITE_P(Fixtures, HfParity, testing::ValuesIn(fixture_cases()), case_name);
INSTANTIATE_TEST_SUITE_P(Fixtures, HfParityOnGpu, testing::ValuesIn(fixture_cases()), case_name);
INSTANTIATE_TEST_SUITE_P(Fixtures, HfParityOnEmulatedGpu, testing::ValuesIn(fixture_cases()), case_name);

}  // namespace
