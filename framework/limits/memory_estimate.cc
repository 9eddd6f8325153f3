#include "framework/limits/memory_estimate.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <map>
#include <set>
#include <sstream>

#include "framework/attention/query_chunks.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "framework/backend/backend.h"
#include "framework/interfaces/capabilities.h"
#include "framework/interfaces/plugin_kinds.h"
#include "framework/limits/checkpointing_estimate.h"
#include "framework/limits/optimizer_state_estimate.h"
#include "framework/schema/layer_overrides.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"

namespace tvlab {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;

constexpr double kFloat = 4;  // bytes per element

std::string Field(const std::string& name, double value) {
  return absl::StrFormat("%s = %.0f", name, value);
}

// Reads "<key>: <n> kB" from /proc/meminfo; -1 if absent.
int64_t MemInfoBytes(const std::string& key) {
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + ":", 0) != 0) continue;
    std::istringstream s(line.substr(key.size() + 1));
    int64_t kb = -1;
    s >> kb;
    return kb < 0 ? -1 : kb * 1024;
  }
  return -1;
}

int64_t CgroupLimitBytes() {
  for (const char* path : {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
    std::ifstream in(path);
    std::string text;
    if (!(in >> text) || text == "max") continue;
    char* end = nullptr;
    long long v = std::strtoll(text.c_str(), &end, 10);
    if (end != text.c_str() && v > 0 && v < (int64_t{1} << 60)) return v;
  }
  return -1;
}

void Collect(const Message& m, const std::string& path, bool in_plugin, bool score,
             std::vector<IntegerField>* out) {
  const auto* reflection = m.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  reflection->ListFields(m, &fields);
  for (const FieldDescriptor* f : fields) {
    const std::string field_path = path.empty() ? f->name() : absl::StrCat(path, ".", f->name());
    if (f->is_repeated()) {  // lists of messages by index (model.layer_overrides[0]...)
      if (f->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE) continue;
      for (int i = 0; i < reflection->FieldSize(m, f); ++i)
        Collect(reflection->GetRepeatedMessage(m, f, i), absl::StrCat(field_path, "[", i, "]"), in_plugin, score,
                out);
      continue;
    }
    if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      const Message& sub = reflection->GetMessage(m, f);
      const auto* d = sub.GetDescriptor();
      if (d->full_name() != "google.protobuf.Any") {
        Collect(sub, field_path, in_plugin, score, out);
        continue;
      }
      const std::string url = sub.GetReflection()->GetString(sub, d->FindFieldByName("type_url"));
      const auto* type = google::protobuf::DescriptorPool::generated_pool()->FindMessageTypeByName(
          url.substr(url.find_last_of('/') + 1));
      if (type == nullptr) continue;  // plugin not linked in; validation says so
      const Message* prototype = google::protobuf::MessageFactory::generated_factory()->GetPrototype(type);
      if (prototype == nullptr) continue;
      std::unique_ptr<Message> options(prototype->New());
      if (!options->ParseFromString(sub.GetReflection()->GetString(sub, d->FindFieldByName("value"))))
        continue;
      Collect(*options, field_path, true, field_path == "model.attention.score_options", out);
      continue;
    }
    double v = 0;
    switch (f->cpp_type()) {
      case FieldDescriptor::CPPTYPE_INT32: v = reflection->GetInt32(m, f); break;
      case FieldDescriptor::CPPTYPE_INT64: v = static_cast<double>(reflection->GetInt64(m, f)); break;
      case FieldDescriptor::CPPTYPE_UINT32: v = reflection->GetUInt32(m, f); break;
      case FieldDescriptor::CPPTYPE_UINT64: v = static_cast<double>(reflection->GetUInt64(m, f)); break;
      default: continue;
    }
    out->push_back({field_path, v, in_plugin, score});
  }
}

}  // namespace

std::vector<IntegerField> IntegerFields(const Experiment& spec) {
  std::vector<IntegerField> out;
  Collect(spec, "", false, false, &out);
  return out;
}

