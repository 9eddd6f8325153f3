#include "framework/core/rng.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "framework/core/check.h"
#include "framework/core/cpu_features.h"
#include "framework/core/isa_clones.h"

namespace tvlab {
namespace {

constexpr uint32_t kMul0 = 0xD2511F53u;
constexpr uint32_t kMul1 = 0xCD9E8D57u;
constexpr uint32_t kWeyl0 = 0x9E3779B9u;
constexpr uint32_t kWeyl1 = 0xBB67AE85u;

inline void MulHiLo(uint32_t a, uint32_t b, uint32_t* hi, uint32_t* lo) {
  uint64_t product = static_cast<uint64_t>(a) * b;
  *hi = static_cast<uint32_t>(product >> 32);
  *lo = static_cast<uint32_t>(product);
}

}  // namespace

std::array<uint32_t, 4> Philox4x32(std::array<uint32_t, 4> ctr, std::array<uint32_t, 2> key) {
  for (int round = 0; round < 10; ++round) {
    uint32_t hi0, lo0, hi1, lo1;
    MulHiLo(kMul0, ctr[0], &hi0, &lo0);
    MulHiLo(kMul1, ctr[2], &hi1, &lo1);
    ctr = {hi1 ^ ctr[1] ^ key[0], lo1, hi0 ^ ctr[3] ^ key[1], lo0};
    key[0] += kWeyl0;
    key[1] += kWeyl1;
  }
  return ctr;
}

uint64_t HashName(std::string_view name) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : name) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

RngStream::RngStream(uint64_t seed, RngPurpose purpose, uint64_t step)
    : key_{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)},
      purpose_(static_cast<uint32_t>(purpose)),
      step_(step) {}

std::array<uint32_t, 4> RngStream::Block(uint64_t block) const {
  // Counter layout: (block low bits, block high bits ^ purpose, step low bits,
  // step high bits). Each block yields 4 words.
  std::array<uint32_t, 4> ctr = {
      static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32) ^ (purpose_ << 24),
      static_cast<uint32_t>(step_), static_cast<uint32_t>(step_ >> 32)};
  return Philox4x32(ctr, key_);
}

uint32_t RngStream::Word(uint64_t index) const {
  index += word_offset_;
  return Block(index >> 2)[index & 3];
}

namespace {

constexpr int kLanes = 8;  // blocks computed side by side
// Below this many words Words draws block by block (four blocks cost about
// what one call of a kernel does).
constexpr uint64_t kFewestRunWords = 16;

// Eight 32-bit words, one per 64-bit lane: the lane products of two such
// vectors are the exact 32 x 32 -> 64-bit products.
typedef uint64_t Lanes __attribute__((vector_size(64)));

}  // namespace

