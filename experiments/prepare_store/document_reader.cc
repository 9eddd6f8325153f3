#include "experiments/prepare_store/document_reader.h"

#include <zlib.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"

namespace tvlab {
namespace {

constexpr size_t kChunkBytes = 1 << 20;

bool IsBlank(const std::string& line) {
  for (char c : line)
    if (c != ' ' && c != '\t' && c != '\r' && c != '\f' && c != '\v') return false;
  return true;
}

}  // namespace

absl::StatusOr<std::unique_ptr<DocumentReader>> DocumentReader::Open(const InputFile& file,
                                                                     DocumentUnit unit,
                                                                     const std::string& jsonl_field) {
  gzFile gz = gzopen(file.path.c_str(), "rb");
  if (gz == nullptr)
    return absl::NotFoundError(absl::StrCat("input '", file.path, "': cannot open: ", std::strerror(errno)));
  gzbuffer(gz, 256 * 1024);
  auto reader = std::unique_ptr<DocumentReader>(new DocumentReader(file, unit, jsonl_field, gz));
  if (absl::Status s = reader->Fill(); !s.ok()) return s;  // gzdirect is known after a first read
  if (file.gzip && file.bytes > 0 && gzdirect(gz))
    return absl::InvalidArgumentError(absl::StrCat(
        "input '", file.path, "' ends in .gz but is not gzip-compressed; rename it or compress it"));
  return reader;
}

DocumentReader::DocumentReader(const InputFile& file, DocumentUnit unit, std::string jsonl_field, void* gz)
    : file_(file), unit_(unit), jsonl_field_(std::move(jsonl_field)), gz_(gz) {}

DocumentReader::~DocumentReader() { gzclose(static_cast<gzFile>(gz_)); }

int64_t DocumentReader::disk_bytes_read() const { return gzoffset(static_cast<gzFile>(gz_)); }

absl::Status DocumentReader::Fill() {
  if (end_of_file_) return absl::OkStatus();
  buffer_.erase(0, position_);
  position_ = 0;
  const size_t old = buffer_.size();
  buffer_.resize(old + kChunkBytes);
  const int n = gzread(static_cast<gzFile>(gz_), &buffer_[old], kChunkBytes);
  if (n < 0) {
    int code = 0;
    const char* message = gzerror(static_cast<gzFile>(gz_), &code);
    return absl::DataLossError(absl::StrCat("input '", file_.path, "': cannot read: ", message));
  }
  buffer_.resize(old + n);
  if (n == 0) end_of_file_ = true;
  return absl::OkStatus();
}

absl::StatusOr<bool> DocumentReader::NextLine(std::string* line) {
  for (;;) {
    const size_t newline = buffer_.find('\n', position_);
    if (newline != std::string::npos) {
      line->assign(buffer_, position_, newline - position_);
      position_ = newline + 1;
      ++line_number_;
      return true;
    }
    if (end_of_file_) {
      if (position_ == buffer_.size()) return false;
      line->assign(buffer_, position_, std::string::npos);  // a last line without '\n'
      position_ = buffer_.size();
      ++line_number_;
      return true;
    }
    if (absl::Status s = Fill(); !s.ok()) return s;
  }
}

absl::StatusOr<bool> DocumentReader::Next(std::string* document) {
  if (file_.jsonl) return NextRecord(document);
  if (unit_ == DocumentUnit::kParagraph) return NextParagraph(document);
  return WholeFile(document);
}

absl::StatusOr<bool> DocumentReader::WholeFile(std::string* document) {
  if (whole_file_done_) return false;
  while (!end_of_file_)
    if (absl::Status s = Fill(); !s.ok()) return s;
  document->assign(buffer_, position_, std::string::npos);
  position_ = buffer_.size();
  whole_file_done_ = true;
  return true;
}

absl::StatusOr<bool> DocumentReader::NextParagraph(std::string* document) {
  document->clear();
  std::string line;
  for (;;) {
    absl::StatusOr<bool> more = NextLine(&line);
    if (!more.ok()) return more.status();
    if (!*more) return !document->empty();
    if (IsBlank(line)) {
      if (!document->empty()) return true;
      continue;
    }
    if (!document->empty()) document->push_back('\n');
    document->append(line);
  }
}

absl::StatusOr<bool> DocumentReader::NextRecord(std::string* document) {
  std::string line;
  for (;;) {
    absl::StatusOr<bool> more = NextLine(&line);
    if (!more.ok()) return more.status();
    if (!*more) return false;
    if (IsBlank(line)) continue;
    const std::string where = absl::StrCat("input '", file_.path, "' line ", line_number_);
    google::protobuf::Struct record;
    const auto parsed = google::protobuf::util::JsonStringToMessage(line, &record);
    if (!parsed.ok())
      return absl::InvalidArgumentError(absl::StrCat(
          where, ": not a JSON object (", std::string(parsed.message()), "); JSON Lines hold one object per line"));
    const auto field = record.fields().find(jsonl_field_);
    if (field == record.fields().end() ||
        field->second.kind_case() != google::protobuf::Value::kStringValue)
      return absl::InvalidArgumentError(absl::StrCat(
          where, ": the record has no string field '", jsonl_field_,
          "'; set --jsonl_field to the field that holds the text"));
    *document = field->second.string_value();
    return true;
  }
}

}  // namespace tvlab
