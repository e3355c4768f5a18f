// The op interface every layer calls through. Layers never call a BLAS or CUDA function
// directly. Each op runs on the current device (kernels/device.h) and every pointer it takes
// points into that device's memory: kernels/cpu/ implements them for the CPU (fp32 for
// training, fp64 for gradient checks), kernels/cuda/ for NVIDIA GPUs (fp32), and
// kernels/op_list.inc lists the ops both implement. All tensors are dense row-major; shapes
// use the letters
//   N = rows (tokens, B*T), B = batch, T = sequence, C = channels, NH = heads, HS = C/NH,
//   F = FFN width, V = vocabulary / classes.
// Accumulation contract (as in llm.c): a backward op WRITES its input gradient (=) and ADDS
// into parameter gradients (+=), unless a comment says otherwise. Every op is deterministic
// and bit-identical for any thread count (fp32 gemm: unless kernels/gemm_threading.h says
// Library): reductions over rows run in a fixed order, work splits along independent outputs.
#pragma once
#include <cstddef>
#include <cstdint>

#include "kernels/matmul_precision.h"

namespace strata::kernels {

// ---- threads -------------------------------------------------------------------------
void set_num_threads(int n);  // OpenMP and BLAS; n <= 0 means all cores
int num_threads();
// The instruction set the element-wise and attention kernels run with on this CPU: "avx512",
// "avx2" or "baseline" (kernels/cpu/isa.h; STRATA_MAX_CPU_ISA caps it).
const char* kernel_isa();

// ---- matrix products -----------------------------------------------------------------
// C[M,N] = alpha * op(A) * op(B) + beta * C; op(X) = X or X^T; leading dimensions in elements.
// fp32 products take their inputs in the process's matmul precision (kernels/matmul_precision.h:
// bf16 / fp16 under mixed precision), and so does every op below that multiplies matrices.
template <typename T>
void gemm(bool trans_a, bool trans_b, int M, int N, int K, T alpha, const T* A, int lda, const T* B,
          int ldb, T beta, T* C, int ldc);

// Runs one small fp32 product of each kind training runs (both transposes, beta 0 and 1, on
// one thread of a team and threaded by the library), so that the library's code for them
// exists before a caller measures what the process holds: oneDNN compiles its kernels on
// first use, about 100 KiB resident each and some 3.5 MiB more on AVX-512 than on AVX2, and
// a memory plan measured against a baseline taken before would miss them.
void warm_up_gemm();

// Linear layer, PyTorch layout: W [out, in], y[N,out] = x[N,in] W^T + b (b may be null).
template <typename T>
void linear_forward(const T* x, const T* W, const T* b, T* y, int N, int in, int out);
// dx = dy W (skipped when dx is null); dW += dy^T x; db += column sums of dy (if db).
// dW is computed first, so dx may alias x (both [N, in]).
template <typename T>
void linear_backward(const T* x, const T* W, const T* dy, T* dx, T* dW, T* db, int N, int in,
                     int out);
// HF's Conv1D (GPT-2), weight stored transposed: W [in, out], y[N,out] = x W + b (b may be null).
template <typename T>
void conv1d_forward(const T* x, const T* W, const T* b, T* y, int N, int in, int out);
// dx = dy W^T (skipped when dx is null); dW += x^T dy; db += column sums of dy (if db).
// dW is computed first, so dx may alias x.
template <typename T>
void conv1d_backward(const T* x, const T* W, const T* dy, T* dx, T* dW, T* db, int N, int in,
                     int out);

// ---- normalisation -------------------------------------------------------------------
// y = (x - mean) * rstd * gamma + beta over the last dim; saves mean[N], rstd[N].
template <typename T>
void layernorm_forward(const T* x, const T* gamma, const T* beta, T* y, T* mean, T* rstd, int N,
                       int C, double eps);
// The forward's output from saved statistics, bit for bit: backward recomputes a layer norm's
// output instead of keeping it.
template <typename T>
void layernorm_apply(const T* x, const T* gamma, const T* beta, const T* mean, const T* rstd, T* y, int N, int C);
// dx = (written); dgamma, dbeta +=.
template <typename T>
void layernorm_backward(const T* x, const T* gamma, const T* mean, const T* rstd, const T* dy,
                        T* dx, T* dgamma, T* dbeta, int N, int C);
// RMS norm (T5LayerNorm: no mean subtracted, no beta): y = gamma * (x * rstd), rstd =
// 1/sqrt(mean(x^2) + eps) over the last dim; saves rstd[N].
template <typename T>
void rmsnorm_forward(const T* x, const T* gamma, T* y, T* rstd, int N, int C, double eps);
// dx = (written); dgamma +=.
template <typename T>
void rmsnorm_backward(const T* x, const T* gamma, const T* rstd, const T* dy, T* dx, T* dgamma, int N, int C);

// ---- activations ---------------------------------------------------------------------
// The activations HF configs name in hidden_act / activation.
enum class Activation { GeluErf, GeluTanh, Relu, Silu, Tanh };
// Parses "gelu", "gelu_new", "gelu_pytorch_tanh", "gelu_fast", "relu", "silu", "swish", "tanh";
// returns false for anything else.
bool parse_activation(const char* name, Activation* out);

template <typename T>
void activation_forward(Activation a, const T* x, T* y, size_t n);
// dx = dy * act'(x); dx may alias dy.
template <typename T>
void activation_backward(Activation a, const T* x, const T* dy, T* dx, size_t n);
// y = act(x) and g = act'(x) in one pass, the same values as activation_forward and the
// factor activation_backward applies: an MLP's backward needs both (y for the output
// projection's weight gradient, g for the gradient through the activation), and for GELU they
// share the normal CDF. g may alias x (y may not).
template <typename T>
void activation_value_and_grad(Activation a, const T* x, T* y, T* g, size_t n);

// y[N,out] = act(x W^T + b): the GEMM, then bias and activation in one pass over y.
// pre[N,out] receives x W^T + b (needed by the backward); y and pre may not alias.
template <typename T>
void linear_act_forward(Activation a, const T* x, const T* W, const T* b, T* pre, T* y, int N,
                        int in, int out);

// ---- dropout (counter-based, so masks are recomputed in backward, never stored) -------
// Element i of stream `stream` is kept iff uniform(seed, stream, i) >= p; kept values are
// scaled by 1/(1-p). p == 0 is the identity. x and y may alias.
template <typename T>
void dropout_forward(const T* x, T* y, size_t n, float p, uint64_t seed, uint64_t stream);
// dx = dy * mask / (1-p) for the same (seed, stream); dx may alias dy.
template <typename T>
void dropout_backward(const T* dy, T* dx, size_t n, float p, uint64_t seed, uint64_t stream);
// Dropout of a block of a larger tensor: x and y are [rows, cols], columns first .. first+cols-1
// of a [rows, ld] tensor, and element (r, c) takes that tensor's mask at index r * ld + first + c.
// A tensor-parallel rank holding a share of an activation's columns (some heads' attention
// probabilities, some of the FFN's width) so drops what one process drops there. ld == cols and
// first == 0 is dropout_forward. The op is linear: it is its own backward. x and y may alias.
template <typename T>
void dropout_block(const T* x, T* y, size_t rows, size_t cols, size_t ld, size_t first, float p, uint64_t seed,
                   uint64_t stream);

// ---- attention -----------------------------------------------------------------------
// Multi-head self-attention core on a fused projection qkv[B*T, 3C] (q | k | v along the
// channel axis, head h at columns h*HS of each). Key positions with mask[b,t] == 0 get
// probability 0 (a row with no valid key attends uniformly, as HF's additive large-negative
// mask does). `causal` (GPT-2) also gives key j > query i probability 0; a causal row with
// no valid key attends uniformly to keys 0..i. With probs = softmax(q k^T * scale), scale =
// 1/sqrt(HS) (1 when !scale_scores): ctx[B*T, C] = dropout(probs) v. `saved` receives what the
// backward needs, attention_saved_size(s) elements whose content belongs to the device: the
// CPU keeps probs [B,NH,T,T] before dropout, a GPU the log-sum-exp of each row (fused
// attention recomputes the probabilities in its backward).
struct AttentionShape {
  int B, T, C, NH;
  float dropout_p;
  uint64_t seed, stream;  // dropout stream for this layer
  bool causal = false;
  bool scale_scores = true;  // GPT-2's scale_attn_weights
  // Tensor parallelism: these NH heads are heads head0.. of heads_total (0: all of them), and
  // the dropout mask of head h is the one drawn for head head0 + h among heads_total.
  int heads_total = 0, head0 = 0;
  double score_scale() const;
};
size_t attention_saved_size(const AttentionShape& s);
template <typename T>
void attention_forward(const AttentionShape& s, const T* qkv, const int32_t* mask, T* saved, T* ctx);
// Inference for a head that reads only the first position of each sequence (the [CLS] token
// of sequence classification): the probabilities of query 0 alone, probs[B, NH, T], and
// ctx[B, C] = probs v. Bidirectional, no dropout; the same values as attention_forward's row
// 0 up to the rounding of a one-row product.
template <typename T>
void attention_first_query_forward(const AttentionShape& s, const T* qkv, const int32_t* mask, T* probs, T* ctx);
// dqkv[B*T,3C] is written; `saved` is what attention_forward saved for the same qkv and mask.
template <typename T>
void attention_backward(const AttentionShape& s, const T* qkv, const T* saved, const T* dctx,
                        T* dqkv);

// Attention of new positions against a key/value cache (incremental causal decoding, no
// dropout, no padding). Row b holds Tk positions in k and v, laid out [B, ldt, C] (position t
// of row b at (b*ldt + t)*C, head h at columns h*HS); its last Tq are the new ones, whose
// queries are q[B*Tq, ldq] (head h at columns h*HS). Query i sees keys 0..Tk-Tq+i. Gives the
// probabilities attention_forward gives those rows (same scale and softmax);
// ctx[B*Tq, C] = probs v. scores is scratch of B*NH*Tq*Tk values.
struct CachedAttentionShape {
  int B, Tq, Tk, ldt, C, NH;
  bool scale_scores = true;
};
template <typename T>
void attention_cached_forward(const CachedAttentionShape& s, const T* q, int ldq, const T* k, const T* v, T* scores,
                              T* ctx);

// The softmax of attention scores computed by products of their own (encoder-decoders: cross
// attention of Tq queries over Tk keys, T5's position bias). S is [B, NH, Tq, Tk], rewritten in
// place: S[b,h,i,:] + pos_bias[(i*Tk + j)*NH + h] (when given), softmax over the keys j that
// mask[b*Tk + j] != 0 (when given) and, when causal, j <= first_query + i leave; the sums are
// taken in double. A row with no key left is uniform (1/Tk), as the CPU always did.
template <typename T>
void scores_softmax(T* S, const T* pos_bias, const int32_t* mask, int B, int NH, int Tq, int Tk, bool causal,
                    int first_query);
// Its backward: G holds d(probabilities) [B, NH, Tq, Tk] and becomes scale * d(scores),
// d(scores) = P (G - sum_j G P) per row (the dot product in double, each element rounded to T
// before it is added or scaled). When d_pos_bias is given, d(scores) is also added into
// d_pos_bias[(i*Tk + j)*NH + h], row b = 0, 1, ... in turn.
template <typename T>
void scores_softmax_backward(const T* P, T* G, T* d_pos_bias, int B, int NH, int Tq, int Tk, T scale);

// ---- embeddings ----------------------------------------------------------------------
// out[n,:] += table[ids[n], :] for n < N. Callers check ids are in range.
template <typename T>
void embedding_forward(const int32_t* ids, const T* table, T* out, int N, int C);
// dtable[ids[n], :] += dout[n, :], skipping ids equal to skip_id (nn.Embedding's padding_idx;
// pass -1 for none). Parallel over channels, sequential over n: deterministic.
template <typename T>
void embedding_backward(const int32_t* ids, const T* dout, T* dtable, int N, int C, int skip_id);

// ---- losses: return sum(loss) / norm and write dlogits = d(that)/dlogits if non-null --------
// Single-label cross entropy over V classes; rows whose label == -100 are ignored.
template <typename T>
double cross_entropy(const T* logits, const int32_t* labels, T* dlogits, int N, int V, double norm);
// Vocabulary-parallel cross entropy (Megatron), in pieces around the tensor-parallel group's
// reductions (nn/vocab_parallel.h): logits[N, V] are columns v0 .. v0+V-1 of a wider
// vocabulary; labels are global ids, -100 ignored. mx[n] = max of row n of this slice.
template <typename T>
void ce_slice_row_max(const T* logits, int N, int V, T* mx);
// e[n,v] = exp(logits[n,v] - mx[n]) (mx: the max over the whole vocabulary); sumexp[n] = sum
// of row n (in double); target[n] = the label's logit when this slice holds it, else 0.
// Ignored rows get e = 0, sumexp = target = 0.
template <typename T>
void ce_slice_exp(const T* logits, const int32_t* labels, const T* mx, int N, int V, int v0, T* e, double* sumexp,
                  double* target);
// In place: e becomes d(loss)/d(logits) = (e / sumexp - onehot) / norm (sumexp: the whole
// vocabulary's); ignored rows stay 0.
template <typename T>
void ce_slice_grad(T* e, const int32_t* labels, const double* sumexp, int N, int V, int v0, double norm);
// The loss once sumexp and target hold the whole vocabulary's sums: the sum over rows whose
// label is not -100 of log(sumexp[n]) + mx[n] - target[n], in row order, divided by norm.
template <typename T>
double ce_slice_loss(const int32_t* labels, const T* mx, const double* sumexp, const double* target, int N,
                     double norm);
// Mean-squared error between x[n] and target[n].
template <typename T>
double mse(const T* x, const double* target, T* dx, size_t n, double norm);
// Binary cross entropy with logits, element-wise, numerically stable.
template <typename T>
double bce_with_logits(const T* x, const double* target, T* dx, size_t n, double norm);

// ---- optimizers, fused over a contiguous slice of the flat buffers -------------------
struct AdamWParams {
  double lr, beta1, beta2, eps, weight_decay;
  int64_t step;  // 1-based step number after increment (bias correction)
};
// PyTorch AdamW: p *= 1 - lr*wd; m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
// p -= lr / (1-b1^t) * m / (sqrt(v) / sqrt(1-b2^t) + eps).
template <typename T>
void adamw_update(T* p, const T* g, T* m, T* v, size_t n, const AdamWParams& a);
struct SGDParams {
  double lr, momentum, dampening, weight_decay;
  bool nesterov;
  bool first_step;  // momentum buffer starts as the first gradient, as in PyTorch
};
// PyTorch SGD: d = g + wd p; buf = momentum buf + (1-dampening) d; d = nesterov ? d + momentum buf : buf; p -= lr d.
template <typename T>
void sgd_update(T* p, const T* g, T* buf, size_t n, const SGDParams& a);

// ---- data movement -------------------------------------------------------------------
// Fills, copies and index-driven row moves of tensor data. Outside kernels/ no code reads or
// writes the elements of an activation, parameter or gradient buffer itself, so that every
// such buffer can live on a GPU. A row is `cols` consecutive elements; a leading dimension
// (ld_*) is the distance in elements between the starts of consecutive rows (>= cols). Index
// arrays live where the data do, as embedding ids. Source and destination do not overlap.
// Every destination element is written once, from one source element: the results are exact
// and the same for any thread count or backend.

// x[i] = value for i < n.
template <typename T>
void fill(T* x, size_t n, T value);
// dst[i] = src[i] for i < n.
template <typename T>
void copy(const T* src, T* dst, size_t n);
// dst[r * ld_dst + c] = src[r * ld_src + c] for r < rows, c < cols: a block of one row-major
// matrix into another (a column slice, one position of every sequence, with cols = 1 one
// column of an interleaved pair).
template <typename T>
void copy_rows(const T* src, size_t ld_src, T* dst, size_t ld_dst, size_t rows, size_t cols);
// dst[i, :] = src[index[i], :] for i < rows; a row whose index is negative is left as it was.
template <typename T>
void gather_rows(const T* src, const int32_t* index, T* dst, int rows, int cols);
// dst[index[i], :] = src[i, :] for i < rows, negative indices skipped. The non-negative
// indices are distinct (rows that share an index are summed by embedding_backward, which adds
// them in order).
template <typename T>
void scatter_rows(const T* src, const int32_t* index, T* dst, int rows, int cols);
// out[r] = the column of the largest x[r, :], the first of equal maxima (torch.argmax,
// np.argmax). Compared with `<`, as std::max_element: a NaN wins only in column 0.
template <typename T>
void argmax_rows(const T* x, int rows, int cols, int32_t* out);
// dst[i] = src[i] converted (round to nearest) for i < n: float <-> double.
template <typename From, typename To>
void cast(const From* src, To* dst, size_t n);
// out[i] = ids[i] - first when that is a row of a slice of `rows` rows starting at global row
// `first` and ids[i] != skip_id (-1: none), else -1, for i < n: token ids as rows of this
// rank's slice of a vocabulary-parallel table (nn/vocab_parallel.h).
void slice_ids(const int32_t* ids, int n, int first, int rows, int skip_id, int32_t* out);
// y[i] = x[i] rounded to p (Bf16 or Fp16), nearest-even, as a mixed-precision product rounds
// its inputs (kernels/matmul_precision.h), stored in p's 16 bits, for i < n; and back, exactly.
// Activations that backward reads only as product inputs are kept so (nn/block_activations.h).
void to_half(MatmulPrecision p, const float* x, uint16_t* y, size_t n);
void from_half(MatmulPrecision p, const uint16_t* x, float* y, size_t n);

// ---- small helpers -------------------------------------------------------------------
template <typename T>
double sum_squares(const T* x, size_t n);  // fixed-order blocked sum, in double
template <typename T>
void scale(T* x, size_t n, T s);
template <typename T>
void add(const T* a, const T* b, T* y, size_t n);  // y = a + b; y may alias a or b
template <typename T>
void mul(const T* a, const T* b, T* y, size_t n);  // y = a * b; y may alias a or b

}  // namespace strata::kernels
