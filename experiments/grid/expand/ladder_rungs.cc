#include "experiments/grid/expand/ladder_rungs.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "absl/strings/str_cat.h"

namespace tvlab {
namespace {

constexpr int64_t kLargestSize = int64_t{1} << 20;  // far past any CPU-trained model; keeps int32 overrides exact

absl::Status Bad(const std::string& text) { return absl::InvalidArgumentError(text); }

absl::Status CheckDial(const LadderDial& dial) {
  if (dial.depths_size() < 2)
    return Bad("ladder.dial.depths: a ladder needs at least 2 depths to compare sizes, e.g. depths: [2, 4, 8]");
  for (int i = 0; i < dial.depths_size(); ++i) {
    if (dial.depths(i) < 1 || dial.depths(i) > kLargestSize)
      return Bad(absl::StrCat("ladder.dial.depths[", i, "]: ", dial.depths(i), " is not a depth; each must be >= 1"));
    if (i > 0 && dial.depths(i) <= dial.depths(i - 1)) {
      return Bad(absl::StrCat("ladder.dial.depths[", i, "]: ", dial.depths(i), " does not exceed depths[", i - 1,
                              "] ", dial.depths(i - 1), "; list the depths strictly increasing"));
    }
  }
  if (dial.aspect_ratio() < 1 || dial.aspect_ratio() > kLargestSize)
    return Bad(absl::StrCat("ladder.dial.aspect_ratio: ", dial.aspect_ratio(), " must be >= 1 (d_model = aspect_ratio x depth)"));
  if (dial.head_dim() < 0 || dial.head_dim() > kLargestSize)
    return Bad(absl::StrCat("ladder.dial.head_dim: ", dial.head_dim(), " must be >= 1, or 0 to keep each variant's num_heads"));
  if (!(dial.ffn_multiplier() >= 0) || dial.ffn_multiplier() > 1024)
    return Bad(absl::StrCat("ladder.dial.ffn_multiplier: ", dial.ffn_multiplier(),
                            " must be between 0 (keep each variant's d_ff) and 1024"));
  return absl::OkStatus();
}

absl::Status CheckRungs(const Ladder& ladder) {
  if (ladder.rung_size() < 2)
    return Bad("ladder: a ladder needs at least 2 rungs; give dial { depths: [...] } or two or more rung { d_model num_layers }");
  for (int i = 0; i < ladder.rung_size(); ++i) {
    const LadderRung& r = ladder.rung(i);
    const std::string at = absl::StrCat("ladder.rung[", i, "]");
    for (const auto& [name, v, required] : {std::make_tuple("d_model", r.d_model(), true),
                                            std::make_tuple("num_layers", r.num_layers(), true),
                                            std::make_tuple("num_heads", r.num_heads(), false),
                                            std::make_tuple("d_ff", r.d_ff(), false)}) {
      if (v > kLargestSize || v < (required ? 1 : 0)) {
        return Bad(absl::StrCat(at, ".", name, ": ", v, " must be ", required ? ">= 1" : ">= 0 (0: each variant's own)",
                                " and at most ", kLargestSize));
      }
    }
    if (i == 0) continue;
    const LadderRung& p = ladder.rung(i - 1);
    if (r.d_model() < p.d_model() || r.num_layers() < p.num_layers() ||
        (r.d_model() == p.d_model() && r.num_layers() == p.num_layers())) {
      return Bad(absl::StrCat(at, ": d_model ", r.d_model(), ", num_layers ", r.num_layers(), " after ladder.rung[", i - 1,
                              "]'s ", p.d_model(), ", ", p.num_layers(),
                              ": rungs must be increasing (neither field shrinks, at least one grows); order them "
                              "from the smallest model up"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckLadder(const Ladder& ladder) {
  if (ladder.has_dial() == (ladder.rung_size() > 0))
    return Bad("ladder: give exactly one of dial { depths: [...] } and rung { d_model num_layers } (got " +
               std::string(ladder.has_dial() ? "both" : "neither") + ")");
  absl::Status rungs = ladder.has_dial() ? CheckDial(ladder.dial()) : CheckRungs(ladder);
  if (!rungs.ok()) return rungs;
  if (!ladder.has_target_loss())
    return Bad("ladder.target_loss is required: the eval_loss each variant must reach, e.g. target_loss: 2.0 "
               "(pick one that the smaller rungs reach within train.steps)");
  if (!(ladder.target_loss() > 0) || !std::isfinite(ladder.target_loss()))
    return Bad(absl::StrCat("ladder.target_loss: ", ladder.target_loss(), " must be a finite eval_loss > 0"));
  if (!(ladder.confidence() > 0 && ladder.confidence() < 1))
    return Bad(absl::StrCat("ladder.confidence: ", ladder.confidence(), " must be between 0 and 1, e.g. 0.95"));
  if (ladder.compare_size() > 2 || ladder.compare_size() == 1 ||
      (ladder.compare_size() == 2 && ladder.compare(0) == ladder.compare(1))) {
    return Bad(absl::StrCat("ladder.compare: give two different variant labels (got ", ladder.compare_size(),
                            "), e.g. compare: [\"ffn=swiglu\", \"ffn=gelu\"], or none to report every pair"));
  }
  return absl::OkStatus();
}

std::string LadderColumn(const Ladder& ladder) { return ladder.has_dial() ? "depth" : "rung"; }

std::vector<std::string> LadderRungNames(const Ladder& ladder) {
  std::vector<std::string> names;
  for (int32_t d : ladder.dial().depths()) names.push_back(absl::StrCat(d));
  for (const LadderRung& r : ladder.rung()) names.push_back(absl::StrCat("L", r.num_layers(), "-d", r.d_model()));
  return names;
}

absl::StatusOr<RungSize> LadderRungSize(const Ladder& ladder, int index, int64_t variant_heads,
                                        const std::string& variant) {
  RungSize s;
  if (ladder.has_dial()) {
    const LadderDial& dial = ladder.dial();
    const int64_t depth = dial.depths(index);
    const int64_t multiple = dial.head_dim() > 0 ? dial.head_dim() : variant_heads;
    if (multiple < 1) {
      return Bad(absl::StrCat("ladder.dial.head_dim is 0 (keep each variant's heads) but variant '", variant,
                              "' has no model.num_heads (", variant_heads, "); set model.num_heads or dial.head_dim"));
    }
    const int64_t width = int64_t{dial.aspect_ratio()} * depth;
    s.num_layers = depth;
    s.d_model = (width + multiple - 1) / multiple * multiple;  // rounded up to a head multiple
    if (dial.head_dim() > 0) s.num_heads = s.d_model / dial.head_dim();
    if (dial.ffn_multiplier() > 0) s.d_ff = std::max<int64_t>(1, std::llround(dial.ffn_multiplier() * s.d_model));
  } else {
    const LadderRung& r = ladder.rung(index);
    s = RungSize{r.d_model(), r.num_layers(), r.num_heads(), r.d_ff()};
    const int64_t heads = s.num_heads > 0 ? s.num_heads : variant_heads;
    if (heads < 1 || s.d_model % heads != 0) {
      return Bad(absl::StrCat("ladder.rung[", index, "].d_model ", s.d_model, " is not a multiple of ",
                              s.num_heads > 0 ? absl::StrCat("ladder.rung[", index, "].num_heads ")
                                              : absl::StrCat("variant '", variant, "''s model.num_heads "),
                              heads, "; give a d_model divisible by it, or set the rung's num_heads"));
    }
  }
  if (s.d_model > kLargestSize || s.d_ff > kLargestSize)
    return Bad(absl::StrCat("ladder: rung ", index, " comes to d_model ", s.d_model, ", d_ff ", s.d_ff,
                            ", past ", kLargestSize, "; lower the depths or the aspect_ratio"));
  return s;
}

std::vector<std::string> RungOverrides(const RungSize& size) {
  std::vector<std::string> out = {absl::StrCat("model.d_model=", size.d_model),
                                  absl::StrCat("model.num_layers=", size.num_layers)};
  if (size.num_heads > 0) out.push_back(absl::StrCat("model.num_heads=", size.num_heads));
  if (size.d_ff > 0) out.push_back(absl::StrCat("model.d_ff=", size.d_ff));
  return out;
}

std::vector<std::string> LadderFields(const Ladder& ladder) {
  std::vector<std::string> fields = {"model.d_model", "model.num_layers"};
  bool heads = ladder.dial().head_dim() > 0, ff = ladder.has_dial() && ladder.dial().ffn_multiplier() > 0;
  for (const LadderRung& r : ladder.rung()) heads |= r.num_heads() > 0, ff |= r.d_ff() > 0;
  if (heads) fields.push_back("model.num_heads");
  if (ff) fields.push_back("model.d_ff");
  return fields;
}

}  // namespace tvlab
