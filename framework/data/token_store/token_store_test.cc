#include "framework/data/token_store/token_store.h"

#include <sys/stat.h>

#include <cerrno>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "framework/data/token_store/token_store_writer.h"
#include "framework/io/testing/fault_injection_file_system.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

std::string TempPath(const std::string& name) { return absl::StrCat(getenv("TEST_TMPDIR"), "/", name); }
bool Exists(const std::string& path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0;
}
bool Contains(const absl::Status& s, const std::string& text) {
  return std::string(s.message()).find(text) != std::string::npos;
}

// Documents {1,2,3} and {4} in train, {5,6} in validation, none in test.
absl::Status WriteSmallStore(const std::string& path, int64_t vocab, bool overwrite = false) {
  auto writer = TokenStoreWriter::Create(path, vocab, overwrite);
  if (!writer.ok()) return writer.status();
  const int64_t top = vocab - 1;
  for (auto s : {(*writer)->AddDocument(kTrainSplitIndex, {1, 2, 3}, {1, 1, 2}, 4),
                 (*writer)->AddDocument(kTrainSplitIndex, {static_cast<int32_t>(top)}, {3}, 3),
                 (*writer)->AddDocument(kValidationSplitIndex, {5, 6}, {1, 1}, 2)})
    if (!s.ok()) return s;
  TokenStoreManifest manifest;
  manifest.mutable_tokenizer()->set_kind("bytes");
  return (*writer)->Commit(manifest);
}

TEST(TokenStore, ReadsBackWhatWasWritten) {
  const std::string path = TempPath("small");
  ASSERT_TRUE(WriteSmallStore(path, 256).ok());
  auto store = TokenStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_EQ((*store)->manifest().token_dtype(), "uint16");
  EXPECT_EQ((*store)->manifest().format_version(), kTokenStoreFormatVersion);
  const TokenStoreSplitFiles& train = (*store)->split(kTrainSplit);
  ASSERT_EQ(train.num_tokens(), 4);
  ASSERT_EQ(train.num_documents(), 2);
  EXPECT_EQ(train.num_bytes(), 7);
  EXPECT_EQ(train.document_begin(1), 3);
  EXPECT_EQ(train.token(2), 3u);
  EXPECT_EQ(train.token(3), 255u);
  EXPECT_EQ(train.token_bytes(2), 2);
  EXPECT_EQ(train.count(255), 1);
  EXPECT_EQ(train.count(4), 0);
  EXPECT_EQ((*store)->split(kValidationSplit).token(1), 6u);
  EXPECT_EQ((*store)->split(kTestSplit).num_documents(), 0);
  EXPECT_FALSE(Exists(path + ".partial"));
}

// Releasing read tokens (MappedFile::Release: the process's mapping of
// them is dropped) changes nothing a later read returns.
TEST(TokenStore, ReleasedTokensReadTheSameAgain) {
  const std::string path = TempPath("release");
  ASSERT_TRUE(WriteSmallStore(path, 70000).ok());  // uint32 ids
  auto store = TokenStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.status();
  const TokenStoreSplitFiles& train = (*store)->split(kTrainSplit);
  train.ReleaseTokens(0, train.num_tokens());
  train.ReleaseTokens(3, 100);  // past the end: clipped
  EXPECT_EQ(train.token(0), 1u);
  EXPECT_EQ(train.token(3), 69999u);
  train.ReleaseTokens(1, 2);
  EXPECT_EQ(train.token(2), 3u);
}

TEST(TokenStore, LargeVocabulariesAreStoredAsUint32) {
  const std::string path = TempPath("wide");
  ASSERT_TRUE(WriteSmallStore(path, 70000).ok());
  auto store = TokenStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_EQ((*store)->manifest().token_dtype(), "uint32");
  EXPECT_EQ((*store)->split(kTrainSplit).token(3), 69999u);
  struct stat info;
  ASSERT_EQ(::stat((path + "/train.tokens").c_str(), &info), 0);
  EXPECT_EQ(info.st_size, 16);
}

