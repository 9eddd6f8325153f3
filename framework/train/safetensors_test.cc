// The safetensors reader does not trust the file: every malformed header,
// every inconsistent offset and every non-finite value is a Status naming the
// file and the tensor, never an abort, a hang or a silently wrong tensor.

#include "framework/train/safetensors.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "framework/train/checkpoint.h"
#include "framework/train/test_optimizer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

using ::testing::HasSubstr;

std::string TmpPath(const std::string& name) {
  return std::string(getenv("TEST_TMPDIR")) + "/" + name;
}

// A file of an 8-byte little-endian header length, `header`, then `data`.
std::string Craft(const std::string& name, const std::string& header, const std::string& data) {
  std::string path = TmpPath(name);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out.put(static_cast<char>(n >> (8 * i)));
  out << header << data;
  return path;
}

std::string Floats(std::vector<float> v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

// The message of reading `path`, which must fail.
std::string Error(const std::string& path) {
  auto r = ReadSafetensors(path);
  EXPECT_FALSE(r.ok()) << path;
  return r.ok() ? "" : std::string(r.status().message());
}

// A one-tensor header.
std::string One(const std::string& shape, const std::string& offsets, const std::string& dtype = "F32") {
  return "{\"w\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape + ",\"data_offsets\":" + offsets + "}}";
}

TEST(SafetensorsReader, RoundTripsWhatItWrites) {
  std::string path = TmpPath("ok.safetensors");
  std::vector<std::pair<std::string, Var>> t;
  t.emplace_back("a", Var(Tensor::FromVector({2, 3}, {0, 1, 2, 3, 4, 5})));
  t.emplace_back("b", Var(Tensor::FromVector({1}, {-7})));
  t.emplace_back("empty", Var(Tensor::Zeros({0, 4})));
  ASSERT_TRUE(WriteSafetensors(path, t).ok());
  auto r = ReadSafetensors(path);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->at("a").ToVector(), (std::vector<float>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(r->at("b").ToVector(), (std::vector<float>{-7}));
  EXPECT_EQ(r->at("empty").shape(), (Shape{0, 4}));
}

TEST(SafetensorsReader, NegativeDimensionsWhoseProductMatchesAreRefused) {
  std::string m = Error(Craft("neg.safetensors", One("[-2,-2]", "[0,16]"), Floats({1, 2, 3, 4})));
  EXPECT_THAT(m, HasSubstr("neg.safetensors"));
  EXPECT_THAT(m, HasSubstr("tensor 'w' has dimension -2"));
  m = Error(Craft("neg0.safetensors", One("[-1,0]", "[0,0]"), ""));
  EXPECT_THAT(m, HasSubstr("tensor 'w' has dimension -1"));
}

TEST(SafetensorsReader, HugeAndNonIntegerDimensionsAreRefused) {
  EXPECT_THAT(Error(Craft("e300.safetensors", One("[1e300]", "[0,4]"), Floats({1}))),
              HasSubstr("tensor 'w' has dimension 1e+300"));
  EXPECT_THAT(Error(Craft("frac.safetensors", One("[2.5]", "[0,10]"), Floats({1, 2, 3}).substr(0, 10))),
              HasSubstr("tensor 'w' has dimension 2.5"));
  EXPECT_THAT(Error(Craft("str.safetensors", One("[\"4\"]", "[0,16]"), Floats({1, 2, 3, 4}))),
              HasSubstr("tensor 'w' has dimension \"4\""));
  // Each dimension is in range; the product overflows int64 (2^96).
  EXPECT_THAT(Error(Craft("ovf.safetensors", One("[4294967296,4294967296,4294967296]", "[0,16]"),
                          Floats({1, 2, 3, 4}))),
              HasSubstr("more than the 16 data bytes hold"));
  // A huge dimension next to a zero one: no data, but strides would overflow.
  EXPECT_THAT(Error(Craft("zhuge.safetensors", One("[0,1099511627776,1099511627776]", "[0,0]"), "")),
              HasSubstr("tensor 'w' has shape"));
}

TEST(SafetensorsReader, NonFiniteValuesAreRefusedWithTheTensorName) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  std::string m = Error(Craft("nan.safetensors", One("[3]", "[0,12]"), Floats({1, nan, 3})));
  EXPECT_THAT(m, HasSubstr("nan.safetensors: tensor 'w' holds NaN at element 1 of 3"));
  m = Error(Craft("inf.safetensors", One("[2]", "[0,8]"), Floats({-inf, 3})));
  EXPECT_THAT(m, HasSubstr("tensor 'w' holds an infinite value at element 0"));
}

TEST(SafetensorsReader, NonRegularFilesAreRefusedWithoutReading) {
  // /dev/zero used to be read without end.
  EXPECT_THAT(Error("/dev/zero"), HasSubstr("'/dev/zero' is not a regular file"));
  EXPECT_THAT(Error(getenv("TEST_TMPDIR")), HasSubstr("is not a regular file but a directory"));
  EXPECT_THAT(Error(TmpPath("absent.safetensors")), HasSubstr("cannot read"));
}

TEST(SafetensorsReader, HeaderLengthIsBounded) {
  // Longer than the file.
  std::string path = Craft("long.safetensors", "{}", "");
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.put(static_cast<char>(0xff));
    f.seekp(7);
    f.put(static_cast<char>(0x7f));
  }
  EXPECT_THAT(Error(path), HasSubstr("bytes in a file of 10 (truncated?)"));
  // Within a (sparse) file, but above the bound: refused before allocating.
  std::string big = Craft("big.safetensors", "", "");
  ASSERT_EQ(truncate(big.c_str(), 300 << 20), 0);
  {
    std::fstream f(big, std::ios::in | std::ios::out | std::ios::binary);
    uint64_t n = 200 << 20;
    for (int i = 0; i < 8; ++i) f.put(static_cast<char>(n >> (8 * i)));
  }
  EXPECT_THAT(Error(big), HasSubstr("header of 209715200 bytes (at most 104857600)"));
  std::filesystem::remove(big);
  std::ofstream(TmpPath("short.safetensors")) << "abc";
  EXPECT_THAT(Error(TmpPath("short.safetensors")), HasSubstr("only 3 bytes"));
}