namespace rng_internal {

// Philox4x32-10 of blocks [block, block + kLanes) of a stream whose counter
// words 1..3 are (block >> 32) ^ purpose_word, step_lo, step_hi: out gets
// their 4 * kLanes words in order, the same as Philox4x32 block by block.
// Portable (SSE2): the kernel for CPUs without AVX2.
void PhiloxLanesPortable(
    uint64_t block, uint32_t purpose_word, uint32_t step_lo, uint32_t step_hi, uint32_t key0, uint32_t key1,
    uint32_t* out) {
  const Lanes low = {0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu,
                     0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu};
  Lanes x0, x1;
  for (int l = 0; l < kLanes; ++l) {
    x0[l] = static_cast<uint32_t>(block + l);
    x1[l] = static_cast<uint32_t>((block + l) >> 32) ^ purpose_word;
  }
  Lanes x2 = low & step_lo, x3 = low & step_hi;
  uint64_t k0 = key0, k1 = key1;
  for (int round = 0; round < 10; ++round) {
    const Lanes p0 = (x0 & low) * kMul0;  // 32 x 32 bits: exact
    const Lanes p1 = (x2 & low) * kMul1;
    x0 = (p1 >> 32) ^ x1 ^ k0;
    x2 = (p0 >> 32) ^ x3 ^ k1;
    x1 = p1 & low;
    x3 = p0 & low;
    k0 = static_cast<uint32_t>(k0 + kWeyl0);
    k1 = static_cast<uint32_t>(k1 + kWeyl1);
  }
  for (int l = 0; l < kLanes; ++l) {
    out[4 * l] = static_cast<uint32_t>(x0[l]);
    out[4 * l + 1] = static_cast<uint32_t>(x1[l]);
    out[4 * l + 2] = static_cast<uint32_t>(x2[l]);
    out[4 * l + 3] = static_cast<uint32_t>(x3[l]);
  }
}

// PhiloxLanesPortable with AVX2 intrinsics: each 32 x 32 -> 64-bit product
// is one vpmuludq (GCC compiles the vector code above to a full 64 x 64
// product, three vpmuludq and shifts, as AVX2 has no 64-bit lane multiply). The
// lanes hold 64 bits of which only the low 32 are ever read (vpmuludq and
// the final store read those), so no mask is applied between rounds. Same
// words as Philox4x32, block by block (rng_test.cc).
__attribute__((target("avx2"))) void PhiloxLanesAvx2(uint64_t block, uint32_t purpose_word, uint32_t step_lo,
                                                     uint32_t step_hi, uint32_t key0, uint32_t key1,
                                                     uint32_t* out) {
  const __m256i mul0 = _mm256_set1_epi64x(kMul0), mul1 = _mm256_set1_epi64x(kMul1);
  const __m256i low = _mm256_set1_epi64x(0xFFFFFFFFll);
  constexpr int kHalves = kAvx2Blocks / 4;  // four blocks per 256-bit vector
  // Every vector in one round loop: their chains of multiplies interleave.
  __m256i x0[kHalves], x1[kHalves], x2[kHalves], x3[kHalves];
  const __m256i lane = _mm256_setr_epi64x(0, 1, 2, 3);
  for (int h = 0; h < kHalves; ++h) {
    // Block numbers b + l as 64-bit lanes (one add, no per-lane inserts):
    // the low word to x0, the high word ^ purpose to x1.
    const __m256i b = _mm256_add_epi64(_mm256_set1_epi64x(static_cast<long long>(block + 4 * h)), lane);
    x0[h] = _mm256_and_si256(b, low);
    x1[h] = _mm256_xor_si256(_mm256_srli_epi64(b, 32), _mm256_set1_epi64x(purpose_word));
    x2[h] = _mm256_set1_epi64x(step_lo);
    x3[h] = _mm256_set1_epi64x(step_hi);
  }
  uint32_t k0 = key0, k1 = key1;
  for (int round = 0; round < 10; ++round) {
    const __m256i key0v = _mm256_set1_epi64x(k0), key1v = _mm256_set1_epi64x(k1);
    for (int h = 0; h < kHalves; ++h) {
      const __m256i p0 = _mm256_mul_epu32(x0[h], mul0), p1 = _mm256_mul_epu32(x2[h], mul1);
      x0[h] = _mm256_xor_si256(_mm256_xor_si256(_mm256_srli_epi64(p1, 32), x1[h]), key0v);
      x2[h] = _mm256_xor_si256(_mm256_xor_si256(_mm256_srli_epi64(p0, 32), x3[h]), key1v);
      x1[h] = p1;
      x3[h] = p0;
    }
    k0 += kWeyl0;
    k1 += kWeyl1;
  }
  for (int h = 0; h < kHalves; ++h) {
    // Lane l's words x0..x3 to out[4 l .. 4 l + 3]: pair them into 64-bit
    // halves, interleave, and put lanes 0-1 and 2-3 in order.
    const __m256i x01 = _mm256_or_si256(_mm256_and_si256(x0[h], low), _mm256_slli_epi64(x1[h], 32));
    const __m256i x23 = _mm256_or_si256(_mm256_and_si256(x2[h], low), _mm256_slli_epi64(x3[h], 32));
    const __m256i even = _mm256_unpacklo_epi64(x01, x23), odd = _mm256_unpackhi_epi64(x01, x23);
    __m256i* dst = reinterpret_cast<__m256i*>(out + 16 * h);
    _mm256_storeu_si256(dst, _mm256_permute2x128_si256(even, odd, 0x20));
    _mm256_storeu_si256(dst + 1, _mm256_permute2x128_si256(even, odd, 0x31));
  }
}

// The same with AVX-512: eight blocks per 512-bit vector, four vectors (32
// blocks, 128 words) per call with their chains interleaved (eight
// independent multiplies a round hide their latency: 14% faster than two
// vectors in DropoutFactors on the Xeon of bench/README.md). Lane l of a
// vector holds block l's word in its low 32 bits, as in the AVX2 kernel.
// (GCC 12's _mm512_mul_epu32 and shuffles start from _mm512_undefined_*()
// and warn that it "may be used uninitialized" in some builds: a false
// positive in the header.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
__attribute__((target("avx512f"))) void PhiloxLanesAvx512(uint64_t block, uint32_t purpose_word,
                                                         uint32_t step_lo, uint32_t step_hi, uint32_t key0,
                                                         uint32_t key1, uint32_t* out) {
  const __m512i mul0 = _mm512_set1_epi64(kMul0), mul1 = _mm512_set1_epi64(kMul1);
  const __m512i low = _mm512_set1_epi64(0xFFFFFFFFll);
  constexpr int kHalves = kAvx512Blocks / 8;  // eight blocks per 512-bit vector
  const __m512i lane = _mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7);
  __m512i x0[kHalves], x1[kHalves], x2[kHalves], x3[kHalves];
  for (int h = 0; h < kHalves; ++h) {
    // Block numbers b + l as 64-bit lanes: the low word to x0, the high
    // word ^ purpose to x1 (the sum carries across 2^32 like the scalar one).
    const __m512i b = _mm512_add_epi64(_mm512_set1_epi64(static_cast<long long>(block + 8 * h)), lane);
    x0[h] = _mm512_and_si512(b, low);
    x1[h] = _mm512_xor_si512(_mm512_srli_epi64(b, 32), _mm512_set1_epi64(purpose_word));
    x2[h] = _mm512_set1_epi64(step_lo);
    x3[h] = _mm512_set1_epi64(step_hi);
  }
  uint32_t k0 = key0, k1 = key1;
  for (int round = 0; round < 10; ++round) {
    const __m512i key0v = _mm512_set1_epi64(k0), key1v = _mm512_set1_epi64(k1);
    for (int h = 0; h < kHalves; ++h) {
      // A product's high word to the low half by a word swap (vpshufd, on
      // the shuffle port while vpmuludq takes the other) instead of a shift;
      // the three-way xor is one vpternlogq (0x96: a ^ b ^ c). Only the low
      // words are read, so the garbage the swap leaves above is harmless.
      const __m512i p0 = _mm512_mul_epu32(x0[h], mul0), p1 = _mm512_mul_epu32(x2[h], mul1);
      x0[h] = _mm512_ternarylogic_epi64(_mm512_shuffle_epi32(p1, _MM_PERM_CDAB), x1[h], key0v, 0x96);
      x2[h] = _mm512_ternarylogic_epi64(_mm512_shuffle_epi32(p0, _MM_PERM_CDAB), x3[h], key1v, 0x96);
      x1[h] = p1;
      x3[h] = p0;
    }
    k0 += kWeyl0;
    k1 += kWeyl1;
  }
  // unpacklo/hi work per 128-bit lane: even holds blocks 0, 2, 4, 6 (four
  // words each), odd blocks 1, 3, 5, 7; two permutes put them in order.
  const __m512i first = _mm512_setr_epi64(0, 1, 8, 9, 2, 3, 10, 11);
  const __m512i second = _mm512_setr_epi64(4, 5, 12, 13, 6, 7, 14, 15);
  for (int h = 0; h < kHalves; ++h) {
    const __m512i x01 = _mm512_or_si512(_mm512_and_si512(x0[h], low), _mm512_slli_epi64(x1[h], 32));
    const __m512i x23 = _mm512_or_si512(_mm512_and_si512(x2[h], low), _mm512_slli_epi64(x3[h], 32));
    const __m512i even = _mm512_unpacklo_epi64(x01, x23), odd = _mm512_unpackhi_epi64(x01, x23);
    _mm512_storeu_si512(out + 32 * h, _mm512_permutex2var_epi64(even, first, odd));
    _mm512_storeu_si512(out + 32 * h + 16, _mm512_permutex2var_epi64(even, second, odd));
  }
}
#pragma GCC diagnostic pop

}  // namespace rng_internal

