// T5's relative position buckets (HF's T5Attention._relative_position_bucket, from Mesh
// TensorFlow): the distance j - i from query i to key j maps to one of num_buckets buckets, each
// holding a learned bias per head. Half of the buckets are exact distances 0 .. max_exact-1, the
// other half spread logarithmically up to max_distance (every longer distance shares the last
// one). Bidirectional (the encoder) splits the buckets first by direction, keys after the query
// in the upper half; unidirectional (the decoder) maps keys after the query to bucket 0, which the
// causal mask hides anyway.
#pragma once
#include <cstdint>
#include <vector>

namespace strata {

int relative_position_bucket(int relative_position, bool bidirectional, int num_buckets, int max_distance);

// [Tq * Tk]: the bucket of key j for query i at i * Tk + j, the queries at positions
// first_query .. first_query + Tq - 1 (incremental decoding: the new positions against every key
// so far) and the keys at 0 .. Tk - 1.
std::vector<int32_t> relative_position_buckets(int Tq, int Tk, bool bidirectional, int num_buckets, int max_distance,
                                               int first_query = 0);

}  // namespace strata
