// Tokenizers (tokenizer.h): bytes and SentencePiece round trips, byte
// offsets, deterministic training, and the errors a spec can cause.
// SentencePiece tests are skipped, saying so, in AddressSanitizer builds,
// where the library cannot be loaded (sentencepiece_tokenizer.h).

#include "framework/data/tokenizer.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

using ::testing::HasSubstr;

constexpr char kGpl[] = "/usr/share/common-licenses/GPL-3";

std::vector<std::string> GplLines() {
  std::ifstream in(kGpl);
  std::stringstream s;
  s << in.rdbuf();
  std::vector<std::string> lines = absl::StrSplit(s.str(), '\n');
  return lines;
}

TokenizerOptions Sp(int vocab_size) {
  TokenizerOptions o;
  o.set_kind(TokenizerOptions::SENTENCEPIECE);
  o.set_vocab_size(vocab_size);
  return o;
}

// Trains the model most tests use (once), or skips under ASan.
const Tokenizer* Trained() {
  static auto* trained =
      new absl::StatusOr<std::unique_ptr<Tokenizer>>(MakeTokenizer(Sp(500), GplLines(), "tok"));
  return trained->ok() ? trained->value().get() : nullptr;
}

#define SKIP_WITHOUT_SENTENCEPIECE()                                                          \
  do {                                                                                        \
    auto probe = MakeTokenizer(Sp(500), GplLines(), "tok");                                   \
    if (probe.status().code() == absl::StatusCode::kUnimplemented)                            \
      GTEST_SKIP() << "SKIPPED: " << probe.status().message();                               \
    ASSERT_TRUE(probe.ok()) << probe.status();                                                \
  } while (0)

const char kText[] = "This License, \"the GNU GPL\" -- 3 Dec 2026,\n  two  spaces\tand a tab\n"
                     "caf\xc3\xa9 \xe2\x80\x94 na\xc3\xafve \xe6\xbc\xa2\xe5\xad\x97 (never seen in training)\n";

TEST(ByteTokenizer, RoundTripsEveryByteWithOneIdPerByte) {
  std::unique_ptr<Tokenizer> bytes = MakeByteTokenizer();
  std::string all;
  for (int b = 0; b < 256; ++b) all += static_cast<char>(b);
  std::vector<int64_t> ends;
  const std::vector<int32_t> ids = bytes->Encode(all, &ends);
  ASSERT_EQ(ids.size(), 256u);
  for (int b = 0; b < 256; ++b) {
    EXPECT_EQ(ids[b], b);
    EXPECT_EQ(ends[b], b + 1);
  }
  EXPECT_EQ(bytes->Decode(ids), all);
  EXPECT_EQ(bytes->vocab_size(), 256);
  EXPECT_EQ(bytes->SerializedModel(), "");
}

TEST(SentencePiece, RoundTripsTextWithNewlinesSpacesAndUnseenCharacters) {
  SKIP_WITHOUT_SENTENCEPIECE();
  const Tokenizer& sp = *Trained();
  EXPECT_EQ(sp.vocab_size(), 500);
  std::vector<int64_t> ends;
  const std::vector<int32_t> ids = sp.Encode(kText, &ends);
  EXPECT_EQ(sp.Decode(ids), kText);
  // Subwords: on text like the training text, far fewer ids than bytes.
  const std::string licence = "you may not propagate or modify a covered work except as expressly provided";
  EXPECT_LT(sp.Encode(licence).size(), licence.size() / 2);
  for (int32_t id : ids) {
    EXPECT_GE(id, 0);
    EXPECT_LT(id, 500);
  }
  // Offsets: non-decreasing, ending at the text's size; on the ASCII first
  // line each prefix of ids decodes to exactly the bytes its offset says.
  ASSERT_EQ(ends.size(), ids.size());
  EXPECT_EQ(ends.back(), static_cast<int64_t>(std::string(kText).size()));
  for (size_t j = 1; j < ends.size(); ++j) EXPECT_LE(ends[j - 1], ends[j]);
  const size_t first_line = std::string(kText).find('\n');
  for (size_t j = 0; j < ids.size() && ends[j] <= static_cast<int64_t>(first_line); ++j)
    EXPECT_EQ(sp.Decode(std::vector<int32_t>(ids.begin(), ids.begin() + j + 1)),
              std::string(kText).substr(0, ends[j]));
}

