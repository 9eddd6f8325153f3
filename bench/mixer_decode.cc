// Decoding speed at a long context, for bench/mixer_bench.sh: builds the
// model of a spec (untrained: speed and state size do not depend on the
// weights), feeds CONTEXT tokens through its incremental decoder (the
// prefill, in pieces of 1024 tokens: a mixer runs its chunked form from the
// stored state, softmax attention appends to its KV cache), then NEW tokens
// one at a time, and prints one JSON line: the prefill seconds, the
// decoding tokens/s of the single-token steps, and the decoding state's
// bytes (float32) after the prefill and after the last token (a KV cache
// grows with T; a mixer's state does not).
//
// usage: mixer_decode CONFIG CONTEXT NEW [field=value ...]   (overrides as --set)

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "framework/autograd/var.h"
#include "framework/model/model.h"
#include "framework/runtime/apply_runtime.h"
#include "framework/spec/spec_loader.h"

namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

int64_t StateBytes(const tvlab::DecodeState& state) {
  int64_t bytes = 0;
  for (const tvlab::KvCache& cache : state.self_caches) bytes += cache.Bytes(4);
  return bytes;
}

int Fail(const std::string& message) {
  std::fprintf(stderr, "mixer_decode: %s\n", message.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) return Fail("usage: mixer_decode CONFIG CONTEXT NEW [field=value ...]");
  const int64_t context = std::atoll(argv[2]), fresh = std::atoll(argv[3]);
  if (context < 1 || fresh < 1) return Fail("CONTEXT and NEW must be positive");
  std::vector<std::string> overrides(argv + 4, argv + argc);
  std::shared_ptr<const tvlab::Task> task;
  auto spec = tvlab::LoadExperiment(argv[1], overrides, &task);
  if (!spec.ok()) return Fail(std::string(spec.status().message()));
  if (absl::Status applied = tvlab::ApplyRuntime(spec->runtime()); !applied.ok())
    return Fail(std::string(applied.message()));
  auto model = tvlab::BuildModel(*spec, task->vocab_size(), tvlab::HeadOutputs(*task));
  if (!model.ok()) return Fail(std::string(model.status().message()));
  if (!(*model)->SupportsDecoding()) return Fail("this model does not decode");
  tvlab::NoGradGuard no_grad;
  tvlab::Batch batch;
  batch.batch = 1;
  tvlab::DecodeState state = (*model)->BeginDecoding(batch, /*use_cache=*/true);
  const int64_t vocab = task->vocab_size();
  auto token = [vocab](int64_t i) { return static_cast<int32_t>((i * 31 + 7) % vocab); };
  Clock::time_point start = Clock::now();
  for (int64_t done = 0; done < context;) {
    const int64_t n = std::min<int64_t>(1024, context - done);
    std::vector<int32_t> piece(n);
    for (int64_t i = 0; i < n; ++i) piece[i] = token(done + i);
    (*model)->DecodeStep(&state, piece, n);
    done += n;
  }
  const double prefill_s = Seconds(start);
  const int64_t bytes_after_prefill = StateBytes(state);
  start = Clock::now();
  for (int64_t i = 0; i < fresh; ++i) (*model)->DecodeStep(&state, {token(context + i)}, 1);
  const double decode_s = Seconds(start);
  std::printf(
      "{\"context\": %lld, \"new_tokens\": %lld, \"prefill_seconds\": %.3f, "
      "\"decode_tokens_per_second\": %.1f, \"state_bytes_after_prefill\": %lld, "
      "\"state_bytes_at_end\": %lld}\n",
      static_cast<long long>(context), static_cast<long long>(fresh), prefill_s,
      static_cast<double>(fresh) / decode_s, static_cast<long long>(bytes_after_prefill),
      static_cast<long long>(StateBytes(state)));
  return 0;
}
