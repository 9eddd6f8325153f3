// CRC-32C against its standard check value, and the TFRecord framing of the
// event files read back record by record (lengths, both masked CRCs, the
// Event protos). tests/tensorboard_interop_test.py reads a real run's file
// with the tensorboard package itself.

#include "framework/tensorboard/event_file_writer.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <sstream>

#include "framework/io/testing/fault_injection_file_system.h"
#include "framework/tensorboard/crc32c.h"
#include "framework/tensorboard/event.pb.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

TEST(Crc32c, StandardCheckValue) {
  EXPECT_EQ(Crc32c(std::string("123456789")), 0xE3069283u);
  EXPECT_EQ(Crc32c(std::string()), 0u);
  // RFC 3720 (iSCSI) B.4: 32 bytes of zeros.
  EXPECT_EQ(Crc32c(std::string(32, '\0')), 0x8A9136AAu);
}

TEST(Crc32c, MaskIsTfRecordsRotationPlusConstant) {
  EXPECT_EQ(MaskCrc32c(0), 0xa282ead8u);
  EXPECT_EQ(MaskCrc32c(0x00008000u), 0xa282ead9u);  // bit 15 rotates to bit 0
  EXPECT_EQ(MaskCrc32c(1), 0xa282ead8u + (1u << 17));
}

uint64_t ReadLittleEndian(const std::string& s, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= uint64_t{static_cast<unsigned char>(s[at + i])} << (8 * i);
  return v;
}

// Splits a file's bytes into records, checking every length and CRC.
std::vector<std::string> Records(const std::string& bytes) {
  std::vector<std::string> records;
  size_t at = 0;
  while (at < bytes.size()) {
    EXPECT_LE(at + 12, bytes.size());
    const uint64_t length = ReadLittleEndian(bytes, at, 8);
    EXPECT_EQ(ReadLittleEndian(bytes, at + 8, 4), MaskCrc32c(Crc32c(bytes.data() + at, 8)));
    const std::string data = bytes.substr(at + 12, length);
    EXPECT_EQ(ReadLittleEndian(bytes, at + 12 + length, 4), MaskCrc32c(Crc32c(data)));
    records.push_back(data);
    at += 12 + length + 4;
  }
  EXPECT_EQ(at, bytes.size());
  return records;
}

TEST(FrameRecord, LayoutIsLengthCrcDataCrc) {
  const std::string record = FrameRecord("abc");
  ASSERT_EQ(record.size(), 8u + 4 + 3 + 4);
  EXPECT_EQ(ReadLittleEndian(record, 0, 8), 3u);
  EXPECT_EQ(record.substr(12, 3), "abc");
  EXPECT_EQ(Records(record), std::vector<std::string>{"abc"});
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(EventFileWriter, WritesVersionThenScalarEvents) {
  const std::string dir = testing::TempDir() + "/events_test";
  mkdir(dir.c_str(), 0755);
  auto writer = EventFileWriter::Open(dir);
  ASSERT_TRUE(writer.ok()) << writer.status();
  const std::string path = (*writer)->path();
  EXPECT_NE(path.find("/events.out.tfevents."), std::string::npos);
  ASSERT_TRUE((*writer)->WriteScalars(10, {{"train/loss", 2.5}, {"train/lr", 1e-3}}).ok());
  ASSERT_TRUE((*writer)->WriteScalars(20, {{"train/loss", 1.25}}).ok());
  // A second writer in the same directory gets its own file.
  auto other = EventFileWriter::Open(dir);
  ASSERT_TRUE(other.ok());
  EXPECT_NE((*other)->path(), path);

  const std::vector<std::string> records = Records(ReadAll(path));
  ASSERT_EQ(records.size(), 3u);
  tensorboard::Event version, first, second;
  ASSERT_TRUE(version.ParseFromString(records[0]));
  EXPECT_EQ(version.file_version(), "brain.Event:2");
  ASSERT_TRUE(first.ParseFromString(records[1]));
  EXPECT_EQ(first.step(), 10);
  EXPECT_GT(first.wall_time(), 1.5e9);
  ASSERT_EQ(first.summary().value_size(), 2);
  EXPECT_EQ(first.summary().value(0).tag(), "train/loss");
  EXPECT_EQ(first.summary().value(0).simple_value(), 2.5f);
  EXPECT_EQ(first.summary().value(1).simple_value(), 1e-3f);
  ASSERT_TRUE(second.ParseFromString(records[2]));
  EXPECT_EQ(second.step(), 20);
  EXPECT_EQ(second.summary().value(0).simple_value(), 1.25f);
}

TEST(EventFileWriter, MissingDirectoryIsAnErrorNamingIt) {
  auto writer = EventFileWriter::Open("/nonexistent/tvlab_run");
  ASSERT_FALSE(writer.ok());
  EXPECT_NE(writer.status().message().find("/nonexistent/tvlab_run"), std::string::npos);
}

// The writer goes through the FileSystem seam: a failing write is an error
// naming the event file, and the records before it stay readable.
TEST(EventFileWriter, FailedWriteThroughTheFileSystemIsAnErrorNamingTheFile) {
  const std::string dir = testing::TempDir() + "/events_fault_test";
  mkdir(dir.c_str(), 0755);
  // Append 1 is the file_version record, 2 the first scalars, 3 the second.
  FaultInjectionFileSystem fs(DefaultFileSystem(), {FaultOp::kAppend, "tfevents", 3, ENOSPC});
  auto writer = EventFileWriter::Open(dir, &fs);
  ASSERT_TRUE(writer.ok()) << writer.status();
  ASSERT_TRUE((*writer)->WriteScalars(1, {{"train/loss", 3.0}}).ok());
  const absl::Status failed = (*writer)->WriteScalars(2, {{"train/loss", 2.0}});
  EXPECT_TRUE(fs.fired());
  EXPECT_EQ(failed.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(failed.message().find("TensorBoard event file: cannot write (injected fault) '" +
                                  (*writer)->path() + "': No space left on device"),
            std::string::npos)
      << failed;
  EXPECT_EQ(Records(ReadAll((*writer)->path())).size(), 2u);
}

TEST(EventFileWriter, FailedOpenThroughTheFileSystemIsAnErrorNamingTheFile) {
  const std::string dir = testing::TempDir() + "/events_open_fault_test";
  mkdir(dir.c_str(), 0755);
  FaultInjectionFileSystem fs(DefaultFileSystem(), {FaultOp::kOpen, "tfevents", 1, EIO});
  auto writer = EventFileWriter::Open(dir, &fs);
  ASSERT_FALSE(writer.ok());
  EXPECT_NE(writer.status().message().find("TensorBoard event file: cannot write (injected fault) '" +
                                           dir + "/events.out.tfevents."),
            std::string::npos)
      << writer.status();
  EXPECT_NE(writer.status().message().find("Input/output error"), std::string::npos);
}

}  // namespace
}  // namespace tvlab
