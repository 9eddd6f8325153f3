#ifndef TVLAB_FRAMEWORK_CORE_RNG_H_
#define TVLAB_FRAMEWORK_CORE_RNG_H_

// Counter-based random numbers (Philox4x32-10, Salmon et al., SC'11), keyed by
// (seed, purpose, step). Any draw is a pure function of its key and index, so
// results do not depend on execution order, thread count or what else drew
// before: parameter init keyed by the parameter's name, data by the step,
// dropout by (site, step). This is what makes resume bit-exact.

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

namespace tvlab {

// Distinct streams for distinct uses of randomness.
enum class RngPurpose : uint32_t {
  kInit = 1,
  kTrainData = 2,
  kEvalData = 3,
  kDropout = 4,
  kSampling = 5,
};

// One Philox4x32-10 block: 4 random words for (counter, key).
std::array<uint32_t, 4> Philox4x32(std::array<uint32_t, 4> counter,
                                   std::array<uint32_t, 2> key);

// 64-bit FNV-1a, for turning names (parameter paths, dropout sites) into
// stream ids.
uint64_t HashName(std::string_view name);

// A stream of random numbers for one (seed, purpose, step). Draw i of the
// stream is the same no matter which draws were made before.
class RngStream {
 public:
  RngStream(uint64_t seed, RngPurpose purpose, uint64_t step);

  // Raw 32-bit word number `index`.
  uint32_t Word(uint64_t index) const;
  // Words [first, first + n) into `out`; same values as Word(), 4x cheaper.
  void Words(uint64_t first, uint64_t n, uint32_t* out) const;
  // Uniform floats in [0, 1) for indices [first, first + n).
  void UniformFill(uint64_t first, uint64_t n, float* out) const;
  // Uniform in [0, 1) with 24 random bits, from word `index`.
  float Uniform(uint64_t index) const;
  // Standard normal via Box-Muller from words 2*index and 2*index+1.
  float Normal(uint64_t index) const;
  // Normal(first + i) for i < n into `out`, from one Words call per 4096.
  void NormalFill(uint64_t first, uint64_t n, float* out) const;
  // Uniform integer in [0, n) from word `index` (n small; bias < n / 2^32).
  uint32_t UniformInt(uint64_t index, uint32_t n) const;
  // UniformInt(first + i, n) for i < count into `out`, from one Words call.
  void UniformInts(uint64_t first, uint64_t count, uint32_t n, int32_t* out) const;

  // Data parallelism (docs/distributed.md): the stream as one rank sees it
  // when its batch-major tensors hold rows [first_row, first_row + rows) of
  // the global batch's. A draw for such a tensor must be the global tensor's
  // draw for those elements: ShardFirstElement says where they start.
  RngStream ForBatchRows(int64_t first_row, int64_t rows) const;
  // For a batch-major tensor of `numel` elements over this stream's rows,
  // the index of its first element in the global batch's tensor (0 when the
  // stream is not a shard's; numel must be a multiple of the rows).
  uint64_t ShardFirstElement(int64_t numel) const;
  // The stream whose word i is this stream's word (i + words); not a shard's.
  RngStream SkipWords(uint64_t words) const;
  // Where word 0 of this stream is in the unskipped stream (kernels that
  // compute Philox themselves, on a GPU, must add it to their word index).
  uint64_t word_offset() const { return word_offset_; }
  // The stream's Philox key and the fixed words of its counters, for kernels
  // that draw the same words elsewhere (gpu_cuda/philox.cuh): block `b` is
  // Philox4x32({b, (b >> 32) ^ purpose_word(), step lo, step hi}, key()).
  std::array<uint32_t, 2> key() const { return key_; }
  uint32_t purpose_word() const { return purpose_ << 24; }
  uint64_t step() const { return step_; }
  // The same stream (seed, purpose, skip, shard) at another step: a captured
  // training step (framework/capture/) replays a step-keyed draw this way.
  RngStream WithStep(uint64_t step) const {
    RngStream s = *this;
    s.step_ = step;
    return s;
  }
  bool operator==(const RngStream& o) const {
    return key_ == o.key_ && purpose_ == o.purpose_ && step_ == o.step_ && word_offset_ == o.word_offset_ &&
           shard_first_row_ == o.shard_first_row_ && shard_rows_ == o.shard_rows_;
  }
  bool operator!=(const RngStream& o) const { return !(*this == o); }

 private:
  std::array<uint32_t, 4> Block(uint64_t block) const;

  std::array<uint32_t, 2> key_;
  uint32_t purpose_;
  uint64_t step_;
  uint64_t word_offset_ = 0;  // SkipWords
  int64_t shard_first_row_ = 0, shard_rows_ = 0;  // ForBatchRows; 0 rows: not a shard
};

// Backend::DropoutMask's definition, on the host: element e of a mask drawn
// from `stream` is 0 when the 16-bit half (e & 1) of word e / 2 is below
// round(p * 65536), else the inverted-dropout factor 1 / (1 - p). Writes
// elements [first, first + n) into `out`; `words` is scratch (reused across
// calls by kernels that draw row by row). The reference backend's mask, the
// tiled attention's and the chunked attention's all come from here.
void DropoutFactors(const RngStream& stream, float p, uint64_t first, int64_t n, float* out,
                    std::vector<uint32_t>& words);

// DropoutFactors' constants: an element is dropped where its 16-bit draw is
// below DropoutThreshold(p) = round(p * 65536), else scaled by
// DropoutKeepScale(p) = 1 / (1 - p). (Kernels that fuse the factors with
// their use take them from here, so they drop and scale as the mask does.)
uint32_t DropoutThreshold(float p);
float DropoutKeepScale(float p);

// RngStream::Words's three kernels, exposed for rng_test (which runs each
// the CPU can): Philox4x32-10 of the 8 blocks [block, block + 8)
// (kAvx2Blocks and kAvx512Blocks for the vector ones) of a stream with counter words 1..3 = (block >> 32) ^
// purpose_word, step_lo, step_hi, their 4 words a block into `out` in
// order. Words uses the AVX-512 one where CpuHasAvx512f(), else the AVX2 one
// where CpuHasAvx2() (cpu_features.h), else the portable one.
namespace rng_internal {
// 32 blocks (eight 256-bit vectors, their chains interleaved) a call of the
// AVX2 kernel: 0.64 ns a word on an AMD EPYC Zen 4 capped at AVX2, against
// 0.80 with 8 and 0.69 with 12 (bench/README.md).
constexpr int kAvx2Blocks = 32;
constexpr int kAvx512Blocks = 32;
void PhiloxLanesPortable(uint64_t block, uint32_t purpose_word, uint32_t step_lo, uint32_t step_hi, uint32_t key0,
                         uint32_t key1, uint32_t* out);
void PhiloxLanesAvx2(uint64_t block, uint32_t purpose_word, uint32_t step_lo, uint32_t step_hi, uint32_t key0,
                     uint32_t key1, uint32_t* out);
void PhiloxLanesAvx512(uint64_t block, uint32_t purpose_word, uint32_t step_lo, uint32_t step_hi, uint32_t key0,
                       uint32_t key1, uint32_t* out);
}  // namespace rng_internal

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_CORE_RNG_H_
