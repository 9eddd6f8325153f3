// token_store under eval.context_targets (Task::EvaluatedOnSameTargets): at
// every length the windows end where the longest length's windows end, a
// window is the last `length` ids before that end (documents included), only
// its last N targets are scored, and the count of windows, the scored ids,
// their bytes and the unigram baseline over them are the same at every
// length; {L, L, L} is EvaluatedAt(L).

#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "framework/data/load_task.h"
#include "framework/data/token_store/token_store_writer.h"
#include "gtest/gtest.h"
#include "plugins/task/token_store/token_store.pb.h"

namespace tvlab {
namespace {

// The validation stream as the task packs it: ids and the bytes each
// stands for (the separator 256 after every document, for none).
struct Stream {
  std::vector<int32_t> ids;
  std::vector<int32_t> bytes;
};

// Validation: 30 documents of 1 .. 5 ids (10 .. 16), bytes 1 .. 3 per id.
// Train: one document. `stream` (when given) receives the packed validation
// stream.
std::string Store(const std::string& name, Stream* stream = nullptr) {
  const std::string path = absl::StrCat(getenv("TEST_TMPDIR"), "/", name);
  auto writer = TokenStoreWriter::Create(path, 256, /*overwrite=*/true);
  EXPECT_TRUE(writer.ok()) << writer.status();
  TokenStoreWriter& w = **writer;
  EXPECT_TRUE(w.AddDocument(kTrainSplitIndex, {1, 2, 3, 4, 5, 6, 7, 8}, {1, 1, 1, 1, 1, 1, 1, 1}, 8).ok());
  for (int d = 0; d < 30; ++d) {
    std::vector<int32_t> ids;
    std::vector<uint8_t> bytes;
    int64_t total = 0;
    for (int k = 0; k <= d % 5; ++k) {
      ids.push_back(10 + (d * 3 + k) % 7);
      bytes.push_back(1 + (d + k) % 3);
      total += bytes.back();
    }
    EXPECT_TRUE(w.AddDocument(kValidationSplitIndex, ids, bytes, total).ok());
    if (stream == nullptr) continue;
    stream->ids.insert(stream->ids.end(), ids.begin(), ids.end());
    stream->bytes.insert(stream->bytes.end(), bytes.begin(), bytes.end());
    stream->ids.push_back(256), stream->bytes.push_back(0);
  }
  TokenStoreManifest manifest;
  manifest.mutable_tokenizer()->set_kind("bytes");
  EXPECT_TRUE(w.Commit(manifest).ok());
  return path;
}

std::shared_ptr<const Task> LoadStoreTask(const std::string& path, bool document_mask) {
  Experiment spec;
  spec.mutable_model()->set_family(ModelSpec::DECODER_ONLY);
  spec.mutable_task()->set_plugin("token_store");
  TokenStoreOptions options;
  options.set_path(path);
  options.set_context_length(4);
  options.set_document_mask(document_mask);
  spec.mutable_task()->mutable_options()->PackFrom(options);
  spec.mutable_eval()->set_examples(4);
  auto task = LoadTask(spec);
  EXPECT_TRUE(task.ok()) << task.status();
  return task.ok() ? *task : nullptr;
}

TEST(TokenStoreSameTargets, EveryLengthScoresTheSameIdsOfTheSameWindows) {
  Stream stream;
  const std::shared_ptr<const Task> task = LoadStoreTask(Store("same_targets", &stream), /*document_mask=*/true);
  ASSERT_NE(task, nullptr);
  constexpr int64_t kLongest = 24, kTargets = 5;
  const int64_t windows = (static_cast<int64_t>(stream.ids.size()) - 1) / kLongest;  // 105 ids: 4
  ASSERT_EQ(windows, 4);
  // Window i's scored targets are stream positions 24 (i + 1) - 4 .. 24 (i + 1).
  std::vector<int32_t> expected;
  double expected_bytes = 0;
  for (int64_t i = 0; i < windows; ++i)
    for (int64_t p = (i + 1) * kLongest - kTargets + 1; p <= (i + 1) * kLongest; ++p)
      expected.push_back(stream.ids[p]), expected_bytes += stream.bytes[p];
  double unigram = 0;
  for (int64_t length : {5, 9, 24}) {
    auto view = task->EvaluatedOnSameTargets(EvalWindows{length, kLongest, kTargets});
    ASSERT_TRUE(view.ok()) << view.status();
    ASSERT_NE(*view, nullptr);
    EXPECT_EQ((*view)->NumEvalExamples(1000), windows);
    EXPECT_EQ((*view)->NumEvalExamples(2), 2);
    const Batch b = (*view)->EvalBatch(0, 0, windows);  // (W, length)
    ASSERT_EQ(b.length, length);
    ASSERT_EQ(b.documents.size(), b.inputs.size());
    std::vector<int32_t> scored;
    for (int64_t r = 0; r < windows; ++r)
      for (int64_t t = 0; t < length; ++t) {
        const int64_t at = r * length + t, p = (r + 1) * kLongest - length + t;  // p: the input's stream position
        EXPECT_EQ(b.inputs[at], stream.ids[p]) << length << " " << at;
        EXPECT_EQ(b.targets[at] == kIgnoreTarget, t < length - kTargets) << length << " " << at;
        if (b.targets[at] != kIgnoreTarget) scored.push_back(b.targets[at]);
        // Documents: a new one right after each separator.
        if (t > 0) {
          EXPECT_EQ(b.documents[at], b.documents[at - 1] + (stream.ids[p - 1] == 256 ? 1 : 0)) << at;
        }
      }
    EXPECT_EQ(scored, expected) << length;
    const auto& lm = static_cast<const LanguageModelTask&>(**view);
    EXPECT_EQ(lm.EvalTargetBytes(windows), expected_bytes) << length;
    if (length == 5) unigram = lm.UnigramPerplexity();
    EXPECT_EQ(lm.UnigramPerplexity(), unigram) << length;  // over the scored ids only
  }
  // Today's evaluation at 24 scores every target, so other bytes.
  EXPECT_NE(static_cast<const LanguageModelTask&>(**task->EvaluatedAt(kLongest)).EvalTargetBytes(windows),
            expected_bytes);
}

TEST(TokenStoreSameTargets, AllTargetsAtOneLengthAreEvaluatedAt) {
  const std::shared_ptr<const Task> task = LoadStoreTask(Store("own_length"), /*document_mask=*/false);
  ASSERT_NE(task, nullptr);
  for (int64_t length : {3, 8, 13}) {
    auto own = task->EvaluatedAt(length);
    auto same = task->EvaluatedOnSameTargets(EvalWindows{length, length, length});
    ASSERT_TRUE(own.ok() && same.ok());
    EXPECT_EQ((*same)->NumEvalExamples(1000), (*own)->NumEvalExamples(1000));
    const Batch a = (*own)->EvalBatch(0, 1, 3), b = (*same)->EvalBatch(0, 1, 3);
    EXPECT_EQ(a.inputs, b.inputs);
    EXPECT_EQ(a.targets, b.targets);
    for (int32_t target : a.targets) EXPECT_NE(target, kIgnoreTarget);
    const auto& own_lm = static_cast<const LanguageModelTask&>(**own);
    const auto& same_lm = static_cast<const LanguageModelTask&>(**same);
    EXPECT_EQ(own_lm.UnigramPerplexity(), same_lm.UnigramPerplexity());
    EXPECT_EQ(own_lm.EvalTargetBytes(5), same_lm.EvalTargetBytes(5));
  }
}

TEST(TokenStoreSameTargets, WindowsOutOfOrderOrPastTheStreamAreErrors) {
  const std::shared_ptr<const Task> task = LoadStoreTask(Store("bad_windows"), /*document_mask=*/false);
  ASSERT_NE(task, nullptr);
  for (const EvalWindows& bad : {EvalWindows{8, 4, 2}, EvalWindows{4, 8, 5}, EvalWindows{4, 8, 0}}) {
    auto view = task->EvaluatedOnSameTargets(bad);
    ASSERT_FALSE(view.ok());
    EXPECT_NE(view.status().message().find("eval.context_targets"), absl::string_view::npos) << view.status();
  }
  auto past = task->EvaluatedOnSameTargets(EvalWindows{4, 1000, 4});
  ASSERT_FALSE(past.ok());
  EXPECT_NE(past.status().message().find("too few for one window of 1000"), absl::string_view::npos)
      << past.status();
}

}  // namespace
}  // namespace tvlab
