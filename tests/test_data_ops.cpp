// Tests of the data-movement kernels (kernels/ops.h, "data movement"): each op in float and
// double against a plain loop, bit for bit, on odd shapes and on sizes past the point where
// the CPU goes parallel (for 1 and 2 threads); destination elements the op must not write
// keep a poison value; argmax ties go to the first index; rows that share an index are summed
// in order by embedding_backward, the scatter-add of the interface.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <utility>
#include <vector>

#include "kernels/ops.h"

namespace strata {
namespace {

namespace k = kernels;

constexpr double kPoison = -12345.5;

template <typename T>
std::vector<T> random_values(std::mt19937_64& rng, size_t n) {
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<T> v(n);
  for (T& x : v) x = static_cast<T>(dist(rng));
  return v;
}

// Bitwise equality, so that -0.0 vs 0.0 and NaN payloads count.
template <typename T>
testing::AssertionResult same_bits(const std::vector<T>& got, const std::vector<T>& want) {
  if (got.size() != want.size()) return testing::AssertionFailure() << "size " << got.size() << " vs " << want.size();
  for (size_t i = 0; i < got.size(); ++i)
    if (std::memcmp(&got[i], &want[i], sizeof(T)) != 0)
      return testing::AssertionFailure() << "element " << i << ": " << got[i] << " vs " << want[i];
  return testing::AssertionSuccess();
}

// Runs body(threads) for 1 and 2 threads, restoring the thread count after.
template <typename Fn>
void for_thread_counts(Fn body) {
  const int before = k::num_threads();
  for (int threads : {1, 2}) {
    k::set_num_threads(threads);
    SCOPED_TRACE(testing::Message() << threads << " thread(s)");
    body();
  }
  k::set_num_threads(before);
}

// Sizes below and above the CPU's threshold for a parallel region (2^15 elements).
constexpr size_t kSizes[] = {0, 1, 7, 4097, 100003};

template <typename T>
void check_fill_and_copy() {
  std::mt19937_64 rng(1);
  for (size_t n : kSizes) {
    SCOPED_TRACE(testing::Message() << "n = " << n);
    for_thread_counts([&] {
      std::vector<T> x(n + 1, T(kPoison));
      k::fill(x.data(), n, T(-0.0));
      std::vector<T> want(n + 1, T(-0.0));
      want[n] = T(kPoison);  // one past the end: untouched
      EXPECT_TRUE(same_bits(x, want));

      const std::vector<T> src = random_values<T>(rng, n);
      std::vector<T> dst(n + 1, T(kPoison));
      k::copy(src.data(), dst.data(), n);
      want = src;
      want.push_back(T(kPoison));
      EXPECT_TRUE(same_bits(dst, want));
    });
  }
}

TEST(DataOps, FillAndCopyMatchLoops) {
  check_fill_and_copy<float>();
  check_fill_and_copy<double>();
}

template <typename T>
void check_copy_rows(size_t rows, size_t cols, size_t ld_src, size_t ld_dst) {
  SCOPED_TRACE(testing::Message() << rows << " x " << cols << ", ld " << ld_src << " -> " << ld_dst);
  std::mt19937_64 rng(rows * 31 + cols);
  const std::vector<T> src = random_values<T>(rng, rows * ld_src);
  std::vector<T> want(rows * ld_dst, T(kPoison));  // the gaps between rows stay poisoned
  for (size_t r = 0; r < rows; ++r)
    for (size_t c = 0; c < cols; ++c) want[r * ld_dst + c] = src[r * ld_src + c];
  for_thread_counts([&] {
    std::vector<T> dst(rows * ld_dst, T(kPoison));
    k::copy_rows(src.data(), ld_src, dst.data(), ld_dst, rows, cols);
    EXPECT_TRUE(same_bits(dst, want));
  });
}

TEST(DataOps, CopyRowsMatchesLoop) {
  for (auto check : {check_copy_rows<float>, check_copy_rows<double>}) {
    check(0, 5, 5, 5);
    check(3, 0, 4, 2);
    check(1, 1, 1, 1);
    check(5, 3, 7, 3);      // gather one block of columns
    check(5, 3, 3, 11);     // scatter into a wider matrix
    check(9, 1, 2, 1);      // one column of an interleaved pair (the QA head's split)
    check(9, 1, 1, 2);      // and back
    check(37, 1031, 2053, 1031);  // past the parallel threshold
    check(4097, 13, 13, 13);      // many short rows: one contiguous block
  }
}

template <typename T>
void check_gather_scatter(int rows, int cols, int table_rows) {
  SCOPED_TRACE(testing::Message() << rows << " rows of " << cols << " from " << table_rows);
  std::mt19937_64 rng(rows * 7 + cols);
  const std::vector<T> table = random_values<T>(rng, static_cast<size_t>(table_rows) * cols);
  const std::vector<T> rows_in = random_values<T>(rng, static_cast<size_t>(rows) * cols);
  // Gather: any index, repeats allowed, some negative (row untouched).
  std::vector<int32_t> index(static_cast<size_t>(rows));
  std::uniform_int_distribution<int32_t> pick(-1, table_rows - 1);
  for (int32_t& i : index) i = pick(rng);
  std::vector<T> want(static_cast<size_t>(rows) * cols, T(kPoison));
  for (int i = 0; i < rows; ++i)
    if (index[i] >= 0)
      for (int c = 0; c < cols; ++c) want[static_cast<size_t>(i) * cols + c] = table[static_cast<size_t>(index[i]) * cols + c];
  // Scatter: distinct targets (a permutation's prefix), some skipped.
  std::vector<int32_t> target(static_cast<size_t>(table_rows));
  for (int r = 0; r < table_rows; ++r) target[r] = r;
  std::shuffle(target.begin(), target.end(), rng);
  target.resize(static_cast<size_t>(rows));
  for (int i = 0; i < rows; i += 3) target[i] = -1;
  std::vector<T> want_scatter(table.size(), T(kPoison));
  for (int i = 0; i < rows; ++i)
    if (target[i] >= 0)
      for (int c = 0; c < cols; ++c)
        want_scatter[static_cast<size_t>(target[i]) * cols + c] = rows_in[static_cast<size_t>(i) * cols + c];
  for_thread_counts([&] {
    std::vector<T> got(want.size(), T(kPoison));
    k::gather_rows(table.data(), index.data(), got.data(), rows, cols);
    EXPECT_TRUE(same_bits(got, want));
    std::vector<T> scattered(table.size(), T(kPoison));
    k::scatter_rows(rows_in.data(), target.data(), scattered.data(), rows, cols);
    EXPECT_TRUE(same_bits(scattered, want_scatter));
  });
}

TEST(DataOps, GatherAndScatterRowsMatchLoops) {
  for (auto check : {check_gather_scatter<float>, check_gather_scatter<double>}) {
    check(0, 4, 3);
    check(1, 1, 1);
    check(5, 3, 11);
    check(67, 769, 101);  // past the parallel threshold
  }
}

// Rows that share an index add up in index order: embedding_backward is the scatter-add.
TEST(DataOps, ScatterAddOfRepeatedIndicesSumsInOrder) {
  const int C = 5;
  const std::vector<int32_t> ids = {2, 0, 2, 2, 1, 0};
  std::mt19937_64 rng(3);
  const std::vector<float> rows = random_values<float>(rng, ids.size() * C);
  std::vector<float> table(3 * C, 0.25f), want = table;
  for (size_t n = 0; n < ids.size(); ++n)
    for (int c = 0; c < C; ++c) want[static_cast<size_t>(ids[n]) * C + c] += rows[n * C + c];
  k::embedding_backward(ids.data(), rows.data(), table.data(), static_cast<int>(ids.size()), C, -1);
  EXPECT_TRUE(same_bits(table, want));
}

template <typename T>
void check_argmax() {
  const T nan = std::numeric_limits<T>::quiet_NaN();
  // Ties go to the first index; a NaN wins only in column 0 (std::max_element's `<`).
  const std::vector<T> x = {1, 3, 3, 0,      //
                            -2, -2, -2, -2,  //
                            0, T(-0.0), 0, 0,  //
                            nan, 5, 6, 7,    //
                            1, nan, 9, 9};
  const std::vector<int32_t> want = {1, 0, 0, 0, 2};
  std::vector<int32_t> got(want.size(), -7);
  k::argmax_rows(x.data(), 5, 4, got.data());
  EXPECT_EQ(got, want);

  // Odd and large shapes against std::max_element.
  std::mt19937_64 rng(5);
  for (auto [rows, cols] : {std::pair{1, 1}, {3, 50257}, {1031, 33}}) {
    std::vector<T> v = random_values<T>(rng, static_cast<size_t>(rows) * cols);
    for (size_t i = 0; i < v.size(); i += 17) v[i] = T(1);  // many ties at the maximum
    std::vector<int32_t> ref(static_cast<size_t>(rows));
    for (int r = 0; r < rows; ++r) {
      const T* row = v.data() + static_cast<size_t>(r) * cols;
      int32_t best = 0;
      for (int32_t c = 1; c < cols; ++c)
        if (row[best] < row[c]) best = c;
      ref[r] = best;
    }
    for_thread_counts([&] {
      std::vector<int32_t> out(static_cast<size_t>(rows), -7);
      k::argmax_rows(v.data(), rows, cols, out.data());
      EXPECT_EQ(out, ref);
    });
  }
}

TEST(DataOps, ArgmaxRowsTakesTheFirstMaximum) {
  check_argmax<float>();
  check_argmax<double>();
}

TEST(DataOps, CastRoundsToNearest) {
  std::mt19937_64 rng(9);
  for (size_t n : kSizes) {
    SCOPED_TRACE(testing::Message() << "n = " << n);
    std::vector<double> wide(n);
    std::uniform_real_distribution<double> dist(-1e3, 1e3);
    for (double& x : wide) x = dist(rng);
    if (n > 3) {
      wide[0] = -0.0;
      wide[1] = 1e300;  // beyond float: infinity, as static_cast
      wide[2] = std::numeric_limits<double>::infinity();
    }
    std::vector<float> narrow_want(n);
    for (size_t i = 0; i < n; ++i) narrow_want[i] = static_cast<float>(wide[i]);
    std::vector<double> wide_want(narrow_want.begin(), narrow_want.end());
    for_thread_counts([&] {
      std::vector<float> narrow(n, float(kPoison));
      k::cast(wide.data(), narrow.data(), n);
      EXPECT_TRUE(same_bits(narrow, narrow_want));
      std::vector<double> back(n, kPoison);
      k::cast(narrow.data(), back.data(), n);
      EXPECT_TRUE(same_bits(back, wide_want));
    });
  }
}

// The vocabulary-parallel loss: the labelled rows' log(sumexp) + max - target, in row order.
TEST(DataOps, CeSliceLossSumsLabelledRowsInOrder) {
  const std::vector<int32_t> labels = {3, -100, 0, 7, -100};
  const std::vector<float> mx = {0.5f, 9.0f, -1.25f, 2.0f, 3.0f};
  const std::vector<double> sumexp = {1.5, 0.0, 2.25, 7.0, 0.0}, target = {0.25, 0.0, -1.5, 1.75, 0.0};
  double total = 0;
  for (size_t n = 0; n < labels.size(); ++n)
    if (labels[n] != -100) total += std::log(sumexp[n]) + static_cast<double>(mx[n]) - target[n];
  EXPECT_EQ(k::ce_slice_loss(labels.data(), mx.data(), sumexp.data(), target.data(), 5, 3.0), total / 3.0);
}

}  // namespace
}  // namespace strata