TEST(SafetensorsReader, MalformedHeadersAreRefused) {
  EXPECT_THAT(Error(Craft("notjson.safetensors", "{\"w\": [", "")), HasSubstr("the header is not a JSON object"));
  EXPECT_THAT(Error(Craft("array.safetensors", "[1,2]", "")), HasSubstr("the header is not a JSON object"));
  EXPECT_THAT(Error(Craft("entry.safetensors", "{\"w\": 3}", "")), HasSubstr("tensor 'w' is not a JSON object"));
  EXPECT_THAT(Error(Craft("nodtype.safetensors", "{\"w\":{\"shape\":[1],\"data_offsets\":[0,4]}}", Floats({1}))),
              HasSubstr("tensor 'w' lacks dtype"));
  std::string m = Error(Craft("f16.safetensors", One("[2]", "[0,4]", "F16"), "abcd"));
  EXPECT_THAT(m, HasSubstr("f16.safetensors: tensor 'w' has dtype F16; tvlab reads F32"));
}

TEST(SafetensorsReader, OffsetsMustTileTheData) {
  EXPECT_THAT(Error(Craft("range.safetensors", One("[2]", "[8,16]"), Floats({1, 2}))),
              HasSubstr("tensor 'w' has data_offsets [8, 16] outside the 8 data bytes"));
  EXPECT_THAT(Error(Craft("negoff.safetensors", One("[1]", "[-4,0]"), Floats({1}))),
              HasSubstr("tensor 'w' has data_offsets [-4, 0]"));
  EXPECT_THAT(Error(Craft("mismatch.safetensors", One("[3]", "[0,8]"), Floats({1, 2, 3, 4}))),
              HasSubstr("but shape (3) needs 12"));
  const std::string two =
      "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
      "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}";
  EXPECT_THAT(Error(Craft("overlap.safetensors", two, Floats({1, 2, 3}))),
              HasSubstr("tensor 'b' (bytes [4, 12)) overlaps tensor 'a'"));
  EXPECT_THAT(Error(Craft("hole.safetensors", One("[1]", "[4,8]"), Floats({1, 2}))),
              HasSubstr("bytes [0, 4) between the start of the data and tensor 'w' belong to no tensor"));
  EXPECT_THAT(Error(Craft("tail.safetensors", One("[1]", "[0,4]"), Floats({1, 2}))),
              HasSubstr("bytes [4, 8) after tensor 'w' belong to no tensor"));
}

