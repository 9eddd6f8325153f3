// reverse (sequence pair): the source is a random digit string, the target is
// the source reversed. Decoder-only rows are "BOS source SEP target EOS";
// encoder-decoder models read the source on the encoder side
// (framework/data/sequence_pairs.h).
//
// Example config: plugins/task/reverse/example.pbtxt

#include "framework/data/digit_pairs.h"
#include "framework/interfaces/task.h"
#include "plugins/task/reverse/reverse.pb.h"

namespace tvlab {
namespace {

class Reverse : public TransformDigitsTask {
 public:
  static absl::Status Validate(const ReverseOptions& o, const TaskArgs&) {
    return ValidateDigitStrings(o.min_length(), o.max_length(), o.num_digits(), "task.options");
  }
  static absl::StatusOr<std::unique_ptr<Task>> Create(const ReverseOptions& o, const TaskArgs& args) {
    return std::unique_ptr<Task>(new Reverse(args.family, o));
  }
  Reverse(ModelSpec::Family family, const ReverseOptions& o)
      : TransformDigitsTask(family, o.min_length(), o.max_length(), o.num_digits(), kReverse) {}
  const char* name() const override { return "reverse"; }
};

TVLAB_REGISTER_TASK("reverse", Reverse, ReverseOptions);

}  // namespace
}  // namespace tvlab
