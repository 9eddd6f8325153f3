#include "framework/data/sentencepiece_tokenizer.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "framework/data/sentencepiece_shim.h"

#if defined(__SANITIZE_ADDRESS__)
#define TVLAB_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TVLAB_UNDER_ASAN 1
#endif
#endif

namespace tvlab {
namespace {

constexpr char kShimName[] = "libtvlab_sentencepiece.so";
constexpr char kShimRunfile[] = "tvlab/framework/data/libtvlab_sentencepiece.so";

struct Shim {
  TvlabSpmTrainFn* train = nullptr;
  TvlabSpmLoadFn* load = nullptr;
  TvlabSpmFreeFn* free = nullptr;
  TvlabSpmPieceSizeFn* piece_size = nullptr;
  TvlabSpmEncodeFn* encode = nullptr;
  TvlabSpmDecodeFn* decode = nullptr;
};

[[maybe_unused]] bool Readable(const std::string& path) { return !path.empty() && access(path.c_str(), R_OK) == 0; }

// Where the shim may be: $TVLAB_SENTENCEPIECE_SHIM, then the runfiles of the
// test or binary running (a test's RUNFILES_DIR is inherited by the binaries
// it starts), then the runfiles beside this executable.
[[maybe_unused]] std::vector<std::string> Candidates() {  // unused under ASan
  std::vector<std::string> out;
  if (const char* p = std::getenv("TVLAB_SENTENCEPIECE_SHIM")) out.push_back(p);
  for (const char* var : {"RUNFILES_DIR", "TEST_SRCDIR"})
    if (const char* dir = std::getenv(var)) out.push_back(absl::StrCat(dir, "/", kShimRunfile));
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n > 0) {
    const std::string self(exe, n);
    out.push_back(absl::StrCat(self, ".runfiles/", kShimRunfile));
    out.push_back(absl::StrCat(self.substr(0, self.find_last_of('/') + 1), kShimName));
  }
  return out;
}

absl::StatusOr<Shim> OpenShim() {
#ifdef TVLAB_UNDER_ASAN
  return absl::UnimplementedError(
      "SentencePiece is not available in AddressSanitizer builds: its library carries its own "
      "protobuf and must be opened with RTLD_DEEPBIND, which ASan refuses; use a normal build");
#else
  std::string tried;
  void* handle = nullptr;
  for (const std::string& path : Candidates()) {
    if (!Readable(path)) continue;
    handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
    if (handle != nullptr) break;
    absl::StrAppend(&tried, " ", path, ": ", dlerror(), ";");
  }
  if (handle == nullptr)
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot load ", kShimName, " (SentencePiece;", tried.empty() ? " not found" : tried,
        "): build it with bazel (//framework/data:", kShimName,
        ", a data dependency of the tokenizer) or point TVLAB_SENTENCEPIECE_SHIM at it; "
        "libsentencepiece-dev must be installed (tools/setup.sh)"));
  Shim shim;
  auto get = [&](const char* name, auto** fn) -> absl::Status {
    *fn = reinterpret_cast<std::remove_pointer_t<decltype(fn)>>(dlsym(handle, name));
    if (*fn == nullptr) return absl::InternalError(absl::StrCat(kShimName, " lacks ", name));
    return absl::OkStatus();
  };
  for (absl::Status s : {get("TvlabSpmTrain", &shim.train), get("TvlabSpmLoad", &shim.load),
                         get("TvlabSpmFree", &shim.free), get("TvlabSpmPieceSize", &shim.piece_size),
                         get("TvlabSpmEncode", &shim.encode), get("TvlabSpmDecode", &shim.decode)})
    if (!s.ok()) return s;
  return shim;
#endif
}

// Opened once per process (never closed).
absl::StatusOr<Shim> TheShim() {
  static std::once_flag once;
  static absl::StatusOr<Shim>* shim = nullptr;
  std::call_once(once, [] { shim = new absl::StatusOr<Shim>(OpenShim()); });
  return *shim;
}

class SentencePieceTokenizer : public Tokenizer {
 public:
  SentencePieceTokenizer(Shim shim, void* processor, std::string serialized)
      : shim_(shim), processor_(processor), serialized_(std::move(serialized)) {}
  ~SentencePieceTokenizer() override { shim_.free(processor_); }

  int64_t vocab_size() const override { return shim_.piece_size(processor_); }
  std::vector<int32_t> Encode(const std::string& text, std::vector<int64_t>* ends) const override {
    std::vector<int> ids, piece_ends;
    shim_.encode(processor_, &text, &ids, &piece_ends);
    if (ends != nullptr) ends->assign(piece_ends.begin(), piece_ends.end());
    return std::vector<int32_t>(ids.begin(), ids.end());
  }
  std::string Decode(const std::vector<int32_t>& ids) const override {
    const std::vector<int> in(ids.begin(), ids.end());
    std::string text;
    shim_.decode(processor_, &in, &text);
    return text;
  }
  std::string SerializedModel() const override { return serialized_; }

 private:
  Shim shim_;
  void* processor_;
  std::string serialized_;
};

}  // namespace

bool SentencePieceAvailable() {
#ifdef TVLAB_UNDER_ASAN
  return false;
#else
  return true;
#endif
}

absl::StatusOr<std::unique_ptr<Tokenizer>> LoadSentencePiece(const std::string& serialized,
                                                             const std::string& what) {
  absl::StatusOr<Shim> shim = TheShim();
  if (!shim.ok()) return absl::Status(shim.status().code(), absl::StrCat(what, ": ", shim.status().message()));
  std::string error;
  void* processor = serialized.empty() ? nullptr : shim->load(&serialized, &error);
  if (processor == nullptr)
    return absl::InvalidArgumentError(absl::StrCat(
        what, " is not a SentencePiece model (", serialized.empty() ? "the file is empty" : error,
        "); give a .model file written by spm_train or by a tvlab run (its tokenizer.model)"));
  return std::unique_ptr<Tokenizer>(new SentencePieceTokenizer(*shim, processor, serialized));
}

absl::StatusOr<std::unique_ptr<Tokenizer>> TrainSentencePiece(const std::vector<std::string>& lines,
                                                              int vocab_size, const std::string& what) {
  absl::StatusOr<Shim> shim = TheShim();
  if (!shim.ok()) return absl::Status(shim.status().code(), absl::StrCat(what, ": ", shim.status().message()));
  std::string model, error;
  if (!shim->train(&lines, vocab_size, &model, &error))
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": SentencePiece cannot train a model of ", vocab_size,
        " pieces from the training split (", error, "); set vocab_size as that says"));
  return LoadSentencePiece(model, what);
}

}  // namespace tvlab
