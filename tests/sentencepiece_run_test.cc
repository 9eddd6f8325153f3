// SentencePiece tokenization end to end (framework/data/tokenizer.h): a
// text_lm run that trains its tokenizer keeps it as tokenizer.model and its
// resolved spec points there; generate and --resume use that model;
// perplexity per byte follows from perplexity per token; the byte-level
// default is unchanged (per byte = per token); bad tokenizer options are
// errors naming the field. Skipped, saying so, in AddressSanitizer builds
// (SentencePiece cannot be loaded there).

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "framework/train/evaluate.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/run_binary_util.h"

namespace tvlab {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::string Spec(const std::string& tokenizer, int steps = 4) {
  return "name: \"sp\"\n"
         "model { family: DECODER_ONLY d_model: 16 num_layers: 1 num_heads: 2 d_ff: 32 }\n"
         "task { plugin: \"text_lm\" options { [type.googleapis.com/tvlab.TextLmOptions] {\n"
         "  path: \"/usr/share/common-licenses/GPL-3\" context_length: 16 " +
         tokenizer + " } } }\n" + "train { steps: " + std::to_string(steps) +
         " batch_size: 4 checkpoint_every: 2 }\neval { examples: 20 }\n";
}

class SentencePieceRun : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = TempDir() + "/" + ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  RunResult Run(const std::string& spec_text, const std::string& run) {
    std::ofstream(dir_ + "/spec.pbtxt") << spec_text;
    return RunBinary(dir_ + "/spec.pbtxt --output_dir " + run);
  }
  std::string dir_;
};

#define SKIP_UNDER_ASAN(result)                                                 \
  if ((result).output.find("AddressSanitizer builds") != std::string::npos)    \
  GTEST_SKIP() << "SKIPPED: SentencePiece cannot be loaded under ASan"

TEST(NllPerByte, ScalesTheTokenMeanByTokensOverBytes) {
  // 2 tokens of 3 bytes each, each token with probability 1/8: per byte
  // 1/2 (8 = 2^3), so perplexity per byte 2 and 1 bit per byte.
  EXPECT_NEAR(std::exp(NllPerByte(std::log(8.0), 2, 6)), 2.0, 1e-12);
  EXPECT_NEAR(NllPerByte(std::log(8.0), 2, 6) / std::log(2.0), 1.0, 1e-12);
  // Byte-level: tokens == bytes leaves the mean unchanged.
  EXPECT_DOUBLE_EQ(NllPerByte(1.25, 640, 640), 1.25);
}

TEST_F(SentencePieceRun, TrainedTokenizerIsKeptAndUsedByGenerateAndResume) {
  const std::string run = dir_ + "/run";
  RunResult r = Run(Spec("tokenizer { kind: SENTENCEPIECE vocab_size: 1000 }"), run);
  SKIP_UNDER_ASAN(r);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_TRUE(fs::exists(run + "/tokenizer.model"));
  const std::string resolved = ReadFile(run + "/spec.resolved.pbtxt");
  EXPECT_THAT(resolved, HasSubstr("model_path: \"tokenizer.model\""));
  EXPECT_THAT(resolved, HasSubstr("vocab_size: 1000"));

  const std::string metrics = ReadFile(run + "/metrics.json");
  const double ppl = JsonNumber(metrics, "perplexity");
  const double ppl_byte = JsonNumber(metrics, "perplexity_per_byte");
  // Pieces stand for more than a byte each on this text, so the per-byte
  // perplexity is a fractional power of the per-token one, and bits per
  // byte is its log2.
  EXPECT_GT(ppl, 1.0);
  EXPECT_LT(ppl_byte, ppl);
  EXPECT_GT(ppl_byte, 1.0);
  const double tokens_per_byte = std::log(ppl_byte) / std::log(ppl);
  EXPECT_GT(tokens_per_byte, 0.2);
  EXPECT_LT(tokens_per_byte, 0.7);
  EXPECT_NEAR(JsonNumber(metrics, "bits_per_byte"), std::log2(ppl_byte), 1e-9);

  // generate reads the run's tokenizer.model: " License" is one of its
  // pieces (bytes would be 8 ids).
  RunResult ids = RunProgram("experiments/generate", "--run_dir " + run + " --prompt ' License' --tokenize");
  ASSERT_EQ(ids.exit_code, 0) << ids.output;
  EXPECT_EQ(std::count(ids.output.begin(), ids.output.end(), ' '), 1) << ids.output;
  RunResult text = RunProgram("experiments/generate",
                              "--run_dir " + run + " --prompt 'This License' --max_new_tokens 4");
  EXPECT_EQ(text.exit_code, 0) << text.output;

  // A run that moved keeps working: the spec names the model relative to it.
  const std::string moved = dir_ + "/moved";
  fs::rename(run, moved);
  EXPECT_EQ(RunProgram("experiments/generate", "--run_dir " + moved + " --prompt ' License' --tokenize").output,
            ids.output);

  // Resuming a copy with a different tokenizer.model in it uses that file: a
  // corrupt one is an error naming it.
  std::ofstream(moved + "/tokenizer.model", std::ios::trunc) << "not a model";
  fs::remove(moved + "/metrics.json");
  RunResult resumed = RunBinary("--resume " + moved);
  EXPECT_EQ(resumed.exit_code, 2) << resumed.output;
  EXPECT_THAT(resumed.output, HasSubstr("task.options.tokenizer.model_path: '" + moved +
                                        "/tokenizer.model' is not a SentencePiece model"));
}

