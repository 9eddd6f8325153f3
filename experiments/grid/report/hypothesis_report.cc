#include "experiments/grid/report/hypothesis_report.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "framework/report/power.h"
#include "framework/report/significance.h"
#include "framework/report/stats.h"

namespace tvlab {
namespace {

Sides SidesOf(const Hypothesis& h) {
  if (!h.one_sided()) return Sides::kTwoSided;
  return h.direction() == Hypothesis::A_LESS ? Sides::kLess : Sides::kGreater;
}

std::vector<double> Only(const std::vector<std::pair<uint64_t, double>>& pairs) {
  std::vector<double> out;
  for (const auto& [seed, value] : pairs) out.push_back(value);
  return out;
}

// The paired test over the seeds both cells finished.
void TestPaired(const std::vector<std::pair<uint64_t, double>>& a, const std::vector<std::pair<uint64_t, double>>& b,
                double ci_alpha, HypothesisOutcome* out) {
  std::map<uint64_t, double> by_seed(b.begin(), b.end());
  std::vector<double> x, y;
  for (const auto& [seed, value] : a) {
    auto it = by_seed.find(seed);
    if (it == by_seed.end()) continue;
    x.push_back(value);
    y.push_back(it->second);
  }
  const PairedResult r = PairedTest(x, y, ci_alpha);
  out->n_a = out->n_b = r.n;
  out->delta = r.delta;
  out->defined = r.defined;
  out->why_undefined = r.why_undefined;
  if (!r.defined) return;
  out->ci_low = r.ci_low;
  out->ci_high = r.ci_high;
  out->standard_error = r.standard_error;
  out->df = r.df;
  out->t = r.t;
  out->sd = r.sd_diff;
  out->effect_size = r.d_z;
}

void TestWelch(const std::vector<double>& a, const std::vector<double>& b, double ci_alpha, HypothesisOutcome* out) {
  const WelchResult w = WelchTest(a, b, ci_alpha);
  out->n_a = w.n_a;
  out->n_b = w.n_b;
  out->delta = w.delta;
  out->defined = w.defined;
  out->why_undefined = w.why_undefined;
  if (!w.defined) return;
  out->ci_low = w.ci_low;
  out->ci_high = w.ci_high;
  out->standard_error = w.standard_error;
  out->df = w.df;
  out->t = w.t;
  out->sd = PooledStd(a, b);
  out->effect_size = CohensD(a, b);
}

// Power, minimum detectable effect and seeds needed, at alpha / family_size.
void AddPower(HypothesisOutcome* out) {
  const Hypothesis& h = out->hypothesis->spec;
  const PowerDesign design = PlannedDesign(*out->hypothesis, out->family_size);
  const int n = std::min(out->n_a, out->n_b);
  if (!(out->sd > 0) || n < 2) return;
  const double d = h.smallest_effect() / out->sd;
  out->power_at_smallest = TTestPower(d, n, design);
  out->minimum_detectable = MinimumDetectableEffect(n, design, kPlannedPower) * out->sd;
  out->seeds_needed = SeedsNeeded(d, design, kPlannedPower);
}

std::string Verdict(const HypothesisOutcome& o) {
  if (!o.defined) return "untested";
  if (!o.rejected) return "not supported";
  const Hypothesis::Direction dir = o.hypothesis->spec.direction();
  if ((dir == Hypothesis::A_LESS && o.delta > 0) || (dir == Hypothesis::A_GREATER && o.delta < 0))
    return "opposite sign";
  return "supported";
}

// The declared test's p-value (and t: for TOST the binding side's).
void AddP(const GridHypothesis& h, HypothesisOutcome* o) {
  if (!o->defined) return;
  if (!h.equivalence()) {
    o->p = TTestP(o->t, o->df, SidesOf(h.spec));
    return;
  }
  const TostResult tost = Tost(o->delta, o->standard_error, o->df, h.spec.smallest_effect());
  o->p = tost.p;
  o->t = tost.t;
}

}  // namespace

PowerDesign PlannedDesign(const GridHypothesis& h, int family_size) {
  PowerDesign design;
  design.paired = h.paired();
  design.one_sided = h.spec.one_sided();
  design.equivalence = h.equivalence();
  design.alpha = h.spec.alpha() / family_size;
  return design;
}

std::vector<std::pair<uint64_t, double>> SeedValues(const CellOutcome& cell, const std::string& metric) {
  std::vector<std::pair<uint64_t, double>> out;
  for (const RunOutcome& r : cell.runs) {
    if (r.state != RunState::kFinished || r.diverged()) continue;
    auto v = MetricValue(r.metrics, metric);
    if (v.ok()) out.emplace_back(r.run->seed, *v);
  }
  return out;
}

std::vector<HypothesisOutcome> TestHypotheses(const GridResults& results) {
  const std::vector<GridHypothesis>& hypotheses = results.grid->hypotheses;
  std::vector<HypothesisOutcome> out(hypotheses.size());
  std::map<std::string, std::vector<size_t>> families;  // family -> members, declared order
  for (size_t i = 0; i < hypotheses.size(); ++i) {
    const GridHypothesis& h = hypotheses[i];
    HypothesisOutcome& o = out[i];
    o.hypothesis = &h;
    const auto a = SeedValues(results.cells[h.cell_a], h.metric);
    const auto b = SeedValues(results.cells[h.cell_b], h.metric);
    // TOST at alpha is the (1 - 2 alpha) interval inside the margin.
    const double ci_alpha = h.equivalence() ? 2 * h.spec.alpha() : h.spec.alpha();
    if (h.paired()) {
      TestPaired(a, b, ci_alpha, &o);
    } else {
      TestWelch(Only(a), Only(b), ci_alpha, &o);
    }
    AddP(h, &o);
    families[h.family].push_back(i);
  }
  for (const auto& [family, members] : families) {
    // Holm over the family's declared hypotheses; an untested one counts
    // with p = 1, so the family's size is what was declared.
    std::vector<double> p;
    for (size_t i : members) p.push_back(out[i].defined ? out[i].p : 1.0);
    const std::vector<double> adjusted = HolmAdjust(p);
    for (size_t k = 0; k < members.size(); ++k) {
      HypothesisOutcome& o = out[members[k]];
      o.family_size = static_cast<int>(members.size());
      o.holm_p = adjusted[k];
      o.rejected = o.defined && o.holm_p < o.hypothesis->spec.alpha();
      AddPower(&o);
      o.verdict = Verdict(o);
    }
  }
  return out;
}

}  // namespace tvlab
