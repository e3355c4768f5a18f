#include "tensor/dtype.h"

#include <bit>
#include <cmath>
#include <cstring>

namespace strata {

namespace {
struct DTypeInfo {
  DType type;
  std::string_view name;
  size_t size;
};
constexpr DTypeInfo kInfo[] = {
    {DType::F64, "F64", 8}, {DType::F32, "F32", 4}, {DType::F16, "F16", 2}, {DType::BF16, "BF16", 2},
    {DType::I64, "I64", 8}, {DType::I32, "I32", 4}, {DType::I16, "I16", 2}, {DType::I8, "I8", 1},
    {DType::U8, "U8", 1},   {DType::BOOL, "BOOL", 1},
};
}  // namespace

size_t dtype_size(DType t) { return kInfo[static_cast<int>(t)].size; }
std::string_view dtype_name(DType t) { return kInfo[static_cast<int>(t)].name; }

std::optional<DType> dtype_from_name(std::string_view name) {
  for (const auto& i : kInfo)
    if (i.name == name) return i.type;
  return std::nullopt;
}

float half_to_float(uint16_t h) {
  const uint32_t sign = (h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1f;
  const uint32_t man = h & 0x3ffu;
  if (exp == 0) {  // zero or subnormal: man * 2^-24
    const float v = std::ldexp(static_cast<float>(man), -24);
    return sign ? -v : v;
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000u | (man << 13));  // inf / nan
  return std::bit_cast<float>(sign | ((exp + 112) << 23) | (man << 13));
}

uint16_t float_to_half(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) return sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u : 0);  // inf / nan
  if (ax >= 0x477ff000u) return sign | 0x7c00u;                                    // overflow
  if (ax < 0x38800000u) {  // subnormal half: round(|f| * 2^24) to nearest even
    const float v = std::bit_cast<float>(ax) * 16777216.0f;
    return sign | static_cast<uint16_t>(std::nearbyint(v));
  }
  const uint32_t rounded = ax + 0x0fffu + ((ax >> 13) & 1u);  // round to nearest even
  return sign | static_cast<uint16_t>((rounded - 0x38000000u) >> 13);
}

}  // namespace strata
