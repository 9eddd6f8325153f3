// copy (sequence pair): the source is a random digit string, the target is
// the source unchanged. Decoder-only rows are "BOS source SEP target EOS";
// encoder-decoder models read the source on the encoder side
// (framework/data/sequence_pairs.h).
//
// Example config: plugins/task/copy/example.pbtxt

#include "framework/data/digit_pairs.h"
#include "framework/interfaces/task.h"
#include "plugins/task/copy/copy.pb.h"

namespace tvlab {
namespace {

class Copy : public TransformDigitsTask {
 public:
  static absl::Status Validate(const CopyOptions& o, const TaskArgs&) {
    return ValidateDigitStrings(o.min_length(), o.max_length(), o.num_digits(), "task.options");
  }
  static absl::StatusOr<std::unique_ptr<Task>> Create(const CopyOptions& o, const TaskArgs& args) {
    return std::unique_ptr<Task>(new Copy(args.family, o));
  }
  Copy(ModelSpec::Family family, const CopyOptions& o)
      : TransformDigitsTask(family, o.min_length(), o.max_length(), o.num_digits(), kCopy) {}
  const char* name() const override { return "copy"; }
};

TVLAB_REGISTER_TASK("copy", Copy, CopyOptions);

}  // namespace
}  // namespace tvlab
