// The atomic writer: complete files only, the old file kept on any failure,
// and failures (ENOSPC, EIO, a directory in the way) as Status naming the path.

#include "framework/io/atomic_file.h"

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "framework/io/testing/fault_injection_file_system.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

namespace fs = std::filesystem;

std::string TestDir(const std::string& name) {
  std::string dir = std::string(std::getenv("TEST_TMPDIR")) + "/" + name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(AtomicFile, WritesAndReplaces) {
  const std::string path = TestDir("writes") + "/a.json";
  ASSERT_TRUE(WriteFileAtomically(path, "first").ok());
  EXPECT_EQ(Read(path), "first");
  ASSERT_TRUE(WriteFileAtomically(path, "second, longer").ok());
  EXPECT_EQ(Read(path), "second, longer");
  EXPECT_FALSE(fs::exists(path + ".tmp"));
}

TEST(AtomicFile, PiecesAppendInOrder) {
  const std::string path = TestDir("pieces") + "/b.bin";
  auto file = AtomicFile::Open(DefaultFileSystem(), path);
  ASSERT_TRUE(file.ok()) << file.status();
  ASSERT_TRUE(file->Append("ab").ok());
  ASSERT_TRUE(file->Append(std::string("\0c", 2)).ok());
  EXPECT_FALSE(fs::exists(path));  // nothing visible before Commit
  ASSERT_TRUE(file->Commit().ok());
  EXPECT_EQ(Read(path), std::string("ab\0c", 4));
}

// ENOSPC or EIO on any step keeps the previous file and leaves no temporary.
TEST(AtomicFile, InjectedFailureKeepsThePreviousFile) {
  const std::string dir = TestDir("enospc");
  const std::string path = dir + "/metrics.json";
  ASSERT_TRUE(WriteFileAtomically(path, "old").ok());
  for (FaultOp op : {FaultOp::kOpen, FaultOp::kAppend, FaultOp::kSync, FaultOp::kClose, FaultOp::kRename}) {
    for (int error : {ENOSPC, EIO}) {
      FaultInjectionFileSystem faulty(DefaultFileSystem(), {op, "metrics.json", 1, error});
      absl::Status s = WriteFileAtomically(&faulty, path, "new");
      EXPECT_TRUE(faulty.fired());
      ASSERT_FALSE(s.ok()) << static_cast<int>(op);
      EXPECT_NE(s.message().find(dir + "/metrics.json"), std::string::npos) << s;
      EXPECT_NE(s.message().find(std::strerror(error)), std::string::npos) << s;
      if (error == ENOSPC) {
        EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
      }
      EXPECT_EQ(Read(path), "old");
      EXPECT_FALSE(fs::exists(path + ".tmp")) << static_cast<int>(op);
    }
  }
}

TEST(AtomicFile, OnlyTheNthMatchingWriteFails) {
  const std::string dir = TestDir("nth");
  FaultInjectionFileSystem faulty(DefaultFileSystem(), {FaultOp::kAppend, "x.txt", 2, ENOSPC});
  EXPECT_TRUE(WriteFileAtomically(&faulty, dir + "/y.txt", "y").ok());  // does not match
  EXPECT_TRUE(WriteFileAtomically(&faulty, dir + "/x.txt", "1").ok());
  EXPECT_FALSE(WriteFileAtomically(&faulty, dir + "/x.txt", "2").ok());
  EXPECT_TRUE(WriteFileAtomically(&faulty, dir + "/x.txt", "3").ok());  // fires once
  EXPECT_EQ(Read(dir + "/x.txt"), "3");
}

TEST(AtomicFile, DirectoryInTheWayIsAnErrorNamingIt) {
  const std::string dir = TestDir("isdir");
  fs::create_directories(dir + "/spec.resolved.pbtxt/inside");
  absl::Status s = WriteFileAtomically(dir + "/spec.resolved.pbtxt", "spec");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(dir + "/spec.resolved.pbtxt"), std::string::npos) << s;
  EXPECT_FALSE(fs::exists(dir + "/spec.resolved.pbtxt.tmp"));
}

TEST(AtomicFile, MissingDirectoryIsAnError) {
  absl::Status s = WriteFileAtomically(TestDir("missing") + "/no/such/dir/a.txt", "x");
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
}

TEST(AtomicFile, DirectoryOf) {
  EXPECT_EQ(DirectoryOf("a/b/c.txt"), "a/b");
  EXPECT_EQ(DirectoryOf("c.txt"), ".");
  EXPECT_EQ(DirectoryOf("/c.txt"), "/");
}

}  // namespace
}  // namespace tvlab