TEST_F(SentencePieceRun, TrainingTheTokenizerIsDeterministic) {
  RunResult a = Run(Spec("tokenizer { kind: SENTENCEPIECE vocab_size: 1000 }", 2), dir_ + "/a");
  SKIP_UNDER_ASAN(a);
  ASSERT_EQ(a.exit_code, 0) << a.output;
  ASSERT_EQ(Run(Spec("tokenizer { kind: SENTENCEPIECE vocab_size: 1000 }", 2), dir_ + "/b").exit_code, 0);
  EXPECT_EQ(ReadFile(dir_ + "/a/tokenizer.model"), ReadFile(dir_ + "/b/tokenizer.model"));
  EXPECT_EQ(ReadFile(dir_ + "/a/model.safetensors"), ReadFile(dir_ + "/b/model.safetensors"));
  // And a spec naming that file trains the same model bit for bit.
  fs::copy_file(dir_ + "/a/tokenizer.model", dir_ + "/given.model");
  ASSERT_EQ(Run(Spec("tokenizer { kind: SENTENCEPIECE model_path: \"given.model\" }", 2), dir_ + "/c").exit_code, 0);
  EXPECT_EQ(ReadFile(dir_ + "/a/model.safetensors"), ReadFile(dir_ + "/c/model.safetensors"));
}

// parallel_text: pieces follow the 4 specials; the model is trained on both
// sides of the training pairs and kept like text_lm's.
TEST_F(SentencePieceRun, ParallelTextTrainsOnBothSidesAndKeepsTheModel) {
  const std::string run = dir_ + "/run";
  std::ofstream(dir_ + "/spec.pbtxt")
      << "name: \"pt\"\n"
         "model { family: ENCODER_DECODER d_model: 16 num_layers: 1 num_heads: 2 d_ff: 32 }\n"
         "task { plugin: \"parallel_text\" options { [type.googleapis.com/tvlab.ParallelTextOptions] {\n"
         "  path: \"" + Runfile("configs/data/digits_to_words.tsv") + "\" max_length: 16\n"
         "  tokenizer { kind: SENTENCEPIECE vocab_size: 320 } } } }\n"
         "train { steps: 2 batch_size: 4 }\neval { examples: 8 decode_examples: 2 }\n";
  RunResult r = RunBinary(dir_ + "/spec.pbtxt --output_dir " + run);
  SKIP_UNDER_ASAN(r);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::exists(run + "/tokenizer.model"));
  EXPECT_GE(JsonNumber(ReadFile(run + "/metrics.json"), "bleu"), 0.0);
  // Subword ids, fewer than the bytes, all past the 4 specials.
  RunResult ids =
      RunProgram("experiments/generate", "--run_dir " + run + " --prompt 'three one four' --tokenize");
  ASSERT_EQ(ids.exit_code, 0) << ids.output;
  std::istringstream in(ids.output);
  std::vector<int> values;
  for (int id; in >> id;) values.push_back(id);
  EXPECT_GE(values.size(), 1u) << ids.output;
  EXPECT_LT(values.size(), 14u / 2) << ids.output;
  for (int id : values) EXPECT_GE(id, 4) << ids.output;
}

TEST_F(SentencePieceRun, BytesStayTheDefaultWithPerBytePerplexityEqualToPerToken) {
  const std::string run = dir_ + "/run";
  RunResult r = Run(Spec(""), run);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_FALSE(fs::exists(run + "/tokenizer.model"));
  const std::string metrics = ReadFile(run + "/metrics.json");
  EXPECT_NEAR(JsonNumber(metrics, "perplexity_per_byte"), JsonNumber(metrics, "perplexity"),
              1e-9 * JsonNumber(metrics, "perplexity"));
  EXPECT_NEAR(JsonNumber(metrics, "bits_per_byte"), std::log2(JsonNumber(metrics, "perplexity")), 1e-9);
}

TEST_F(SentencePieceRun, BadTokenizerOptionsAreErrorsNamingTheField) {
  RunResult missing =
      Run(Spec("tokenizer { kind: SENTENCEPIECE model_path: \"nowhere.model\" }"), dir_ + "/r1");
  SKIP_UNDER_ASAN(missing);
  EXPECT_EQ(missing.exit_code, 2) << missing.output;
  EXPECT_THAT(missing.output, HasSubstr("task.options.tokenizer.model_path: cannot read '" + dir_ +
                                        "/nowhere.model'"));
  RunResult too_big = Run(Spec("tokenizer { kind: SENTENCEPIECE vocab_size: 50000 }"), dir_ + "/r2");
  EXPECT_EQ(too_big.exit_code, 2) << too_big.output;
  EXPECT_THAT(too_big.output, HasSubstr("task.options.tokenizer.vocab_size: SentencePiece cannot train "
                                        "a model of 50000 pieces"));
  RunResult neither = Run(Spec("tokenizer { kind: SENTENCEPIECE }"), dir_ + "/r3");
  EXPECT_EQ(neither.exit_code, 2) << neither.output;
  EXPECT_THAT(neither.output, HasSubstr("task.options.tokenizer: kind SENTENCEPIECE needs model_path"));
  EXPECT_FALSE(fs::exists(dir_ + "/r1"));
}

}  // namespace
}  // namespace tvlab
