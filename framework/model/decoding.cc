#include "framework/model/decoding.h"

#include "framework/backend/backend.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "framework/core/check.h"
#include "framework/core/rng.h"

namespace tvlab {
namespace {

Batch SourceBatch(const std::vector<int32_t>& source, int64_t rows) {
  Batch b;
  b.batch = rows;
  b.source_length = static_cast<int64_t>(source.size());
  for (int64_t r = 0; r < rows; ++r) {
    b.source.insert(b.source.end(), source.begin(), source.end());
    b.source_lengths.push_back(b.source_length);
  }
  return b;
}

// Log-softmax of row `row`'s last position of logits (B, T, V).
std::vector<double> LastLogProbs(const Var& logits, int64_t row) {
  const int64_t t = logits.dim(1), v = logits.dim(2);
  // The one row of logits decoding needs, copied to the host (an edge).
  Tensor last = Tensor::Empty({v});
  CurrentBackend().Copy2D(logits.value().ptr() + (row * t + t - 1) * v, v, last.ptr(), v, 1, v);
  const std::vector<float> host = last.ToVector();
  const float* l = host.data();  // host: the std::vector copied from the device above
  double max = l[0];
  for (int64_t i = 1; i < v; ++i) max = std::max<double>(max, l[i]);
  double sum = 0;
  for (int64_t i = 0; i < v; ++i) sum += std::exp(l[i] - max);
  std::vector<double> out(v);
  for (int64_t i = 0; i < v; ++i) out[i] = l[i] - max - std::log(sum);
  return out;
}

int32_t Choose(const std::vector<double>& logp, const DecodingSpec& spec, const RngStream& rng,
               int64_t step) {
  const int64_t v = static_cast<int64_t>(logp.size());
  if (spec.method() == DecodingSpec::GREEDY)
    return static_cast<int32_t>(std::max_element(logp.begin(), logp.end()) - logp.begin());
  // Sampling: softmax(logp / temperature) over the top_k most likely tokens.
  std::vector<int32_t> order(v);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return logp[a] > logp[b]; });
  const int64_t k = spec.top_k() > 0 ? std::min<int64_t>(spec.top_k(), v) : v;
  std::vector<double> weights(k);
  for (int64_t i = 0; i < k; ++i) weights[i] = std::exp((logp[order[i]] - logp[order[0]]) / spec.temperature());
  double total = std::accumulate(weights.begin(), weights.end(), 0.0);
  double u = rng.Uniform(step) * total;
  for (int64_t i = 0; i < k; ++i) {
    if (u < weights[i]) return order[i];
    u -= weights[i];
  }
  return order[k - 1];
}

std::vector<int32_t> GreedyOrSample(const Model& model, const std::vector<int32_t>& source,
                                    const std::vector<int32_t>& prefix, const DecodingSpec& spec,
                                    int64_t max_new, uint64_t stream) {
  RngStream rng(spec.seed(), RngPurpose::kSampling, stream);
  DecodeState state = model.BeginDecoding(SourceBatch(source, 1), spec.use_kv_cache());
  Var logits = model.DecodeStep(&state, prefix, static_cast<int64_t>(prefix.size()));
  std::vector<int32_t> out;
  for (int64_t step = 0; step < max_new; ++step) {
    int32_t token = Choose(LastLogProbs(logits, 0), spec, rng, step);
    if (token == kEos) break;
    out.push_back(token);
    if (step + 1 < max_new) logits = model.DecodeStep(&state, {token}, 1);
  }
  return out;
}

double LengthPenalty(int64_t length, float alpha) {
  return std::pow((5.0 + length) / 6.0, alpha);  // GNMT (Wu et al. 2016)
}

