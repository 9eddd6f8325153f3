// addition (sequence pair): "a+b" -> a + b in decimal; operands have
// 1..max_digits digits. A source "a+b" is held out or not by its hash
// (framework/data/heldout_split.h).
//
// Example config: plugins/task/addition/example.pbtxt

#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "framework/data/digit_pairs.h"
#include "framework/data/heldout_split.h"
#include "framework/interfaces/task.h"
#include "plugins/task/addition/addition.pb.h"

namespace tvlab {
namespace {

class Addition : public DigitPairTask {
 public:
  static absl::Status Validate(const AdditionOptions& o, const TaskArgs&) {
    if (o.max_digits() < 1 || o.max_digits() > 9)
      return absl::InvalidArgumentError(
          absl::StrCat("task.options.max_digits must be in [1, 9] (got ", o.max_digits(), ")"));
    // Operands take 10^max_digits values each.
    return CheckSplittable(std::pow(10.0, 2.0 * o.max_digits()), "pairs of operands", "task.options");
  }
  static absl::StatusOr<std::unique_ptr<Task>> Create(const AdditionOptions& o, const TaskArgs& args) {
    return std::unique_ptr<Task>(new Addition(args.family, o));
  }
  Addition(ModelSpec::Family family, const AdditionOptions& o)
      : DigitPairTask(family, 10, 2 * o.max_digits() + 1, o.max_digits() + 1),
        max_digits_(o.max_digits()) {}

 private:
  int64_t Operand(const RngStream& rng, uint64_t at) const {
    const int64_t digits = 1 + rng.UniformInt(at, static_cast<uint32_t>(max_digits_));
    int64_t limit = 1;
    for (int64_t i = 0; i < digits; ++i) limit *= 10;
    return rng.UniformInt(at + 1, static_cast<uint32_t>(limit));
  }
  std::vector<int32_t> Digits(int64_t v) const { return Tokenize(std::to_string(v)); }
  const char* name() const override { return "addition"; }
  Example Make(const RngStream& rng, uint64_t w) const override {
    const int64_t a = Operand(rng, w), b = Operand(rng, w + 2);
    Example e;
    e.source = Digits(a);
    e.source.push_back(plus());
    std::vector<int32_t> bd = Digits(b);
    e.source.insert(e.source.end(), bd.begin(), bd.end());
    e.target = Digits(a + b);
    return e;
  }
  int64_t max_digits_;
};

TVLAB_REGISTER_TASK("addition", Addition, AdditionOptions);

}  // namespace
}  // namespace tvlab
