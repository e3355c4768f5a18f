// TokenizerEncoder: the data layer's view of a real tokenizer (examples/spam/bert-small, a
// WordPiece BERT tokenizer): truncation it sets, special-token marks, pair type ids, and
// padding configured on the tokenizer removed again (the collator pads per batch).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "data/collator.h"
#include "data/tokenizer_encoder.h"
#include "test_paths.h"

namespace strata::data {
namespace {

const std::string kTokenizerDir = test::fixture_dir() + "/../../examples/spam/bert-small";

TEST(DataTokenizerEncoder, TruncatesMarksSpecialsAndDropsPadding) {
  if (!std::filesystem::exists(kTokenizerDir + "/tokenizer.json")) GTEST_SKIP() << "no " << kTokenizerDir;
  tok::Tokenizer tok = tok::Tokenizer::from_dir(kTokenizerDir);
  const int32_t cls = *tok.token_to_id("[CLS]"), sep = *tok.token_to_id("[SEP]");
  const TokenizerEncoder enc(tok, 8);
  EXPECT_EQ(enc.max_length(), 8u);
  EXPECT_EQ(enc.pad_id(), *tok.token_to_id("[PAD]"));
  EXPECT_EQ(enc.mask_id(), tok.token_to_id("[MASK]"));
  EXPECT_EQ(enc.vocab_size(), tok.vocab_size());

  const Encoded one = enc.encode("win a free prize now by clicking this link today");
  ASSERT_EQ(one.ids.size(), 8u);
  EXPECT_EQ(one.ids.front(), cls);
  EXPECT_EQ(one.ids.back(), sep);
  EXPECT_EQ(one.special_mask, (std::vector<uint8_t>{1, 0, 0, 0, 0, 0, 0, 1}));
  EXPECT_EQ(one.type_ids, std::vector<int32_t>(8, 0));

  const Encoded pair = enc.encode("meeting at noon", "see you there");
  ASSERT_LE(pair.ids.size(), 8u);
  EXPECT_EQ(pair.type_ids.front(), 0);
  EXPECT_EQ(pair.type_ids.back(), 1);
  EXPECT_EQ(pair.ids.back(), sep);

  // Padding configured on the tokenizer pads every encoding; the adapter undoes it.
  const Encoded short_plain = enc.encode("hello");
  tok::PaddingParams p;
  p.strategy = tok::PaddingStrategy::MaxLength;
  p.max_length = 8;
  p.pad_id = enc.pad_id();
  tok.set_padding(p);
  const Encoded short_padded = enc.encode("hello");
  EXPECT_EQ(short_padded.ids, short_plain.ids);
  EXPECT_LT(short_padded.ids.size(), 8u);

  const Batch b = collate({short_plain, one}, CollatorOptions{8, false, 0}, enc.pad_id());
  EXPECT_EQ(b.T, 8);
  EXPECT_EQ(b.input_ids[short_plain.ids.size()], enc.pad_id());
}

TEST(DataTokenizerEncoder, NoTruncationWhenMaxLengthIsZero) {
  if (!std::filesystem::exists(kTokenizerDir + "/tokenizer.json")) GTEST_SKIP() << "no " << kTokenizerDir;
  tok::Tokenizer tok = tok::Tokenizer::from_dir(kTokenizerDir);
  std::string text;
  for (int i = 0; i < 700; ++i) text += "word ";
  EXPECT_EQ(TokenizerEncoder(tok, 0).encode(text).ids.size(), 702u);
  EXPECT_EQ(TokenizerEncoder(tok, 128).encode(text).ids.size(), 128u);
}

}  // namespace
}  // namespace strata::data
