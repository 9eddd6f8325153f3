// bazel run //experiments:bleu -- --hypotheses FILE --references FILE [--tokens]
//
// Corpus BLEU of a file of hypotheses against a file of references (one
// sentence per line, line i against line i), computed by tvlab's CorpusBleu
// (framework/data/bleu.h): sacrebleu's default BLEU (13a tokenization, 'exp'
// smoothing, mixed case). Prints the score on sacrebleu's 0-100 scale; with
// --tokens, prints each hypothesis after 13a tokenization instead.
// docs/interop.md compares both with sacrebleu. Exit codes: 0 ok, 2 bad input.

#include <cstdlib>
#include <fstream>
#include <iostream>

#include "absl/flags/flag.h"
#include "absl/strings/str_format.h"
#include "experiments/cli/command_line.h"
#include "framework/data/bleu.h"

ABSL_FLAG(std::string, hypotheses, "", "FILE: one hypothesis per line (required)");
ABSL_FLAG(std::string, references, "", "FILE: one reference per line, as many lines (required)");
ABSL_FLAG(bool, tokens, false, "print the 13a tokenization of each hypothesis instead of the score");

namespace {

constexpr char kUsage[] =
    "usage: bazel run //experiments:bleu -- --hypotheses FILE --references FILE [--tokens]\n";

bool ReadLines(const std::string& flag, const std::string& path, std::vector<std::string>* lines) {
  std::ifstream in(path);
  if (!in) {
    std::cerr << "error: --" << flag << " " << path << " cannot be read\n";
    return false;
  }
  for (std::string line; std::getline(in, line);) lines->push_back(line);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  auto line = tvlab::ParseFlags(argc, argv, kUsage);
  if (!line.ok()) {
    tvlab::PrintUsageError(std::cerr, line.status(), kUsage);
    return 2;
  }
  if (line->help) {
    tvlab::PrintHelp(std::cout, kUsage);
    return 0;
  }
  if (!line->positional.empty() || !line->Has("hypotheses") || !line->Has("references")) {
    tvlab::PrintUsageError(
        std::cerr, absl::InvalidArgumentError("--hypotheses and --references are required, nothing else"),
        kUsage);
    return 2;
  }
  std::vector<std::string> hypotheses, references;
  if (!ReadLines("hypotheses", tvlab::UserPath(absl::GetFlag(FLAGS_hypotheses)), &hypotheses) ||
      !ReadLines("references", tvlab::UserPath(absl::GetFlag(FLAGS_references)), &references)) {
    return 2;
  }
  if (hypotheses.size() != references.size()) {
    std::cerr << "error: " << hypotheses.size() << " hypotheses but " << references.size()
              << " references; the files must have one line per sentence each\n";
    return 2;
  }
  if (absl::GetFlag(FLAGS_tokens)) {
    for (const std::string& h : hypotheses) std::cout << tvlab::Tokenize13a(h) << "\n";
    return 0;
  }
  std::cout << absl::StrFormat("%.6f\n", 100.0 * tvlab::CorpusBleu(hypotheses, references));
  return 0;
}
