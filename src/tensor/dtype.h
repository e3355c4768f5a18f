// Element types strata reads and writes. Compute is fp32 (fp64 in gradient checks);
// F16/BF16 are accepted on load and converted.
#pragma once
#include <bit>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace strata {

enum class DType : uint8_t { F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL };

size_t dtype_size(DType t);
// The safetensors spelling: "F32", "BF16", "I64", ...
std::string_view dtype_name(DType t);
std::optional<DType> dtype_from_name(std::string_view name);

float half_to_float(uint16_t h);
uint16_t float_to_half(float f);
// Inline: mixed precision converts every product's operands with them (kernels/matmul_precision.h).
inline float bf16_to_float(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }
inline uint16_t float_to_bf16(float f) {  // round to nearest even; a nan stays a (quiet) nan
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint16_t rounded = static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
  return (x & 0x7fffffffu) > 0x7f800000u ? static_cast<uint16_t>((x >> 16) | 0x40u) : rounded;
}

template <typename T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::F32; }
template <> constexpr DType dtype_of<double>() { return DType::F64; }
template <> constexpr DType dtype_of<int32_t>() { return DType::I32; }
template <> constexpr DType dtype_of<int64_t>() { return DType::I64; }

}  // namespace strata
