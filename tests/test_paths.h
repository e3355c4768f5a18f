// Where the tests find this checkout's sources and fixtures, the shared data and the strata
// binary. CMake writes their definitions into one generated file (build/tests/test_paths.cpp):
// no other test file's compile line names a path of the checkout, so ccache reuses those
// objects in a clone elsewhere (CI's).
#pragma once
#include <string>

namespace strata::test {

std::string source_dir();       // the repository root
std::string fixture_dir();      // tests/fixtures
std::string shared_data_dir();  // ../shared/data
std::string strata_binary();    // the strata command built with the tests

}  // namespace strata::test