TEST(TokenStore, AnExistingStoreIsReplacedOnlyWithOverwrite) {
  const std::string path = TempPath("twice");
  ASSERT_TRUE(WriteSmallStore(path, 256).ok());
  const absl::Status again = WriteSmallStore(path, 300);
  EXPECT_EQ(again.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_TRUE(Contains(again, "--overwrite")) << again;
  ASSERT_TRUE(WriteSmallStore(path, 300, /*overwrite=*/true).ok());
  auto store = TokenStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_EQ((*store)->vocab_size(), 300);
  EXPECT_FALSE(Exists(path + ".old"));
}

TEST(TokenStore, ADirectoryThatIsNotAStoreIsNeverReplaced) {
  const std::string path = TempPath("not_a_store");
  ASSERT_EQ(::mkdir(path.c_str(), 0755), 0);
  const absl::Status s = WriteSmallStore(path, 256, /*overwrite=*/true);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(Contains(s, "not a token store")) << s;
}

TEST(TokenStore, AnAbandonedWriterLeavesNothing) {
  const std::string path = TempPath("abandoned");
  {
    auto writer = TokenStoreWriter::Create(path, 256, false);
    ASSERT_TRUE(writer.ok());
    ASSERT_TRUE((*writer)->AddDocument(kTrainSplitIndex, {1}, {1}, 1).ok());
  }
  EXPECT_FALSE(Exists(path));
  EXPECT_FALSE(Exists(path + ".partial"));
}

TEST(TokenStore, AFailedCommitLeavesNoStoreThatLooksComplete) {
  const std::string path = TempPath("failed_rename");
  // Renames into the store: three counts files, manifest.json, then the
  // directory itself (the 5th), which fails.
  FaultInjectionFileSystem fs(DefaultFileSystem(), {FaultOp::kRename, "failed_rename", 5, EIO});
  auto writer = TokenStoreWriter::Create(path, 256, false, &fs);
  ASSERT_TRUE(writer.ok());
  ASSERT_TRUE((*writer)->AddDocument(kTrainSplitIndex, {1, 2}, {1, 1}, 2).ok());
  EXPECT_FALSE((*writer)->Commit(TokenStoreManifest()).ok());
  EXPECT_TRUE(fs.fired());
  EXPECT_FALSE(Exists(path));
  EXPECT_FALSE(TokenStore::Open(path).ok());
  writer->reset();
  EXPECT_FALSE(Exists(path + ".partial"));
}

TEST(TokenStore, ATruncatedFileIsAnErrorNamingIt) {
  const std::string path = TempPath("truncated");
  ASSERT_TRUE(WriteSmallStore(path, 256).ok());
  ASSERT_EQ(::truncate((path + "/train.tokens").c_str(), 6), 0);
  auto store = TokenStore::Open(path);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_TRUE(Contains(store.status(), "train.tokens")) << store.status();
}

TEST(TokenStore, AManifestOfAnotherFormatIsRefused) {
  const std::string path = TempPath("other_format");
  ASSERT_TRUE(WriteSmallStore(path, 256).ok());
  auto store = TokenStore::Open(path);
  ASSERT_TRUE(store.ok());
  TokenStoreManifest manifest = (*store)->manifest();
  manifest.set_format_version(99);
  std::ofstream(path + "/manifest.json") << ManifestToJson(manifest);
  auto reopened = TokenStore::Open(path);
  ASSERT_FALSE(reopened.ok());
  EXPECT_TRUE(Contains(reopened.status(), "format_version is 99")) << reopened.status();
  std::ofstream(path + "/manifest.json") << "{\"format_version\": 1, \"colour\": 2}";
  auto unknown = TokenStore::Open(path);
  ASSERT_FALSE(unknown.ok());
  EXPECT_TRUE(Contains(unknown.status(), "manifest.json")) << unknown.status();
}

TEST(TokenStore, AMissingStoreSaysHowToMakeOne) {
  auto store = TokenStore::Open(TempPath("nowhere"));
  ASSERT_FALSE(store.ok());
  EXPECT_TRUE(Contains(store.status(), "//experiments:prepare")) << store.status();
}

}  // namespace
}  // namespace tvlab