TEST(SafetensorsReader, InMemoryEntryPointAgreesWithTheFileReader) {
  std::string path = Craft("mem.safetensors", One("[-2,-2]", "[0,16]"), Floats({1, 2, 3, 4}));
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto r = ParseSafetensors(bytes.data(), bytes.size(), "buffer");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("buffer: not a valid safetensors file: tensor 'w'"));
  EXPECT_FALSE(ParseSafetensors(bytes.data(), 5, "buffer").ok());
}

NamedVars Params(float base) {
  NamedVars p;
  p.emplace_back("a.weight", Var(Tensor::FromVector({2, 3}, {base, 1, 2, 3, 4, 5}), true));
  p.emplace_back("a.bias", Var(Tensor::FromVector({3}, {base, -1, -2}), true));
  return p;
}

TEST(SafetensorsReader, MissingExtraAndMisShapedTensorsAreNamed) {
  std::string path = TmpPath("strict.safetensors");
  NamedVars saved = Params(1);
  saved.pop_back();
  ASSERT_TRUE(WriteSafetensors(path, saved).ok());
  NamedVars p = Params(9);
  EXPECT_THAT(std::string(LoadWeights(path, p).message()), HasSubstr("has no tensor 'a.bias'"));
  saved = Params(1);
  saved.emplace_back("extra", Var(Tensor::Zeros({1})));
  ASSERT_TRUE(WriteSafetensors(path, saved).ok());
  EXPECT_THAT(std::string(LoadWeights(path, p).message()), HasSubstr("has tensor 'extra'"));
  saved = Params(1);
  saved[1].second = Var(Tensor::Zeros({4}));
  ASSERT_TRUE(WriteSafetensors(path, saved).ok());
  EXPECT_THAT(std::string(LoadWeights(path, p).message()),
              HasSubstr("tensor 'a.bias' has shape (4) but the model expects (3)"));
  EXPECT_EQ(p[0].second.value().ToVector()[0], 9);  // untouched
}

TEST(Checkpoint, CorruptOptimizerStateLeavesTheWeightsUntouched) {
  std::string run = TmpPath("corrupt_opt");
  std::filesystem::remove_all(run);
  NamedVars p = Params(7);
  auto opt = MakeAdamW(p);
  TrainState state;
  state.set_next_step(3);
  ASSERT_TRUE(SaveCheckpoint(run, state, p, *opt, "name: \"x\"\n").ok());
  auto dir = LatestCheckpoint(run);
  ASSERT_TRUE(dir.ok());
  std::ofstream(*dir + "/optimizer.safetensors", std::ios::trunc) << "garbage!";
  NamedVars q = Params(0);
  auto opt2 = MakeAdamW(q);
  auto loaded = LoadCheckpoint(*dir, q, opt2.get());
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(std::string(loaded.status().message()), HasSubstr("optimizer.safetensors"));
  EXPECT_EQ(q[0].second.value().ToVector()[0], 0) << "weights were loaded before the optimizer failed";
}

}  // namespace
}  // namespace tvlab
