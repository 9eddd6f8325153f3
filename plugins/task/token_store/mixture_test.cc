// The token_store task over a mixture of stores (options.sources): batches
// draw from each store in proportion to its weight, TrainSources reports
// what each contributed, and mistakes in the sources name their field.

#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "framework/data/load_task.h"
#include "framework/data/token_store/token_store.h"
#include "framework/data/token_store/token_store_writer.h"
#include "gtest/gtest.h"
#include "plugins/task/token_store/token_store.pb.h"

namespace tvlab {
namespace {

// A bytes store whose train split is 40 documents of the ids {first,
// first + 1, first + 2} and validation 10 of {7, 8, 9}. `vocab` 256 is the
// bytes tokenizer's; another vocabulary makes a store of another tokenizer.
std::string Store(const std::string& name, int32_t first, int64_t vocab = 256) {
  const std::string path = absl::StrCat(getenv("TEST_TMPDIR"), "/", name);
  auto writer = TokenStoreWriter::Create(path, vocab, /*overwrite=*/true);
  EXPECT_TRUE(writer.ok()) << writer.status();
  for (int d = 0; d < 40; ++d)
    EXPECT_TRUE((*writer)->AddDocument(kTrainSplitIndex, {first, first + 1, first + 2}, {1, 1, 1}, 3).ok());
  for (int d = 0; d < 10; ++d) EXPECT_TRUE((*writer)->AddDocument(kValidationSplitIndex, {7, 8, 9}, {1, 1, 1}, 4).ok());
  TokenStoreManifest manifest;
  manifest.mutable_tokenizer()->set_kind("bytes");
  EXPECT_TRUE((*writer)->Commit(manifest).ok());
  return path;
}

Experiment MixtureSpec(const std::vector<std::pair<std::string, double>>& sources) {
  Experiment spec;
  spec.mutable_model()->set_family(ModelSpec::DECODER_ONLY);
  spec.mutable_task()->set_plugin("token_store");
  TokenStoreOptions options;
  options.set_context_length(3);
  for (const auto& [path, weight] : sources) {
    TokenStoreOptions::Source* source = options.add_sources();
    source->set_path(path);
    if (!std::isnan(weight)) source->set_weight(weight);
  }
  spec.mutable_task()->mutable_options()->PackFrom(options);
  spec.mutable_eval()->set_examples(4);
  return spec;
}

TEST(TokenStoreMixture, BatchesDrawFromEachStoreInProportionToItsWeight) {
  const std::string low = Store("low", 10), high = Store("high", 100);
  auto task = LoadTask(MixtureSpec({{low, 1}, {high, 3}}));
  ASSERT_TRUE(task.ok()) << task.status();
  // Windows of 4 ids hold a first id from their store's range (10..12 or
  // the separator 256, 100..102 or 256): the row's store is the one whose
  // ids it holds.
  const int steps = 320, batch = 16;
  int from_high = 0;
  for (int step = 0; step < steps; ++step) {
    const Batch b = (*task)->TrainBatch(5, step, batch);
    for (int r = 0; r < batch; ++r) {
      bool low_ids = false, high_ids = false;
      for (int t = 0; t < 3; ++t) {
        const int32_t id = b.inputs[r * 3 + t];
        low_ids |= id >= 10 && id <= 12;
        high_ids |= id >= 100 && id <= 102;
      }
      ASSERT_NE(low_ids, high_ids) << "a window mixes the stores";
      from_high += high_ids;
    }
  }
  // 5,120 samples = 5 blocks of 1,024: 3/4 of them, to within one sample.
  EXPECT_NEAR(from_high, 0.75 * steps * batch, 1.0);
  const std::vector<Task::TrainSourceUse> uses = (*task)->TrainSources(5, steps * batch);
  ASSERT_EQ(uses.size(), 2u);
  EXPECT_EQ(uses[1].source, high);
  EXPECT_DOUBLE_EQ(uses[1].share, 0.75);
  EXPECT_EQ(uses[1].samples, from_high);
  EXPECT_EQ(uses[0].samples + uses[1].samples, steps * batch);
  EXPECT_EQ(uses[1].tokens, from_high * 3);
  // Each train stream is 40 x (3 ids + separator) = 160 ids: 53 windows.
  EXPECT_DOUBLE_EQ(uses[1].epochs, from_high / 53.0);
  EXPECT_DOUBLE_EQ((*task)->TrainEpochs(5, steps * batch), from_high / 53.0);
}

TEST(TokenStoreMixture, EvaluationReadsTheFirstSource) {
  auto task = LoadTask(MixtureSpec({{Store("first", 10), 1}, {Store("second", 100), 1}}));
  ASSERT_TRUE(task.ok()) << task.status();
  EXPECT_EQ((*task)->EvalBatch(0, 0, 1).inputs, (std::vector<int32_t>{7, 8, 9}));
  EXPECT_EQ((*task)->vocab_size(), 257);
}

// The message of loading `spec`, which must fail.
std::string Refusal(const Experiment& spec) {
  auto task = LoadTask(spec);
  EXPECT_FALSE(task.ok());
  return task.ok() ? "" : std::string(task.status().message());
}

TEST(TokenStoreMixture, MistakesNameTheSourceField) {
  const std::string a = Store("a", 10);
  const double unset = std::nan("");
  EXPECT_NE(Refusal(MixtureSpec({{a, 1}, {a, 0}})).find("task.options.sources[1].weight must be a finite number > 0 (got 0)"),
            std::string::npos);
  EXPECT_NE(Refusal(MixtureSpec({{a, -2}})).find("task.options.sources[0].weight must be"), std::string::npos);
  EXPECT_NE(Refusal(MixtureSpec({{a, 1}, {a, unset}})).find("sources[1].weight must be a finite number > 0 (got none)"),
            std::string::npos);
  EXPECT_NE(Refusal(MixtureSpec({{a, 1}, {a, 1e-9}})).find("task.options.sources[1].weight is"), std::string::npos);
  EXPECT_NE(Refusal(MixtureSpec({{a, 1}, {"", 1}})).find("task.options.sources[1].path is required"),
            std::string::npos);
  const std::string missing = Refusal(MixtureSpec({{a, 1}, {absl::StrCat(getenv("TEST_TMPDIR"), "/none"), 1}}));
  EXPECT_NE(missing.find("task.options.sources[1].path: "), std::string::npos) << missing;
  const std::string other = Refusal(MixtureSpec({{a, 1}, {Store("wide", 10, 300), 1}}));
  EXPECT_NE(other.find("task.options.sources[1].path: the store"), std::string::npos) << other;
  EXPECT_NE(other.find("another tokenizer"), std::string::npos) << other;
  Experiment both = MixtureSpec({{a, 1}});
  TokenStoreOptions options;
  both.task().options().UnpackTo(&options);
  options.set_path(a);
  both.mutable_task()->mutable_options()->PackFrom(options);
  EXPECT_NE(Refusal(both).find("task.options.path ('"), std::string::npos);
}

}  // namespace
}  // namespace tvlab
