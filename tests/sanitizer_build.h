// Whether this test binary was built with AddressSanitizer (cmake --preset asan). Its shadow
// memory and freed-memory quarantine inflate peak RSS, so the tests that compare a measured
// peak with strata's memory plan skip there; everything else they check runs elsewhere.
#pragma once

namespace strata::test {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kAddressSanitizer = true;
#else
inline constexpr bool kAddressSanitizer = false;
#endif
#else
inline constexpr bool kAddressSanitizer = false;
#endif

}  // namespace strata::test