std::string HumanBytes(double bytes) {
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  while (bytes >= 1024 && u < 6) {
    bytes /= 1024;
    ++u;
  }
  if (u == 0) return absl::StrFormat("%.0f bytes", bytes);
  if (bytes >= 1e6) return absl::StrFormat("%.3g %s", bytes, units[u]);
  return absl::StrFormat("%.1f %s", bytes, units[u]);
}

// Whether attention will run in the fused kernel, which keeps a per-row
// log-sum-exp instead of (T, S) scores: the policy allows it, the score and
// the position plugins declare themselves fusable (capabilities.h) and the
// backend implements the kernel (framework/attention/attend.h).
bool FusedAttentionApplies(const Experiment& spec) {
  if (spec.runtime().attention() == "unfused") return false;
  const PluginKind& score = PluginKindById("attention_score");
  const PluginKind& position = PluginKindById("position");
  auto named = [&spec](const PluginKind& kind) {  // a spec naming none gets the default
    const std::string name = PluginNameIn(spec, kind);
    return name.empty() ? kind.default_plugin : name;
  };
  if (!(score.capabilities(named(score)) & kFusableScore)) return false;
  if (!(position.capabilities(named(position)) & kFusablePosition)) return false;
  auto backend = FindBackend(spec.runtime().backend());  // a descriptor: nothing is built
  return backend.ok() && (*backend)->Implements(Kernel::kFusedAttention) &&
         (*backend)->Implements(Kernel::kFusedAttentionBackward);
}

