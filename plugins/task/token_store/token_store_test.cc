// The token_store task's own properties: the packed stream, the window
// order (a permutation per epoch, a pure function of its inputs), and the
// task's batches, evaluation bytes and epochs over a small store, and the
// documents its batches carry with options.document_mask.

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "framework/data/load_task.h"
#include "framework/data/token_store/token_store.h"
#include "framework/data/token_store/token_store_writer.h"
#include "gtest/gtest.h"
#include "plugins/task/token_store/packed_split.h"
#include "plugins/task/token_store/token_store.pb.h"
#include "plugins/task/token_store/window_order.h"

namespace tvlab {
namespace {

// Train: documents {1 2 3}, {4}, {5 6} (token bytes 1, 2, 3 cycling);
// validation: 50 documents of 3 ids; test: none. Bytes: 256 ids, and the
// separator 256.
std::string SmallStore(const std::string& name) {
  const std::string path = absl::StrCat(getenv("TEST_TMPDIR"), "/", name);
  auto writer = TokenStoreWriter::Create(path, 256, /*overwrite=*/true);
  EXPECT_TRUE(writer.ok()) << writer.status();
  TokenStoreWriter& w = **writer;
  EXPECT_TRUE(w.AddDocument(kTrainSplitIndex, {1, 2, 3}, {1, 2, 3}, 6).ok());
  EXPECT_TRUE(w.AddDocument(kTrainSplitIndex, {4}, {1}, 1).ok());
  EXPECT_TRUE(w.AddDocument(kTrainSplitIndex, {5, 6}, {2, 3}, 5).ok());
  for (int d = 0; d < 50; ++d) EXPECT_TRUE(w.AddDocument(kValidationSplitIndex, {7, 8, 9}, {1, 1, 2}, 4).ok());
  TokenStoreManifest manifest;
  manifest.mutable_tokenizer()->set_kind("bytes");
  EXPECT_TRUE(w.Commit(manifest).ok());
  return path;
}

TEST(PackedSplit, PutsTheSeparatorAfterEveryDocument) {
  auto store = TokenStore::Open(SmallStore("packed"));
  ASSERT_TRUE(store.ok()) << store.status();
  const PackedSplit packed((*store)->split(kTrainSplit), 256);
  ASSERT_EQ(packed.length(), 9);
  std::vector<int32_t> ids(9);
  packed.Read(0, 9, ids.data());
  EXPECT_EQ(ids, (std::vector<int32_t>{1, 2, 3, 256, 4, 256, 5, 6, 256}));
  std::vector<int32_t> middle(4);
  packed.Read(3, 4, middle.data());
  EXPECT_EQ(middle, (std::vector<int32_t>{256, 4, 256, 5}));
  EXPECT_EQ(packed.BytesAt(2), 3);
  EXPECT_EQ(packed.BytesAt(3), 0);
  EXPECT_EQ(packed.BytesAt(8), 0);
  EXPECT_EQ(packed.BytesAt(7), 3);
  const PackedSplit abutting((*store)->split(kTrainSplit), std::nullopt);
  ASSERT_EQ(abutting.length(), 6);
  abutting.Read(1, 4, middle.data());
  EXPECT_EQ(middle, (std::vector<int32_t>{2, 3, 4, 5}));
}

TEST(PackedSplit, ReadsTheDocumentOfEveryPosition) {
  auto store = TokenStore::Open(SmallStore("documents"));
  ASSERT_TRUE(store.ok()) << store.status();
  // 1 2 3 | 4 | 5 6 |: a separator belongs to the document it ends.
  const PackedSplit packed((*store)->split(kTrainSplit), 256);
  std::vector<int32_t> documents(9);
  packed.ReadDocuments(0, 9, documents.data());
  EXPECT_EQ(documents, (std::vector<int32_t>{0, 0, 0, 0, 1, 1, 2, 2, 2}));
  packed.ReadDocuments(4, 4, documents.data());  // counted from the document holding 4
  EXPECT_EQ(std::vector<int32_t>(documents.begin(), documents.begin() + 4),
            (std::vector<int32_t>{0, 0, 1, 1}));
  const PackedSplit abutting((*store)->split(kTrainSplit), std::nullopt);  // 1 2 3 4 5 6
  abutting.ReadDocuments(1, 5, documents.data());
  EXPECT_EQ(std::vector<int32_t>(documents.begin(), documents.begin() + 5),
            (std::vector<int32_t>{0, 0, 1, 2, 2}));
}

TEST(WindowOrder, EachEpochIsAPermutationThatDependsOnSeedAndEpoch) {
  for (uint64_t n : {1, 2, 3, 7, 64, 1000, 4097}) {
    std::set<uint64_t> seen;
    for (uint64_t i = 0; i < n; ++i) seen.insert(ShuffledIndex(5, 0, n, i));
    EXPECT_EQ(seen.size(), n);
    EXPECT_EQ(*seen.rbegin(), n - 1);
  }
  std::vector<uint64_t> a, b, c;
  for (uint64_t i = 0; i < 100; ++i) {
    a.push_back(ShuffledIndex(5, 0, 100, i));
    b.push_back(ShuffledIndex(5, 1, 100, i));
    c.push_back(ShuffledIndex(6, 0, 100, i));
  }
  EXPECT_NE(a, b);
  EXPECT_NE(a, c);
  EXPECT_EQ(a[17], ShuffledIndex(5, 0, 100, 17));  // a pure function
}

std::shared_ptr<const Task> LoadStoreTask(const std::string& path, int context, bool separator = true,
                                          bool document_mask = false) {
  Experiment spec;
  spec.mutable_model()->set_family(ModelSpec::DECODER_ONLY);
  spec.mutable_task()->set_plugin("token_store");
  TokenStoreOptions options;
  options.set_path(path);
  options.set_context_length(context);
  if (!separator) options.set_separator(TokenStoreOptions::NONE);
  options.set_document_mask(document_mask);
  spec.mutable_task()->mutable_options()->PackFrom(options);
  spec.mutable_eval()->set_examples(4);
  auto task = LoadTask(spec);
  EXPECT_TRUE(task.ok()) << task.status();
  return task.ok() ? *task : nullptr;
}

// model.memory_tokens with packed documents: refused by LoadTask, naming
// the field (a query would see two intervals of keys); without the
// document mask the task loads.
TEST(TokenStoreTask, MemoryTokensRefuseTheDocumentMask) {
  const std::string path = SmallStore("memory_tokens");
  for (bool document_mask : {true, false}) {
    Experiment spec;
    spec.mutable_model()->set_family(ModelSpec::DECODER_ONLY);
    spec.mutable_model()->mutable_memory_tokens()->set_count(2);
    spec.mutable_task()->set_plugin("token_store");
    TokenStoreOptions options;
    options.set_path(path);
    options.set_context_length(3);
    options.set_document_mask(document_mask);
    spec.mutable_task()->mutable_options()->PackFrom(options);
    spec.mutable_eval()->set_examples(4);
    auto task = LoadTask(spec);
    EXPECT_EQ(task.ok(), !document_mask) << task.status();
    if (document_mask) {
      EXPECT_NE(task.status().message().find("model.memory_tokens.count (2): task 'token_store' packs documents"),
                std::string::npos)
          << task.status();
    }
  }
}

// A recurrent mixer (gla) on any layer with packed documents: refused by
// LoadTask, naming the layer's field (its state cannot be reset at a
// document start yet); without the document mask the task loads.
TEST(TokenStoreTask, RecurrentMixersRefuseTheDocumentMask) {
  const std::string path = SmallStore("mixer");
  for (bool in_override : {false, true}) {
    for (bool document_mask : {true, false}) {
      Experiment spec;
      spec.mutable_model()->set_family(ModelSpec::DECODER_ONLY);
      AttentionSpec* attention = in_override ? spec.mutable_model()->add_layer_overrides()->mutable_attention()
                                             : spec.mutable_model()->mutable_attention();
      attention->set_layout("gla");
      spec.mutable_task()->set_plugin("token_store");
      TokenStoreOptions options;
      options.set_path(path);
      options.set_context_length(3);
      options.set_document_mask(document_mask);
      spec.mutable_task()->mutable_options()->PackFrom(options);
      spec.mutable_eval()->set_examples(4);
      auto task = LoadTask(spec);
      EXPECT_EQ(task.ok(), !document_mask) << task.status();
      const std::string field = in_override ? "model.layer_overrides[0].attention.layout" : "model.attention.layout";
      if (document_mask) {
        EXPECT_NE(task.status().message().find(field + " is a recurrent mixer"), std::string::npos) << task.status();
      }
    }
  }
}

TEST(TokenStoreTask, OneEpochReadsEveryWindowOnceAndReportsItsEpochs) {
  auto task = LoadStoreTask(SmallStore("epoch"), 2);
  ASSERT_NE(task, nullptr);
  EXPECT_EQ(task->vocab_size(), 257);
  // The train stream 1 2 3 | 4 | 5 6 | has (9 - 1) / 2 = 4 windows of 3 ids.
  std::multiset<std::vector<int32_t>> windows;
  for (int step = 0; step < 2; ++step) {
    const Batch b = task->TrainBatch(9, step, 2);
    for (int r = 0; r < 2; ++r)
      windows.insert({b.inputs[2 * r], b.inputs[2 * r + 1], b.targets[2 * r + 1]});
  }
  EXPECT_EQ(windows, (std::multiset<std::vector<int32_t>>{{1, 2, 3}, {3, 256, 4}, {4, 256, 5}, {5, 6, 256}}));
  EXPECT_DOUBLE_EQ(task->TrainEpochs(9, 4), 1.0);
  EXPECT_DOUBLE_EQ(task->TrainEpochs(9, 3), 0.75);
  EXPECT_TRUE(task->TrainSources(9, 4).empty());  // one store: no mixture to report
}

TEST(TokenStoreTask, ResumedAndFreshInstancesReadTheSameTokens) {
  const std::string path = SmallStore("resume");
  auto first = LoadStoreTask(path, 2), second = LoadStoreTask(path, 2);
  ASSERT_NE(first, nullptr);
  for (int step : {0, 1, 5, 17}) {
    EXPECT_EQ(first->TrainBatch(3, step, 4).inputs, second->TrainBatch(3, step, 4).inputs) << step;
    EXPECT_EQ(first->TrainBatch(3, step, 4).targets, second->TrainBatch(3, step, 4).targets) << step;
  }
}

TEST(TokenStoreTask, EvaluationBytesAreTheBytesOfThePredictedIds) {
  auto task = LoadStoreTask(SmallStore("bytes"), 4);
  ASSERT_NE(task, nullptr);
  const auto& lm = static_cast<const LanguageModelTask&>(*task);
  // Validation stream 7 8 9 | 7 8 9 | ... with bytes 1 1 2 0 1 1 2 0 ...:
  // window 0 predicts positions 1..4 (8 9 | 7): 1 + 2 + 0 + 1 bytes.
  EXPECT_DOUBLE_EQ(lm.EvalTargetBytes(1), 4);
  EXPECT_DOUBLE_EQ(lm.EvalTargetBytes(2), 8);
  const Batch eval = task->EvalBatch(0, 1, 1);
  EXPECT_EQ(eval.inputs, (std::vector<int32_t>{7, 8, 9, 256}));
  EXPECT_EQ(task->NumEvalExamples(1000), (200 - 1) / 4);
  EXPECT_GT(lm.UnigramPerplexity(), 1.0);
  EXPECT_EQ(lm.Detokenize({7, 256, 8}), std::string("\x07\x08"));
}

// With document_mask every batch (training, evaluation, an evaluation-length
// view) carries each input's document: a new one right after each
// separator, the same one otherwise; without it, none.
TEST(TokenStoreTask, DocumentMaskBatchesCarryTheDocuments) {
  const std::string path = SmallStore("document_mask");
  auto task = LoadStoreTask(path, 3, /*separator=*/true, /*document_mask=*/true);
  ASSERT_NE(task, nullptr);
  auto longer = task->EvaluatedAt(5);
  ASSERT_TRUE(longer.ok()) << longer.status();
  for (const Batch& b : {task->TrainBatch(1, 0, 2), task->TrainBatch(1, 1, 2),
                         task->EvalBatch(0, 0, 3), (*longer)->EvalBatch(0, 1, 2)}) {
    ASSERT_EQ(b.documents.size(), b.inputs.size());
    for (int64_t r = 0; r < b.batch; ++r) {
      EXPECT_EQ(b.documents[r * b.length], 0);
      for (int64_t t = 1; t < b.length; ++t) {
        const int64_t at = r * b.length + t;
        EXPECT_EQ(b.documents[at], b.documents[at - 1] + (b.inputs[at - 1] == 256 ? 1 : 0)) << at;
      }
    }
  }
  EXPECT_TRUE(LoadStoreTask(path, 3)->TrainBatch(1, 0, 2).documents.empty());
}

TEST(TokenStoreTask, BadOptionsNameTheField) {
  Experiment spec;
  spec.mutable_model()->set_family(ModelSpec::DECODER_ONLY);
  spec.mutable_task()->set_plugin("token_store");
  TokenStoreOptions options;
  options.set_path(absl::StrCat(getenv("TEST_TMPDIR"), "/no_store_here"));
  spec.mutable_task()->mutable_options()->PackFrom(options);
  auto missing = LoadTask(spec);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("task.options.path"), std::string::npos) << missing.status();
  EXPECT_NE(missing.status().message().find("//experiments:prepare"), std::string::npos) << missing.status();
  options.set_path(SmallStore("vocab"));
  options.set_store_vocab_size(1000);
  options.set_context_length(2);
  spec.mutable_task()->mutable_options()->PackFrom(options);
  auto vocab = LoadTask(spec);
  ASSERT_FALSE(vocab.ok());
  EXPECT_NE(vocab.status().message().find("task.options.store_vocab_size is 1000"), std::string::npos)
      << vocab.status();
  options.set_store_vocab_size(0);
  options.set_context_length(64);
  spec.mutable_task()->mutable_options()->PackFrom(options);
  auto too_long = LoadTask(spec);
  ASSERT_FALSE(too_long.ok());
  EXPECT_NE(too_long.status().message().find("context_length"), std::string::npos) << too_long.status();
}

}  // namespace
}  // namespace tvlab
