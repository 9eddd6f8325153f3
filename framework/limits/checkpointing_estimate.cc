#include "framework/limits/checkpointing_estimate.h"

#include <string>

namespace tvlab {
namespace {

bool Has(const MemoryPart& part, const char* what) { return part.what.find(what) != std::string::npos; }

// The share of a part that SELECTIVE keeps for every block: its products.
double KeptShare(const MemoryPart& part) {
  if (Has(part, "layer activations")) return 5.0 / 12;  // Q, K, V, attention output, output projection
  if (Has(part, "FFN hidden") || Has(part, "attention scores (")) return 1.0 / 3;  // the product of the 3
  if (Has(part, "log-sum-exps") || Has(part, "query chunk")) return 1.0;  // the kernel's or the chunk's own
  return 0.0;  // plugin widths' activations: rerun (an underestimate where they are products)
}

}  // namespace

void ApplyActivationCheckpointing(TrainSpec::ActivationCheckpointing setting, double blocks,
                                  const MemoryPart& block_inputs, std::vector<MemoryPart>* parts) {
  if (setting == TrainSpec::NONE || blocks <= 1) return;
  const bool selective = setting == TrainSpec::SELECTIVE;
  std::vector<MemoryPart> rerun;
  for (MemoryPart& p : *parts) {
    if (Has(p, "output logits")) continue;  // after the blocks: kept
    const double kept = selective ? KeptShare(p) : 0.0;
    if (!selective) {
      p.bytes /= blocks;
      p.what += " of one block at a time (train.activation_checkpointing BLOCK)";
      continue;
    }
    if (kept < 1.0)
      rerun.push_back({p.what + ", rerun for one block at a time (train.activation_checkpointing SELECTIVE)",
                       p.field, p.bytes * (1.0 - kept) / blocks});
    p.bytes *= kept;
    p.what += ", the products kept (train.activation_checkpointing SELECTIVE)";
  }
  parts->insert(parts->end(), rerun.begin(), rerun.end());
  parts->push_back(block_inputs);
}

}  // namespace tvlab
