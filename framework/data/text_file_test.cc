#include "framework/data/text_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

using ::testing::HasSubstr;

std::string TempDir() { return std::getenv("TEST_TMPDIR"); }

std::string Message(const absl::StatusOr<std::string>& read) { return std::string(read.status().message()); }

TEST(ReadTextFile, ReadsARegularFile) {
  const std::string path = TempDir() + "/small.txt";
  std::ofstream(path, std::ios::binary) << "two\nlines";
  auto read = ReadTextFile(path, "task.options.path");
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*read, "two\nlines");
}

// /dev/zero never ends: it used to be read until memory ran out (bad_alloc).
TEST(ReadTextFile, RefusesADeviceNamingTheFieldAndTheFile) {
  auto read = ReadTextFile("/dev/zero", "task.options.path");
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(read),
              HasSubstr("task.options.path '/dev/zero' is not a regular text file: it is a character device"));
}

TEST(ReadTextFile, RefusesADirectory) {
  auto read = ReadTextFile(TempDir(), "task.options.path");
  ASSERT_FALSE(read.ok());
  EXPECT_THAT(Message(read), HasSubstr("'" + TempDir() + "' is not a regular text file: it is a directory"));
}

// A FIFO is refused from its stat, never opened (opening it would block
// until a writer came).
TEST(ReadTextFile, RefusesAFifoWithoutOpeningIt) {
  const std::string path = TempDir() + "/fifo";
  ASSERT_EQ(mkfifo(path.c_str(), 0600), 0);
  auto read = ReadTextFile(path, "task.options.path");
  ASSERT_FALSE(read.ok());
  EXPECT_THAT(Message(read), HasSubstr("it is a FIFO"));
}

// One byte over the limit (a sparse file: no 64 MiB written).
TEST(ReadTextFile, RefusesAFileOverTheLimit) {
  const std::string path = TempDir() + "/huge.txt";
  { std::ofstream(path) << "x"; }
  ASSERT_EQ(truncate(path.c_str(), static_cast<off_t>(kMaxTextFileBytes + 1)), 0);
  auto read = ReadTextFile(path, "task.options.path");
  ASSERT_FALSE(read.ok());
  EXPECT_THAT(Message(read), HasSubstr("task.options.path '" + path + "' has 67108865 bytes, more than the 64 MiB"));
  ASSERT_EQ(truncate(path.c_str(), static_cast<off_t>(kMaxTextFileBytes)), 0);
  EXPECT_TRUE(CheckTextFile(path, "task.options.path").ok());  // the limit itself is allowed
}

TEST(ReadTextFile, MissingFileIsNotFound) {
  auto read = ReadTextFile("/nonexistent/x.txt", "task.options.path");
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(Message(read), HasSubstr("task.options.path: cannot read '/nonexistent/x.txt': No such file"));
}

}  // namespace
}  // namespace tvlab
