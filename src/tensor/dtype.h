// Element types strata reads and writes. Compute is fp32 (fp64 in gradient checks);
// F16/BF16 are accepted on load and converted.
#pragma once
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
float bf16_to_float(uint16_t b);
uint16_t float_to_bf16(float f);  // round to nearest even

template <typename T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::F32; }
template <> constexpr DType dtype_of<double>() { return DType::F64; }
template <> constexpr DType dtype_of<int32_t>() { return DType::I32; }
template <> constexpr DType dtype_of<int64_t>() { return DType::I64; }

}  // namespace strata
