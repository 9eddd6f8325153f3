#include "framework/data/token_store/sha256.h"

#include <fstream>
#include <string>

#include "gtest/gtest.h"

namespace tvlab {
namespace {

// FIPS 180-4 / NIST example vectors.
TEST(Sha256, MatchesPublishedVectors) {
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(Sha256Hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, PiecewiseUpdatesEqualOneUpdate) {
  std::string text;
  for (int i = 0; i < 1000; ++i) text += static_cast<char>(i * 7);
  Sha256 pieces;
  for (size_t at = 0; at < text.size(); at += 37) pieces.Update(text.data() + at, std::min<size_t>(37, text.size() - at));
  EXPECT_EQ(pieces.HexDigest(), Sha256Hex(text));
}

TEST(Sha256, OfFileEqualsOfItsBytesAndNamesAMissingFile) {
  const std::string path = std::string(getenv("TEST_TMPDIR")) + "/sha_input";
  std::ofstream(path, std::ios::binary) << "hello\n";
  auto digest = Sha256OfFile(path);
  ASSERT_TRUE(digest.ok()) << digest.status();
  EXPECT_EQ(*digest, Sha256Hex("hello\n"));
  auto missing = Sha256OfFile(path + ".none");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("sha_input.none"), std::string::npos);
}

}  // namespace
}  // namespace tvlab