namespace {

// The specs of the model's layers (LayerExperiment), each distinct one once;
// the spec itself when it has no layer overrides.
std::vector<Experiment> DistinctLayers(const Experiment& spec) {
  if (spec.model().layer_overrides_size() == 0) return {spec};
  std::vector<Experiment> out;
  std::set<std::string> seen;
  for (StackRole stack : StacksOf(spec.model()))
    for (int64_t layer = 0; layer < LayersOf(spec.model(), stack); ++layer) {
      Experiment one = LayerExperiment(spec, stack, layer);
      if (seen.insert(one.model().SerializeAsString()).second) out.push_back(std::move(one));
    }
  return out;
}

// The sizes the estimate multiplies (memory_estimate.h's legend), and the
// spec field each is named by in a message.
struct Sizes {
  const ModelSpec& m;
  bool fused_attention = false;
  // Without the fused kernel, long inputs run the composition a checkpointed
  // chunk of queries at a time (framework/attention/query_chunks.h): one
  // chunk's (rows x T) tensors at a time instead of (T x T) per sublayer.
  bool query_chunks = false;
  double chunk_rows = 0;
  double C = 0, H = 0, F = 0, V = 0, out = 0, T = 0, P = 0;
  // model.memory_tokens: N rows more in every stack (T counts them; the
  // head sees T_out = T - N rows), N x C parameters per stack.
  double N = 0, T_out = 0;
  // model.multi_token_prediction: extra heads, each one more block (LAYER)
  // or a head of its own (LINEAR), and each one more (B, T, outputs) logits.
  double extra_heads = 0;
  bool extra_linear = false;
  double L_enc = 0, L_dec = 0, blocks = 0;
  double attention = 0;  // self-attention sublayers + cross
  // Model plugins' integer options count as widths (MLA's latents, the
  // additive score's hidden size); a task's options (context length, vocab
  // size) are not layer widths: the task's sizes arrive in TaskSizes.
  std::vector<IntegerField> widths;
  std::string layers_field, width_field, length_field, vocab_field;
};

Sizes SizesFor(const Experiment& spec, const TaskSizes& task) {
  Sizes z{spec.model()};
  const ModelSpec& m = z.m;
  // Per-layer patterns: fused only when every layer's attention is; each
  // plugin width at its largest over the layers (an upper bound).
  z.fused_attention = true;
  std::map<std::string, size_t> width_at;  // path -> index in z.widths
  for (const Experiment& layer : DistinctLayers(spec)) {
    z.fused_attention = z.fused_attention && FusedAttentionApplies(layer);
    for (const IntegerField& f : IntegerFields(layer)) {
      if (!f.in_plugin || f.value <= 0 || !absl::StartsWith(f.path, "model.")) continue;
      auto [at, inserted] = width_at.emplace(f.path, z.widths.size());
      if (inserted) z.widths.push_back(f);
      else if (f.value > z.widths[at->second].value) z.widths[at->second] = f;
    }
  }
  z.C = m.d_model(), z.H = m.num_heads();
  z.F = m.d_ff() > 0 ? m.d_ff() : 4.0 * z.C;
  z.V = static_cast<double>(task.vocab), z.out = static_cast<double>(task.outputs);
  const int64_t memory = std::max<int64_t>(m.memory_tokens().count(), 0);
  const int64_t rows = task.max_length + memory;  // what a stack sees
  z.N = static_cast<double>(memory);
  z.T = static_cast<double>(rows);
  z.T_out = static_cast<double>(task.max_length);
  z.query_chunks = !z.fused_attention && spec.runtime().attention() != "unfused" && ChunksQueries(rows, rows);
  z.chunk_rows = static_cast<double>(QueryChunkRows(rows));
  z.P = std::max<double>(z.T_out, m.max_seq_len());
  const bool enc_dec = m.family() == ModelSpec::ENCODER_DECODER;
  z.L_enc = m.num_layers();
  z.L_dec = enc_dec ? (m.num_decoder_layers() > 0 ? m.num_decoder_layers() : m.num_layers()) : 0;
  const MultiTokenPredictionSpec& mtp = m.multi_token_prediction();
  z.extra_heads = mtp.num_tokens() >= 2 ? mtp.num_tokens() - 1 : 0;
  z.extra_linear = mtp.head() == MultiTokenPredictionSpec::LINEAR;
  const double head_blocks = z.extra_linear ? 0 : z.extra_heads;
  z.blocks = z.L_enc + z.L_dec + head_blocks;
  z.attention = z.L_enc + 2 * z.L_dec + head_blocks;
  z.layers_field = z.L_dec > z.L_enc ? Field("model.num_decoder_layers", z.L_dec) : Field("model.num_layers", z.L_enc);
  z.width_field = Field("model.d_model", z.C);
  z.length_field = m.max_seq_len() > z.T ? Field("model.max_seq_len", m.max_seq_len())
                                         : absl::StrFormat("the task's sequence length (task %s) = %.0f",
                                                           spec.task().plugin(), z.T);
  z.vocab_field = absl::StrFormat("the task's vocabulary (task %s) = %.0f", spec.task().plugin(), z.V);
  return z;
}

// The parameters, in elements.
std::vector<MemoryPart> ParameterParts(const Sizes& z) {
  const ModelSpec& m = z.m;
  const double C = z.C, F = z.F, V = z.V, out = z.out, P = z.P, blocks = z.blocks, attention = z.attention;
  std::vector<MemoryPart> params;
  auto param = [&](const std::string& what, const std::string& field, double n) {
    params.push_back({what, field, n});
  };
  param("token embedding (V x C)", V >= C ? z.vocab_field : z.width_field, V * C);
  param("position table (T x C)", P >= C ? z.length_field : z.width_field, P * C);
  param("attention weights (4 x C x C per sublayer)", C >= attention ? z.width_field : z.layers_field,
        attention * (4 * C * C + 4 * C));
  param("FFN weights (2 x C x F per block)",
        m.d_ff() > 0 && m.d_ff() > C ? Field("model.d_ff", m.d_ff()) : (C >= blocks ? z.width_field : z.layers_field),
        blocks * (2 * C * F + F + C));
  param("norms", z.width_field, (2 * blocks + 2) * 2 * C);
  // A tied head (model.tie_embeddings) is the embedding table: its bias only.
  param("output head (outputs x C)", out >= C ? z.vocab_field : z.width_field,
        (m.tie_embeddings() ? 0 : out * C) + (m.head_bias() ? out : 0));
  if (z.extra_heads > 0 && z.extra_linear)
    param("multi-token prediction heads (outputs x C each)", Field("model.multi_token_prediction.num_tokens", z.extra_heads + 1),
          z.extra_heads * (out * C + out));
  if (z.N > 0)
    param("memory tokens (N x C per stack)", Field("model.memory_tokens.count", z.N),
          (z.L_dec > 0 ? 2 : 1) * z.N * C);
  const AttentionSpec::OutputGate::Kind gate = m.attention().output_gate();
  if (gate != AttentionSpec::OutputGate::NONE) {  // W_g (C, H) or (C, C) per attention sublayer
    const double gates = gate == AttentionSpec::OutputGate::ELEMENTWISE ? C : m.num_heads();
    param("attention output gate (C x gates per sublayer)", "model.attention.output_gate",
          attention * (C * gates + gates));
  }
  for (const IntegerField& w : z.widths)
    param(absl::StrCat("plugin width ", w.path, " (3 x C x w per sublayer)"), Field(w.path, w.value),
          attention * 3 * C * w.value);
  return params;
}

// The attention scores (or what the fused kernel or query chunks keep
// instead) of one forward pass over `B` sequences.
MemoryPart ScoreActivations(const Sizes& z, double B, const std::string& batch_field, double factor,
                            const std::string& pass) {
  const double T = z.T, H = z.H, attention = z.attention;
  const std::string& field = T >= B ? z.length_field : batch_field;
  if (z.fused_attention)
    return {pass + " attention log-sum-exps (B x H x T per sublayer; fused kernel)", field,
            factor * kFloat * attention * B * H * T};
  if (z.query_chunks)
    return {pass + " attention scores of one query chunk (3 x B x H x rows x T, rows = " +
                absl::StrFormat("%.0f", z.chunk_rows) + "; recomputed in backward)",
            field, factor * kFloat * 3 * B * H * z.chunk_rows * T};
  return {pass + " attention scores (3 x B x H x T x T per sublayer)", field,
          factor * kFloat * attention * 3 * B * H * T * T};
}

// Activations of one forward pass over `B` sequences, under
// train.activation_checkpointing `checkpointing` (checkpointing_estimate.h).
std::vector<MemoryPart> ActivationParts(const Sizes& z, double B, const std::string& batch_field, double factor,
                                        const std::string& pass,
                                        TrainSpec::ActivationCheckpointing checkpointing = TrainSpec::NONE) {
  const ModelSpec& m = z.m;
  const double C = z.C, H = z.H, F = z.F, out = z.out, T = z.T, blocks = z.blocks, attention = z.attention;
  std::vector<MemoryPart> parts;
  const std::string bt = B * T < C ? z.width_field : (T >= B ? z.length_field : batch_field);
  parts.push_back({pass + " layer activations (12 x B x T x C per sublayer)", bt,
                   factor * kFloat * attention * 12 * B * T * C});
  parts.push_back(ScoreActivations(z, B, batch_field, factor, pass));
  parts.push_back({pass + " FFN hidden (3 x B x T x F per block)",
                   m.d_ff() > 0 && m.d_ff() > B * T ? Field("model.d_ff", m.d_ff()) : bt,
                   factor * kFloat * blocks * 3 * B * T * F});
  parts.push_back({pass + " output logits (3 x B x T x outputs)", out >= B * T ? z.vocab_field : batch_field,
                   factor * kFloat * 3 * B * z.T_out * out});
  if (z.extra_heads > 0)  // evaluation runs the main head only; counted for both (an upper bound)
    parts.push_back({pass + " multi-token prediction logits (3 x B x T x outputs per extra head)",
                     Field("model.multi_token_prediction.num_tokens", z.extra_heads + 1),
                     factor * kFloat * 3 * B * z.T_out * out * z.extra_heads});
  for (const IntegerField& w : z.widths) {
    parts.push_back({absl::StrCat(pass, " activations of ", w.path), Field(w.path, w.value),
                     factor * kFloat * attention * 4 * B * T * w.value});
    if (w.score && z.query_chunks)
      parts.push_back({absl::StrCat(pass, " score hidden of ", w.path, " for one query chunk (B x H x rows x T x w)"),
                       Field(w.path, w.value), factor * kFloat * B * H * z.chunk_rows * T * w.value});
    else if (w.score)
      parts.push_back({absl::StrCat(pass, " score hidden of ", w.path, " (B x H x T x T x w)"),
                       Field(w.path, w.value), factor * kFloat * attention * B * H * T * T * w.value});
  }
  ApplyActivationCheckpointing(checkpointing, z.blocks,
                              {pass + " block inputs kept for recomputation (B x T x C per block)", bt,
                               factor * kFloat * z.blocks * B * T * C},
                              &parts);
  return parts;
}

}  // namespace

