#ifndef TVLAB_EXPERIMENTS_PREPARE_STORE_DOCUMENT_READER_H_
#define TVLAB_EXPERIMENTS_PREPARE_STORE_DOCUMENT_READER_H_

// The documents of one input file, in order, read through zlib (so .gz
// files are decompressed as they are read; a plain file is read as it is).
// What a document is:
//   JSON Lines            one record's string field (`jsonl_field`); blank
//                         lines are skipped; every other line must be a JSON
//                         object with that field as a string
//   text, kFile           the whole file
//   text, kParagraph      each run of lines between blank (whitespace-only)
//                         lines, joined with '\n'
// Errors name the file and line and say how to fix them.
// Thread-safety: none; one reader per thread.

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "experiments/prepare_store/input_files.h"

namespace tvlab {

enum class DocumentUnit { kFile, kParagraph };

class DocumentReader {
 public:
  static absl::StatusOr<std::unique_ptr<DocumentReader>> Open(const InputFile& file, DocumentUnit unit,
                                                              const std::string& jsonl_field);
  ~DocumentReader();

  // The next document into `*document`; false at the end of the file.
  absl::StatusOr<bool> Next(std::string* document);
  // Bytes of the file on disk consumed so far (compressed bytes for .gz),
  // for progress.
  int64_t disk_bytes_read() const;

 private:
  DocumentReader(const InputFile& file, DocumentUnit unit, std::string jsonl_field, void* gz);
  // The next line without its '\n'; false at the end of the file.
  absl::StatusOr<bool> NextLine(std::string* line);
  absl::Status Fill();  // more bytes into buffer_
  absl::StatusOr<bool> NextRecord(std::string* document);
  absl::StatusOr<bool> NextParagraph(std::string* document);
  absl::StatusOr<bool> WholeFile(std::string* document);

  InputFile file_;
  DocumentUnit unit_;
  std::string jsonl_field_;
  void* gz_;  // gzFile
  std::string buffer_;
  size_t position_ = 0;
  bool end_of_file_ = false;
  bool whole_file_done_ = false;
  int64_t line_number_ = 0;
};

}  // namespace tvlab

#endif  // TVLAB_EXPERIMENTS_PREPARE_STORE_DOCUMENT_READER_H_
