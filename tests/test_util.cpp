// src/util: the did-you-mean rule shared by option keys and column names, and the shape
// formatter of error messages.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "util/nearest_name.h"
#include "util/shape_str.h"

namespace strata {
namespace {

TEST(UtilNearestName, OneRuleForOptionsAndColumns) {
  const std::vector<std::string> options = {"learning_rate", "seed", "task", "text_column", "max_steps"};
  EXPECT_EQ(nearest_name("learning_rte", options), "learning_rate");
  EXPECT_EQ(nearest_name("Learning_Rate", options), "learning_rate");  // case-insensitive
  EXPECT_EQ(nearest_name("sed", options), "seed");
  EXPECT_EQ(nearest_name("tf32", options), "");  // 3 edits from 'task': another name, not a typo
  EXPECT_EQ(nearest_name("text", options), "");
  const std::vector<std::string> columns = {"sentence", "label"};
  EXPECT_EQ(nearest_name("lable", columns), "label");  // a swapped pair is 2 edits
  EXPECT_EQ(nearest_name("sentense", columns), "sentence");
  EXPECT_EQ(nearest_name("txt", columns), "");
  EXPECT_EQ(nearest_name("x", {}), "");
  EXPECT_EQ(did_you_mean("lable", columns), "; did you mean 'label'?");
  EXPECT_EQ(did_you_mean("txt", columns), "");
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
}

TEST(UtilShapeStr, PythonListStyle) {
  EXPECT_EQ(shape_str(std::vector<int64_t>{768, 3072}), "[768, 3072]");
  EXPECT_EQ(shape_str(std::vector<int64_t>{5}), "[5]");
  EXPECT_EQ(shape_str(std::vector<int64_t>{}), "[]");
}

}  // namespace
}  // namespace strata