TaskSizes SizesOf(const Task& task) { return TaskSizes{task.vocab_size(), HeadOutputs(task), task.max_length()}; }

MemoryEstimate EstimateMemory(const Experiment& spec, const TaskSizes& task) {
  const Sizes z = SizesFor(spec, task);
  MemoryEstimate e;
  const std::vector<MemoryPart> params = ParameterParts(z);  // in elements, turned into bytes below
  for (const MemoryPart& p : params) e.parameters += p.bytes;
  // Weights, gradients and the optimizer's state (AdamW: two moments).
  const double state = OptimizerStateFloatsPerParameter(spec.train().optimizer());
  for (MemoryPart p : params) {
    p.bytes *= (2 + state) * kFloat;
    p.what += absl::StrFormat(", with gradients and optimizer state (%.3g floats per parameter)", state);
    e.static_bytes += p.bytes;
    e.parts.push_back(p);
  }
  auto train = ActivationParts(z, spec.train().batch_size(), Field("train.batch_size", spec.train().batch_size()), 2,
                               "training", spec.train().activation_checkpointing());
  const double eval_batch = std::min<double>(spec.eval().batch_size(), std::max(1, spec.eval().examples()));
  auto eval = ActivationParts(z, eval_batch, Field("eval.batch_size", spec.eval().batch_size()), 1, "evaluation");
  double train_total = 0, eval_total = 0;
  for (const auto& p : train) train_total += p.bytes;
  for (const auto& p : eval) eval_total += p.bytes;
  const auto& used = train_total >= eval_total ? train : eval;
  e.activation_bytes = std::max(train_total, eval_total);
  e.parts.insert(e.parts.end(), used.begin(), used.end());
  e.total_bytes = e.static_bytes + e.activation_bytes;
  return e;
}

