#include "experiments/prepare_store/prepare.h"

#include <zlib.h>

#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "experiments/prepare_store/document_reader.h"
#include "framework/data/token_store/sha256.h"
#include "framework/data/token_store/token_store.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

std::string Temp(const std::string& name) { return absl::StrCat(getenv("TEST_TMPDIR"), "/", name); }

std::string Write(const std::string& name, const std::string& text) {
  const std::string path = Temp(name);
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

std::vector<std::string> ReadAll(const InputFile& file, DocumentUnit unit) {
  auto reader = DocumentReader::Open(file, unit, "text");
  EXPECT_TRUE(reader.ok()) << reader.status();
  std::vector<std::string> documents;
  std::string doc;
  for (;;) {
    absl::StatusOr<bool> more = (*reader)->Next(&doc);
    EXPECT_TRUE(more.ok()) << more.status();
    if (!more.ok() || !*more) return documents;
    documents.push_back(doc);
  }
}

InputFile Input(const std::string& path, bool jsonl = false, bool gzip = false) {
  InputFile file;
  file.path = path;
  file.jsonl = jsonl;
  file.gzip = gzip;
  return file;
}

TEST(DocumentReader, ParagraphsAreRunsOfLinesBetweenBlankLines) {
  const std::string path = Write("paragraphs.txt", "one\ntwo\n\n  \nthree\n\nfour");
  EXPECT_EQ(ReadAll(Input(path), DocumentUnit::kParagraph),
            (std::vector<std::string>{"one\ntwo", "three", "four"}));
  EXPECT_EQ(ReadAll(Input(path), DocumentUnit::kFile),
            (std::vector<std::string>{"one\ntwo\n\n  \nthree\n\nfour"}));
}

TEST(DocumentReader, JsonLinesRecordsAndGzip) {
  const std::string path = Temp("records.jsonl.gz");
  gzFile gz = gzopen(path.c_str(), "wb");
  const std::string text = "{\"text\": \"a\\nb \\u00e9\", \"id\": 1}\n\n{\"text\": \"c\"}\n";
  gzwrite(gz, text.data(), text.size());
  gzclose(gz);
  EXPECT_EQ(ReadAll(Input(path, true, true), DocumentUnit::kFile),
            (std::vector<std::string>{"a\nb \xc3\xa9", "c"}));
}

TEST(DocumentReader, ARecordWithoutTheFieldNamesFileAndLine) {
  const std::string path = Write("bad.jsonl", "{\"text\": \"a\"}\n{\"body\": \"b\"}\n");
  auto reader = DocumentReader::Open(Input(path, true), DocumentUnit::kFile, "text");
  ASSERT_TRUE(reader.ok());
  std::string doc;
  ASSERT_TRUE(*(*reader)->Next(&doc));
  absl::StatusOr<bool> second = (*reader)->Next(&doc);
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find("bad.jsonl' line 2"), std::string::npos) << second.status();
  EXPECT_NE(second.status().message().find("--jsonl_field"), std::string::npos);
}

// Paragraph documents "p<i> ..." with one exact duplicate and one empty file.
PrepareOptions SmallCorpus(const std::string& store, int files) {
  PrepareOptions options;
  for (int f = 0; f < files; ++f) {
    std::string text;
    for (int p = 0; p < 40; ++p) absl::StrAppend(&text, "paragraph ", f * 100 + p, " of file ", f, "\n\n");
    options.inputs.push_back(Write(absl::StrCat("corpus", f, ".txt"), text));
  }
  options.inputs.push_back(Write("copy.txt", "paragraph 3 of file 0\n"));
  options.output = store;
  options.unit = DocumentUnit::kParagraph;
  options.train_fraction = 0.6;
  options.validation_fraction = 0.2;
  options.test_fraction = 0.2;
  options.progress = false;
  return options;
}

// Each document's text (bytes tokenizer: ids are bytes) -> its split.
std::map<std::string, std::string> DocumentSplits(const TokenStore& store) {
  std::map<std::string, std::string> out;
  for (const std::string& name : TokenStoreSplitNames()) {
    const TokenStoreSplitFiles& split = store.split(name);
    for (int64_t d = 0; d < split.num_documents(); ++d) {
      std::string text;
      for (int64_t i = split.document_begin(d); i < split.document_begin(d + 1); ++i)
        text += static_cast<char>(split.token(i));
      EXPECT_EQ(out.count(text), 0u) << "document in two splits: " << text;
      out[text] = name;
    }
  }
  return out;
}

TEST(Prepare, SplitsByDocumentRemovesDuplicatesAndIsStableWhenSourcesAreAppended) {
  ASSERT_TRUE(Prepare(SmallCorpus(Temp("store_a"), 2)).ok());
  auto a = TokenStore::Open(Temp("store_a"));
  ASSERT_TRUE(a.ok()) << a.status();
  const TokenStoreManifest& m = (*a)->manifest();
  EXPECT_EQ(m.dedup().documents_read(), 81);
  EXPECT_EQ(m.dedup().duplicates_removed(), 1);
  EXPECT_EQ(m.sources_size(), 3);
  EXPECT_EQ(m.sources(2).sha256(), Sha256Hex("paragraph 3 of file 0\n"));
  const std::map<std::string, std::string> before = DocumentSplits(**a);
  ASSERT_EQ(before.size(), 80u);
  for (const std::string& name : TokenStoreSplitNames()) EXPECT_GT((*a)->split(name).num_documents(), 5) << name;
  ASSERT_TRUE(Prepare(SmallCorpus(Temp("store_b"), 3)).ok());
  auto b = TokenStore::Open(Temp("store_b"));
  ASSERT_TRUE(b.ok()) << b.status();
  const std::map<std::string, std::string> after = DocumentSplits(**b);
  EXPECT_EQ(after.size(), 120u);
  for (const auto& [text, split] : before) EXPECT_EQ(after.at(text), split) << text;
}

TEST(Prepare, TheStoreDoesNotDependOnTheThreadCount) {
  PrepareOptions one = SmallCorpus(Temp("one_thread"), 2);
  one.threads = 1;
  PrepareOptions four = SmallCorpus(Temp("four_threads"), 2);
  four.threads = 4;
  ASSERT_TRUE(Prepare(one).ok());
  ASSERT_TRUE(Prepare(four).ok());
  for (const char* file : {"train.tokens", "train.index", "validation.tokens", "test.index"}) {
    std::ifstream x(Temp(absl::StrCat("one_thread/", file))), y(Temp(absl::StrCat("four_threads/", file)));
    EXPECT_EQ(std::string(std::istreambuf_iterator<char>(x), {}), std::string(std::istreambuf_iterator<char>(y), {}))
        << file;
  }
}

TEST(Prepare, BadOptionsNameTheFlag) {
  PrepareOptions options = SmallCorpus(Temp("bad"), 1);
  options.test_fraction = 0.5;
  EXPECT_NE(Prepare(options).message().find("--train_fraction"), std::string::npos);
  options = SmallCorpus(Temp("bad"), 1);
  options.tokenizer = "sentencepiece";
  EXPECT_NE(Prepare(options).message().find("--spm_vocab_size"), std::string::npos);
  options = SmallCorpus(Temp("bad"), 1);
  options.inputs = {"/dev/zero"};
  EXPECT_NE(Prepare(options).message().find("/dev/zero"), std::string::npos);
}

}  // namespace
}  // namespace tvlab