std::vector<int32_t> Beam(const Model& model, const std::vector<int32_t>& source,
                          const std::vector<int32_t>& prefix, const DecodingSpec& spec,
                          int64_t max_new) {
  struct Hypothesis {
    std::vector<int32_t> tokens;
    double logp = 0;
  };
  const int64_t beam = spec.beam_size();
  DecodeState state = model.BeginDecoding(SourceBatch(source, 1), spec.use_kv_cache());
  Var logits = model.DecodeStep(&state, prefix, static_cast<int64_t>(prefix.size()));
  std::vector<Hypothesis> alive = {Hypothesis{}};
  std::vector<std::pair<double, std::vector<int32_t>>> finished;  // (normalized score, tokens)
  for (int64_t step = 0; step < max_new && !alive.empty(); ++step) {
    struct Candidate {
      double logp;
      int64_t parent;
      int32_t token;
    };
    std::vector<Candidate> candidates;
    for (int64_t r = 0; r < static_cast<int64_t>(alive.size()); ++r) {
      std::vector<double> lp = LastLogProbs(logits, r);
      for (int32_t t = 0; t < static_cast<int32_t>(lp.size()); ++t)
        candidates.push_back({alive[r].logp + lp[t], r, t});
    }
    const int64_t keep = std::min<int64_t>(2 * beam, candidates.size());
    std::partial_sort(candidates.begin(), candidates.begin() + keep, candidates.end(),
                      [](const Candidate& a, const Candidate& b) { return a.logp > b.logp; });
    std::vector<Hypothesis> next;
    std::vector<int64_t> rows;
    std::vector<int32_t> fed;
    for (int64_t i = 0; i < keep && static_cast<int64_t>(next.size()) < beam; ++i) {
      const Candidate& c = candidates[i];
      std::vector<int32_t> tokens = alive[c.parent].tokens;
      if (c.token == kEos) {
        if (static_cast<int64_t>(finished.size()) < beam)
          finished.emplace_back(c.logp / LengthPenalty(tokens.size() + 1, spec.length_penalty()), tokens);
        continue;
      }
      tokens.push_back(c.token);
      next.push_back({tokens, c.logp});
      rows.push_back(c.parent);
      fed.push_back(c.token);
    }
    alive = next;
    if (static_cast<int64_t>(finished.size()) >= beam) alive.clear();  // enough complete hypotheses
    if (alive.empty() || step + 1 == max_new) break;
    Model::SelectRows(&state, rows);
    logits = model.DecodeStep(&state, fed, 1);
  }
  for (const Hypothesis& h : alive)  // still unfinished at the length limit
    finished.emplace_back(h.logp / LengthPenalty(h.tokens.size(), spec.length_penalty()), h.tokens);
  TVLAB_CHECK(!finished.empty());
  return std::max_element(finished.begin(), finished.end(),
                          [](const auto& a, const auto& b) { return a.first < b.first; })
      ->second;
}

}  // namespace

std::vector<int32_t> Generate(const Model& model, const std::vector<int32_t>& source,
                              const std::vector<int32_t>& prefix, const DecodingSpec& spec,
                              int64_t max_positions, uint64_t stream) {
  TVLAB_CHECK(model.SupportsDecoding()) << "this model family does not generate";
  NoGradGuard no_grad;
  // The prefix takes positions [0, p); each generated token but the last is
  // fed back, so k new tokens need p + k - 1 <= max_positions.
  const int64_t p = static_cast<int64_t>(prefix.size());
  const int64_t max_new = std::min<int64_t>(spec.max_new_tokens(), max_positions - p + 1);
  if (max_new <= 0) return {};
  if (spec.method() == DecodingSpec::BEAM) return Beam(model, source, prefix, spec, max_new);
  return GreedyOrSample(model, source, prefix, spec, max_new, stream);
}

void PromptFor(ModelSpec::Family family, const std::vector<int32_t>& source_tokens,
               std::vector<int32_t>* source, std::vector<int32_t>* prefix) {
  if (family == ModelSpec::ENCODER_DECODER) {
    *source = source_tokens;
    source->push_back(kEos);
    *prefix = {kBos};
  } else {
    source->clear();
    *prefix = {kBos};
    prefix->insert(prefix->end(), source_tokens.begin(), source_tokens.end());
    prefix->push_back(kSep);
  }
}

void ValidateDecodingSpec(const DecodingSpec& d, const std::string& path, Problems* p) {
  p->RequirePositive(path + ".max_new_tokens", d.max_new_tokens(), "e.g. 64");
  p->RequirePositive(path + ".beam_size", d.beam_size(), "e.g. 4 (1 = greedy)");
  if (!(d.temperature() > 0))
    p->Add(absl::StrCat(path, ".temperature must be > 0 (got ", d.temperature(),
                        "); use method GREEDY for argmax decoding"));
  if (d.top_k() < 0)
    p->Add(absl::StrCat(path, ".top_k must be >= 0 (got ", d.top_k(), "); 0 keeps every token"));
  if (d.length_penalty() < 0)
    p->Add(absl::StrCat(path, ".length_penalty must be >= 0 (got ", d.length_penalty(), ")"));
}

}  // namespace tvlab