int64_t AvailableMemoryBytes() {
  if (const char* env = std::getenv("TVLAB_MEMORY_LIMIT_BYTES")) {
    char* end = nullptr;
    long long v = std::strtoll(env, &end, 10);
    if (end != env && v > 0) return v;
  }
  int64_t available = MemInfoBytes("MemAvailable");
  if (available < 0) {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    available = pages > 0 && page > 0 ? static_cast<int64_t>(pages) * page : int64_t{1} << 62;
  }
  const int64_t cgroup = CgroupLimitBytes();
  return cgroup > 0 ? std::min(available, cgroup) : available;
}

absl::Status CheckFitsInMemory(const Experiment& spec, const TaskSizes& task, int64_t available_bytes) {
  const ModelSpec& m = spec.model();
  if (m.d_model() <= 0 || m.num_layers() <= 0 || m.num_heads() <= 0 || spec.train().batch_size() <= 0 ||
      spec.eval().batch_size() <= 0)
    return absl::OkStatus();
  MemoryEstimate e = EstimateMemory(spec, task);
  if (e.total_bytes <= static_cast<double>(available_bytes)) return absl::OkStatus();
  const MemoryPart* largest = &e.parts.front();
  for (const MemoryPart& p : e.parts)
    if (p.bytes > largest->bytes) largest = &p;
  return absl::ResourceExhaustedError(absl::StrCat(
      "the spec needs about ", HumanBytes(e.total_bytes), " of memory to train (",
      absl::StrFormat("%.3g", e.parameters), " parameters: ", HumanBytes(e.static_bytes),
      " with gradients and optimizer state; activations ", HumanBytes(e.activation_bytes),
      "), more than the ", HumanBytes(static_cast<double>(available_bytes)),
      " available; the largest part is the ", largest->what, ", ", HumanBytes(largest->bytes),
      ", driven by ", largest->field, ": lower it (limit from /proc/meminfo MemAvailable; set "
      "TVLAB_MEMORY_LIMIT_BYTES to override)"));
}

}  // namespace tvlab
