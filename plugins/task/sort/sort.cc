// sort (sequence pair): the source is a random digit string, the target is
// the source's digits sorted ascending. Decoder-only rows are "BOS source SEP target EOS";
// encoder-decoder models read the source on the encoder side
// (framework/data/sequence_pairs.h).
//
// Example config: plugins/task/sort/example.pbtxt

#include "framework/data/digit_pairs.h"
#include "framework/interfaces/task.h"
#include "plugins/task/sort/sort.pb.h"

namespace tvlab {
namespace {

class Sort : public TransformDigitsTask {
 public:
  static absl::Status Validate(const SortOptions& o, const TaskArgs&) {
    return ValidateDigitStrings(o.min_length(), o.max_length(), o.num_digits(), "task.options");
  }
  static absl::StatusOr<std::unique_ptr<Task>> Create(const SortOptions& o, const TaskArgs& args) {
    return std::unique_ptr<Task>(new Sort(args.family, o));
  }
  Sort(ModelSpec::Family family, const SortOptions& o)
      : TransformDigitsTask(family, o.min_length(), o.max_length(), o.num_digits(), kSort) {}
  const char* name() const override { return "sort"; }
};

TVLAB_REGISTER_TASK("sort", Sort, SortOptions);

}  // namespace
}  // namespace tvlab