namespace {

using PhiloxLanesFn = void (*)(uint64_t, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t*);

// A kernel and the blocks it computes per call.
struct PhiloxLanes {
  PhiloxLanesFn kernel;
  uint64_t blocks;
};

// The AVX-512 kernel where the CPU has AVX-512F, else the AVX2 one where it
// has AVX2, else the portable one.
PhiloxLanes ChoosePhiloxLanes() {
  if (CpuHasAvx512f()) return {rng_internal::PhiloxLanesAvx512, rng_internal::kAvx512Blocks};
  if (CpuHasAvx2()) return {rng_internal::PhiloxLanesAvx2, rng_internal::kAvx2Blocks};
  return {rng_internal::PhiloxLanesPortable, kLanes};
}

}  // namespace

void RngStream::Words(uint64_t first, uint64_t n, uint32_t* out) const {
  first += word_offset_;
  static const PhiloxLanes philox_lanes = ChoosePhiloxLanes();
  const uint64_t run = 4 * philox_lanes.blocks;  // the words of one kernel call
  auto kernel = [&](uint64_t block, uint32_t* words) {
    philox_lanes.kernel(block, purpose_ << 24, static_cast<uint32_t>(step_), static_cast<uint32_t>(step_ >> 32),
                        key_[0], key_[1], words);
  };
  // Whole runs in place; part of a run (a row's first or last words, the
  // tiled attention's dropout draws a row of keys at a time) through a
  // buffer, one call: on the Xeon of bench/README.md a call of the AVX-512
  // kernel (128 words) cost 81 ns, a block drawn alone (4 words) 16, and
  // rows of 128 dropout factors took 3.7-4.1 ns a factor block by block
  // past their whole runs, 0.8-1.3 this way.
  uint32_t buffer[4 * std::max(rng_internal::kAvx2Blocks, rng_internal::kAvx512Blocks)];
  uint64_t i = 0;
  while (i < n) {
    const uint64_t index = first + i, lane = index & 3;
    if (n - i < kFewestRunWords) {  // a few words: block by block
      const std::array<uint32_t, 4> words = Block(index >> 2);
      for (uint64_t w = lane; w < 4 && i < n; ++w) out[i++] = words[w];
    } else if (lane == 0 && n - i >= run) {
      kernel(index >> 2, out + i);
      i += run;
    } else {
      kernel(index >> 2, buffer);
      const uint64_t take = std::min(run - lane, n - i);
      std::copy(buffer + lane, buffer + lane + take, out + i);
      i += take;
    }
  }
}

