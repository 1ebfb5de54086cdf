// prompt_token against what the forward passes of kvtier-hw need from it: varied ids, in the vocabulary,
// the same for the same sequence and position, different across sequences.
#include "hw/model/prompt_tokens.h"

#include <gtest/gtest.h>

#include <set>

namespace kvtier::hw {
namespace {

constexpr int kVocab = 128256;  // Llama-3.1's

TEST(PromptToken, APromptIsVariedAndInsideTheVocabulary) {
  std::set<int> ids;
  for (int64_t position = 0; position < 8192; ++position) {
    const int id = prompt_token(7, position, kVocab);
    ASSERT_GE(id, 0);
    ASSERT_LT(id, kVocab);
    ids.insert(id);
  }
  // 8,192 draws from 128,256 ids: about 7,940 distinct expected; a repeated or strided id would give few.
  EXPECT_GT(ids.size(), 7800u);
}

TEST(PromptToken, TheSameSequenceAndPositionGiveTheSameId) {
  // Sequence 1, position 0 hashes the golden ratio alone: splitmix64's first output from seed 0,
  // 0xE220A8397B1DCDAF (its published reference value), taken modulo the vocabulary.
  EXPECT_EQ(prompt_token(1, 0, kVocab), static_cast<int>(0xE220A8397B1DCDAFull % kVocab));
  EXPECT_EQ(prompt_token(3, 100, kVocab), prompt_token(3, 100, kVocab));
  int differing = 0;
  for (int64_t position = 0; position < 1000; ++position)
    differing += prompt_token(3, position, kVocab) != prompt_token(4, position, kVocab);
  EXPECT_GT(differing, 990) << "two requests' prompts should not repeat each other";
}

TEST(PromptToken, AppendingGivesEachPositionItsOwnId) {
  std::vector<int> ids = {-1};
  append_prompt_tokens(ids, 9, 4096, 3, kVocab);
  const std::vector<int> expected = {-1, prompt_token(9, 4096, kVocab), prompt_token(9, 4097, kVocab),
                                     prompt_token(9, 4098, kVocab)};
  EXPECT_EQ(ids, expected);
}

TEST(PromptToken, ASmallVocabularyIsCoveredEvenly) {
  int counts[4] = {};
  for (int64_t position = 0; position < 40000; ++position) ++counts[prompt_token(1, position, 4)];
  for (int count : counts) EXPECT_NEAR(count, 10000, 400);
}

}  // namespace
}  // namespace kvtier::hw
