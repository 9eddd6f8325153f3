// Synthetic sequence-pair tasks on digit strings, for seeing learning in a
// minute: copy, reverse, sort (variable lengths) and addition ("a+b" -> sum).
// Tokens: the specials of task.h, then digits 0..num_digits-1, then '+'.

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "framework/data/sequence_pairs.h"

namespace tvlab {
namespace {

constexpr int32_t kFirstDigit = 4;

class DigitTask : public SequencePairTask {
 public:
  DigitTask(ModelSpec::Family family, int64_t num_digits, int64_t max_source, int64_t max_target)
      : SequencePairTask(family),
        num_digits_(num_digits),
        max_source_(max_source),
        max_target_(max_target) {}

  int64_t vocab_size() const override { return kFirstDigit + num_digits_ + 1; }  // + '+'

  std::vector<int32_t> Tokenize(const std::string& text) const override {
    std::vector<int32_t> out;
    for (char c : text) {
      if (c == '+') out.push_back(plus());
      else if (c >= '0' && c - '0' < num_digits_) out.push_back(kFirstDigit + (c - '0'));
    }
    return out;
  }
  std::string Detokenize(const std::vector<int32_t>& tokens) const override {
    std::string out;
    for (int32_t t : tokens) {
      if (t == plus()) out += '+';
      else if (t >= kFirstDigit && t < kFirstDigit + num_digits_) out += static_cast<char>('0' + t - kFirstDigit);
      else if (t == kEos) out += "<eos>";
    }
    return out;
  }

 protected:
  int32_t plus() const { return static_cast<int32_t>(kFirstDigit + num_digits_); }
  int64_t max_source_length() const override { return max_source_; }
  int64_t max_target_length() const override { return max_target_; }
  Example TrainExample(uint64_t seed, int64_t index) const override {
    return Make(RngStream(seed, RngPurpose::kTrainData, index));
  }
  Example HeldOutExample(uint64_t eval_seed, int64_t index) const override {
    return Make(RngStream(eval_seed, RngPurpose::kEvalData, index));
  }
  // One example from its own stream.
  virtual Example Make(const RngStream& rng) const = 0;

  int64_t num_digits_, max_source_, max_target_;
};

// copy / reverse / sort: a random string of length in [min, max].
class TransformDigits : public DigitTask {
 public:
  enum Op { kCopy, kReverse, kSort };
  TransformDigits(ModelSpec::Family family, const DigitSequenceTask& spec, Op op)
      : DigitTask(family, spec.num_digits(), spec.max_length(), spec.max_length()),
        min_(spec.min_length()),
        op_(op) {}

 private:
  Example Make(const RngStream& rng) const override {
    const int64_t length = min_ + rng.UniformInt(0, static_cast<uint32_t>(max_source_ - min_ + 1));
    Example e;
    for (int64_t i = 0; i < length; ++i)
      e.source.push_back(kFirstDigit + static_cast<int32_t>(rng.UniformInt(1 + i, num_digits_)));
    e.target = e.source;
    if (op_ == kReverse) std::reverse(e.target.begin(), e.target.end());
    if (op_ == kSort) std::sort(e.target.begin(), e.target.end());
    return e;
  }
  int64_t min_;
  Op op_;
};

// a+b -> a + b in decimal; operands have 1..max_digits digits.
class Addition : public DigitTask {
 public:
  Addition(ModelSpec::Family family, const AdditionTask& spec)
      : DigitTask(family, 10, 2 * spec.max_digits() + 1, spec.max_digits() + 1),
        max_digits_(spec.max_digits()) {}

 private:
  int64_t Operand(const RngStream& rng, uint64_t at) const {
    const int64_t digits = 1 + rng.UniformInt(at, static_cast<uint32_t>(max_digits_));
    int64_t limit = 1;
    for (int64_t i = 0; i < digits; ++i) limit *= 10;
    return rng.UniformInt(at + 1, static_cast<uint32_t>(limit));
  }
  std::vector<int32_t> Digits(int64_t v) const { return Tokenize(std::to_string(v)); }
  Example Make(const RngStream& rng) const override {
    const int64_t a = Operand(rng, 0), b = Operand(rng, 2);
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

absl::Status ValidateDigits(const Experiment& spec, const DigitSequenceTask& t, const std::string& name) {
  const std::string path = "task." + name;
  if (t.min_length() < 1)
    return absl::InvalidArgumentError(absl::StrCat(path, ".min_length must be >= 1 (got ", t.min_length(), ")"));
  if (t.max_length() < t.min_length())
    return absl::InvalidArgumentError(absl::StrCat(path, ".max_length (", t.max_length(),
                                                   ") must be >= min_length (", t.min_length(), ")"));
  if (t.num_digits() < 2 || t.num_digits() > 10)
    return absl::InvalidArgumentError(absl::StrCat(path, ".num_digits must be in [2, 10] (got ", t.num_digits(), ")"));
  return absl::OkStatus();
}

TVLAB_REGISTER_TASK(
    "copy", TaskKind::kSequencePair,
    [](const Experiment& s) { return ValidateDigits(s, s.task().copy(), "copy"); },
    [](const Experiment& s) -> std::unique_ptr<Task> {
      return std::make_unique<TransformDigits>(s.model().family(), s.task().copy(), TransformDigits::kCopy);
    });
TVLAB_REGISTER_TASK(
    "reverse", TaskKind::kSequencePair,
    [](const Experiment& s) { return ValidateDigits(s, s.task().reverse(), "reverse"); },
    [](const Experiment& s) -> std::unique_ptr<Task> {
      return std::make_unique<TransformDigits>(s.model().family(), s.task().reverse(), TransformDigits::kReverse);
    });
TVLAB_REGISTER_TASK(
    "sort", TaskKind::kSequencePair,
    [](const Experiment& s) { return ValidateDigits(s, s.task().sort(), "sort"); },
    [](const Experiment& s) -> std::unique_ptr<Task> {
      return std::make_unique<TransformDigits>(s.model().family(), s.task().sort(), TransformDigits::kSort);
    });
TVLAB_REGISTER_TASK(
    "addition", TaskKind::kSequencePair,
    [](const Experiment& s) -> absl::Status {
      int d = s.task().addition().max_digits();
      if (d < 1 || d > 9)
        return absl::InvalidArgumentError(absl::StrCat("task.addition.max_digits must be in [1, 9] (got ", d, ")"));
      return absl::OkStatus();
    },
    [](const Experiment& s) -> std::unique_ptr<Task> {
      return std::make_unique<Addition>(s.model().family(), s.task().addition());
    });

}  // namespace
}  // namespace tvlab
