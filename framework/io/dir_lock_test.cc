// DirLock: exclusive between processes, names the holder's pid, released
// when the holder ends.

#include "framework/io/dir_lock.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

std::string TestDir(const std::string& name) {
  std::string dir = std::string(std::getenv("TEST_TMPDIR")) + "/" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

TEST(DirLock, SecondProcessIsRefusedWithTheHoldersPid) {
  const std::string dir = TestDir("lock");
  auto lock = DirLock::Acquire(dir, ".run.lock");
  ASSERT_TRUE(lock.ok()) << lock.status();
  pid_t child = fork();
  if (child == 0) {  // another process: flock locks are per open file, not per process
    auto second = DirLock::Acquire(dir, ".run.lock");
    const std::string expected = absl::StrCat(dir, "/.run.lock is held by process ", getppid());
    bool ok = !second.ok() && second.status().message() == expected;
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

TEST(DirLock, ReleasedWhenTheHolderIsDestroyed) {
  const std::string dir = TestDir("release");
  {
    auto lock = DirLock::Acquire(dir, ".run.lock");
    ASSERT_TRUE(lock.ok());
    EXPECT_FALSE(DirLock::Acquire(dir, ".run.lock").ok());  // a second open file in this process
  }
  auto again = DirLock::Acquire(dir, ".run.lock");
  EXPECT_TRUE(again.ok()) << again.status();
}

TEST(DirLock, MissingDirectoryIsAnError) {
  auto lock = DirLock::Acquire(TestDir("gone") + "/absent", ".run.lock");
  ASSERT_FALSE(lock.ok());
  EXPECT_NE(lock.status().message().find("absent/.run.lock"), std::string::npos) << lock.status();
}

}  // namespace
}  // namespace tvlab