void RngStream::UniformFill(uint64_t first, uint64_t n, float* out) const {
  Words(first, n, reinterpret_cast<uint32_t*>(out));
  for (uint64_t i = 0; i < n; ++i) {
    uint32_t w = reinterpret_cast<uint32_t*>(out)[i];
    out[i] = static_cast<float>(w >> 8) * (1.0f / 16777216.0f);
  }
}

float RngStream::Uniform(uint64_t index) const {
  return static_cast<float>(Word(index) >> 8) * (1.0f / 16777216.0f);
}

namespace {
// Box-Muller on two words: u1 in (0, 1] so that log(u1) is finite.
float BoxMuller(uint32_t word1, uint32_t word2) {
  const double u1 = (static_cast<double>(word1 >> 8) + 1.0) / 16777216.0;
  const double u2 = static_cast<double>(word2 >> 8) / 16777216.0;
  return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2));
}
}  // namespace

float RngStream::Normal(uint64_t index) const { return BoxMuller(Word(2 * index), Word(2 * index + 1)); }

void RngStream::NormalFill(uint64_t first, uint64_t n, float* out) const {
  constexpr uint64_t kChunk = 4096;  // normals a Words call draws words for
  std::vector<uint32_t> words(2 * std::min(n, kChunk));
  for (uint64_t done = 0; done < n; done += kChunk) {
    const uint64_t count = std::min(kChunk, n - done);
    Words(2 * (first + done), 2 * count, words.data());  // host: random words
    for (uint64_t i = 0; i < count; ++i) out[done + i] = BoxMuller(words[2 * i], words[2 * i + 1]);
  }
}

