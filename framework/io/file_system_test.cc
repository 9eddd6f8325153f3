// CreateDirs and the error texts of the POSIX filesystem: no exceptions, the
// path and the part in the way named.

#include "framework/io/file_system.h"

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>

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

TEST(CreateDirs, MakesParentsAndAcceptsAnExistingDirectory) {
  const std::string dir = TestDir("mk") + "/a/b/c";
  ASSERT_TRUE(DefaultFileSystem()->CreateDirs(dir).ok());
  EXPECT_TRUE(fs::is_directory(dir));
  EXPECT_TRUE(DefaultFileSystem()->CreateDirs(dir).ok());
  EXPECT_TRUE(DefaultFileSystem()->CreateDirs(dir + "/").ok());
}

TEST(CreateDirs, RegularFileInTheWayIsNamed) {
  const std::string dir = TestDir("file");
  std::ofstream(dir + "/plain") << "x";
  for (const std::string& target : {dir + "/plain", dir + "/plain/below", dir + "/plain/below/more"}) {
    absl::Status s = DefaultFileSystem()->CreateDirs(target);
    ASSERT_FALSE(s.ok()) << target;
    EXPECT_NE(s.message().find("'" + dir + "/plain' exists and is not a directory"), std::string::npos) << s;
  }
}

TEST(CreateDirs, UncreatableLocationIsAnError) {
  absl::Status s = DefaultFileSystem()->CreateDirs("/proc/tvlab_cannot_exist/run");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("/proc/tvlab_cannot_exist"), std::string::npos) << s;
}

TEST(ErrnoStatus, SaysWhatToDo) {
  absl::Status s = ErrnoStatus(ENOSPC, "cannot write", "/x/metrics.json");
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(s.message().find("cannot write '/x/metrics.json': No space left on device; free some disk space"),
            std::string::npos) << s;
}

TEST(WritableFile, AppendIsVisibleAndCloseIsChecked) {
  const std::string path = TestDir("append") + "/log.csv";
  auto file = DefaultFileSystem()->NewAppendableFile(path);
  ASSERT_TRUE(file.ok()) << file.status();
  ASSERT_TRUE((*file)->Append("1\n").ok());
  ASSERT_TRUE((*file)->Append("2\n").ok());
  EXPECT_EQ(fs::file_size(path), 4u);  // no user-space buffer
  EXPECT_TRUE((*file)->Close().ok());
}

}  // namespace
}  // namespace tvlab