TEST(SentencePiece, TrainingIsDeterministicAndTheSavedModelEncodesTheSame) {
  SKIP_WITHOUT_SENTENCEPIECE();
  auto again = MakeTokenizer(Sp(500), GplLines(), "tok");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ((*again)->SerializedModel(), Trained()->SerializedModel());

  const std::string path = testing::TempDir() + "/tokenizer_test.model";
  std::ofstream(path, std::ios::binary) << Trained()->SerializedModel();
  TokenizerOptions from_file;
  from_file.set_kind(TokenizerOptions::SENTENCEPIECE);
  from_file.set_model_path(path);
  from_file.set_vocab_size(500);  // checked against the model
  auto loaded = MakeTokenizer(from_file, {}, "tok");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ((*loaded)->Encode(kText), Trained()->Encode(kText));
  EXPECT_EQ((*loaded)->SerializedModel(), Trained()->SerializedModel());
}

TEST(SentencePiece, BadModelFilesAreErrorsNamingTheFieldAndFile) {
  SKIP_WITHOUT_SENTENCEPIECE();
  TokenizerOptions o;
  o.set_kind(TokenizerOptions::SENTENCEPIECE);
  o.set_model_path("/nonexistent/x.model");
  auto missing = MakeTokenizer(o, {}, "task.options.tokenizer");
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(std::string(missing.status().message()),
              HasSubstr("task.options.tokenizer.model_path: cannot read '/nonexistent/x.model'"));

  const std::string corrupt = testing::TempDir() + "/corrupt.model";
  std::ofstream(corrupt, std::ios::binary) << "this is not a protobuf \x01\x02\xff";
  o.set_model_path(corrupt);
  auto bad = MakeTokenizer(o, {}, "task.options.tokenizer");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()),
              HasSubstr("task.options.tokenizer.model_path: '" + corrupt + "' is not a SentencePiece model"));

  const std::string empty = testing::TempDir() + "/empty.model";
  std::ofstream(empty, std::ios::binary) << "";
  o.set_model_path(empty);
  auto none = MakeTokenizer(o, {}, "task.options.tokenizer");
  EXPECT_THAT(std::string(none.status().message()), HasSubstr("the file is empty"));

  const std::string good = testing::TempDir() + "/good.model";
  std::ofstream(good, std::ios::binary) << Trained()->SerializedModel();
  o.set_model_path(good);
  o.set_vocab_size(800);
  auto mismatch = MakeTokenizer(o, {}, "task.options.tokenizer");
  EXPECT_THAT(std::string(mismatch.status().message()),
              HasSubstr("has 500 pieces but task.options.tokenizer.vocab_size is 800"));
}

TEST(SentencePiece, VocabularyTooLargeForTheTextIsAnErrorNamingTheField) {
  SKIP_WITHOUT_SENTENCEPIECE();
  auto r = MakeTokenizer(Sp(5000), {"a short line", "and another one"}, "task.options.tokenizer");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()),
              HasSubstr("task.options.tokenizer.vocab_size: SentencePiece cannot train a model of 5000 pieces"));
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("Vocabulary size too high (5000). Please set it to a value <="));
}

TEST(TokenizerOptions, ValidationNamesTheField) {
  TokenizerOptions bytes_with_size;
  bytes_with_size.set_vocab_size(300);
  EXPECT_THAT(std::string(ValidateTokenizerOptions(bytes_with_size, "t").message()),
              HasSubstr("t: model_path and vocab_size apply to kind SENTENCEPIECE only"));
  TokenizerOptions neither;
  neither.set_kind(TokenizerOptions::SENTENCEPIECE);
  EXPECT_THAT(std::string(ValidateTokenizerOptions(neither, "t").message()),
              HasSubstr("needs model_path (a trained .model file) or vocab_size"));
  EXPECT_THAT(std::string(ValidateTokenizerOptions(Sp(100), "t").message()),
              HasSubstr("t.vocab_size must be at least 260 (got 100)"));
  EXPECT_TRUE(ValidateTokenizerOptions(Sp(300), "t").ok());
  EXPECT_TRUE(ValidateTokenizerOptions(TokenizerOptions(), "t").ok());
  // The spec loader writes defaults out: "" and 0, present, mean unset.
  TokenizerOptions written_out;
  written_out.set_kind(TokenizerOptions::BYTES);
  written_out.set_model_path("");
  written_out.set_vocab_size(0);
  EXPECT_TRUE(ValidateTokenizerOptions(written_out, "t").ok());
  written_out.set_kind(TokenizerOptions::SENTENCEPIECE);
  EXPECT_THAT(std::string(ValidateTokenizerOptions(written_out, "t").message()),
              HasSubstr("needs model_path"));
}

}  // namespace
}  // namespace tvlab