RngStream RngStream::ForBatchRows(int64_t first_row, int64_t rows) const {
  RngStream shard = *this;
  shard.shard_first_row_ = first_row;
  shard.shard_rows_ = rows;
  return shard;
}

uint64_t RngStream::ShardFirstElement(int64_t numel) const {
  if (shard_rows_ <= 0) return 0;
  TVLAB_CHECK(numel % shard_rows_ == 0) << "a tensor of " << numel << " elements is not batch-major over "
                                        << shard_rows_ << " rows";
  return static_cast<uint64_t>(shard_first_row_) * static_cast<uint64_t>(numel / shard_rows_);
}

RngStream RngStream::SkipWords(uint64_t words) const {
  RngStream skipped = *this;
  skipped.word_offset_ += words;
  skipped.shard_first_row_ = skipped.shard_rows_ = 0;
  return skipped;
}

namespace {
// Word w mapped to [0, n) (UniformInt's map: the high half of w * n).
uint32_t ScaledToBound(uint32_t w, uint32_t n) { return static_cast<uint32_t>((static_cast<uint64_t>(w) * n) >> 32); }
}  // namespace

uint32_t RngStream::UniformInt(uint64_t index, uint32_t n) const { return ScaledToBound(Word(index), n); }

void RngStream::UniformInts(uint64_t first, uint64_t count, uint32_t n, int32_t* out) const {
  std::vector<uint32_t> words(count);  // host: the words, 4x cheaper in one call
  Words(first, count, words.data());  // host: random words
  for (uint64_t i = 0; i < count; ++i) out[i] = static_cast<int32_t>(ScaledToBound(words[i], n));
}

namespace {

// out[2 j], out[2 j + 1] = the factors of the low and high halves of
// words[j], for j < pairs. Indexed (no pointer walk) so that GCC vectorises
// it; cloned for AVX-512 and AVX2 (integer compares and selects: the same
// values).
TVLAB_CLONED_LOOP void FactorPairsLoop(const uint32_t* words, int64_t pairs, uint32_t threshold, float keep_scale,
                                       float* out) {
  for (int64_t j = 0; j < pairs; ++j) {
    out[2 * j] = (words[j] & 0xFFFFu) < threshold ? 0.0f : keep_scale;
    out[2 * j + 1] = (words[j] >> 16) < threshold ? 0.0f : keep_scale;
  }
}

void FactorPairs(const uint32_t* words, int64_t pairs, uint32_t threshold, float keep_scale, float* out) {
  RunIsaClone<FactorPairsLoop>(words, pairs, threshold, keep_scale, out);
}

}  // namespace

uint32_t DropoutThreshold(float p) { return static_cast<uint32_t>(std::lround(p * 65536.0f)); }
float DropoutKeepScale(float p) { return 1.0f / (1.0f - p); }

void DropoutFactors(const RngStream& stream, float p, uint64_t first, int64_t n, float* out,
                    std::vector<uint32_t>& words) {
  if (n <= 0) return;
  const uint64_t first_word = first >> 1, last_word = (first + n - 1) >> 1;
  words.resize(last_word - first_word + 1);
  stream.Words(first_word, words.size(), words.data());  // host: random words
  const uint32_t threshold = DropoutThreshold(p);
  const float keep_scale = DropoutKeepScale(p);
  // Element e is half (e & 1) of word e / 2: an odd first element is the
  // high half of words[0], then the elements go two per word.
  int64_t i = 0;
  const uint32_t* w = words.data();  // host: random words
  if (first & 1) {
    out[i++] = (*w++ >> 16) < threshold ? 0.0f : keep_scale;
  }
  const int64_t pairs = (n - i) / 2;
  FactorPairs(w, pairs, threshold, keep_scale, out + i);
  i += 2 * pairs;
  w += pairs;
  if (i < n) out[i] = (*w & 0xFFFFu) < threshold ? 0.0f : keep_scale;
}

}  // namespace tvlab
