#include "tensormem/trace/pickle.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tensormem {
namespace {

using ::testing::HasSubstr;
using Kind = PickleValue::Kind;

std::string Bytes(std::initializer_list<int> values) {
  std::string out;
  for (int value : values) out.push_back(static_cast<char>(value));
  return out;
}

std::string ErrorOf(const std::string& bytes) {
  absl::StatusOr<PickleDocument> document =
      PickleDocument::Parse(bytes, "p.pickle");
  EXPECT_FALSE(document.ok());
  return document.ok() ? "" : std::string(document.status().message());
}

// LONG1 with the given little-endian bytes, then STOP.
absl::StatusOr<PickleDocument> Long1(std::initializer_list<int> digits) {
  std::string bytes = Bytes({0x80, 2, 0x8a, static_cast<int>(digits.size())});
  bytes += Bytes(digits);
  bytes += ".";
  return PickleDocument::Parse(bytes, "long");
}

TEST(PickleTest, ReadsNestedContainersStringsAndScalars) {
  // pickle.dumps({"xs": [1, -2, 300, 70000], "t": (None, True, 1.5), "s": "é"},
  // protocol=2), written out by hand.
  std::string bytes = Bytes({0x80, 0x02, '}', '('});
  bytes += Bytes({'X', 2, 0, 0, 0}) + "xs";
  bytes += Bytes({']', '(', 'K', 1, 'J', 0xfe, 0xff, 0xff, 0xff, 'M', 0x2c,
                  0x01, 'J', 0x70, 0x11, 0x01, 0x00, 'e'});
  bytes += Bytes({0x8c, 1}) + "t";
  bytes += Bytes({'N', 0x88, 'G', 0x3f, 0xf8, 0, 0, 0, 0, 0, 0, 0x87});
  bytes += Bytes({'X', 1, 0, 0, 0}) + "s";
  bytes += Bytes({'X', 2, 0, 0, 0, 0xc3, 0xa9, 'u', '.'});
  absl::StatusOr<PickleDocument> document =
      PickleDocument::Parse(bytes, "test");
  ASSERT_TRUE(document.ok()) << document.status();
  const PickleValue root = document->root();
  ASSERT_EQ(root.kind(), Kind::kDict);
  EXPECT_EQ(root.size(), 3);
  std::optional<PickleValue> xs = root.Find("xs");
  ASSERT_TRUE(xs.has_value());
  ASSERT_EQ(xs->size(), 4);
  EXPECT_EQ((*xs)[0].AsInt(), 1);
  EXPECT_EQ((*xs)[1].AsInt(), -2);
  EXPECT_EQ((*xs)[2].AsInt(), 300);
  EXPECT_EQ((*xs)[3].AsInt(), 70000);
  std::optional<PickleValue> t = root.Find("t");
  ASSERT_TRUE(t.has_value());
  ASSERT_EQ(t->kind(), Kind::kTuple);
  EXPECT_EQ((*t)[0].kind(), Kind::kNone);
  EXPECT_EQ((*t)[1].AsBool(), true);
  EXPECT_EQ((*t)[2].AsFloat(), 1.5);
  EXPECT_EQ(root.Find("s")->AsString(), "\xc3\xa9");
  EXPECT_FALSE(root.Find("missing").has_value());
  EXPECT_FALSE((*xs)[0].AsString().has_value());
}

TEST(PickleTest, MemoSharesContainersMutatedLater) {
  // outer = [], inner = [] (memoized), outer.append(inner), then BINGET
  // inner and append 7 to it; TUPLE2 returns (outer, inner).
  const std::string bytes = Bytes(
      {0x80, 4, ']', 0x94, ']', 0x94, 'a', 'h', 1, 'K', 7, 'a', 0x86, '.'});
  absl::StatusOr<PickleDocument> document =
      PickleDocument::Parse(bytes, "memo");
  ASSERT_TRUE(document.ok()) << document.status();
  const PickleValue pair = document->root();
  ASSERT_EQ(pair.size(), 2);
  const PickleValue outer = pair[0];
  ASSERT_EQ(outer.size(), 1);
  ASSERT_EQ(outer[0].size(), 1);  // the append through the memo is visible
  EXPECT_EQ(outer[0][0].AsInt(), 7);
}

TEST(PickleTest, SelfReferenceIsHarmless) {
  // l = []; l.append(l): EMPTY_LIST, BINPUT 0, BINGET 0, APPEND, STOP.
  absl::StatusOr<PickleDocument> document = PickleDocument::Parse(
      Bytes({0x80, 2, ']', 'q', 0, 'h', 0, 'a', '.'}), "self");
  ASSERT_TRUE(document.ok()) << document.status();
  EXPECT_EQ(document->root()[0][0][0].size(), 1);
}

TEST(PickleTest, LongIntegersInAndOutOfRange) {
  EXPECT_EQ(Long1({0xff})->root().AsInt(), -1);
  EXPECT_EQ(Long1({0x00, 0x80, 0x00})->root().AsInt(), 32768);
  EXPECT_EQ(Long1({0x00, 0x80})->root().AsInt(), -32768);
  EXPECT_EQ(
      Long1({0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f})->root().AsInt(),
      INT64_MAX);
  EXPECT_EQ(Long1({0, 0, 0, 0, 0, 0, 0, 0x80})->root().AsInt(), INT64_MIN);
  EXPECT_EQ(Long1({})->root().AsInt(), 0);
  // 2^63 needs a ninth byte: kept as a big int without a value.
  EXPECT_EQ(Long1({0, 0, 0, 0, 0, 0, 0, 0x80, 0x00})->root().kind(),
            Kind::kBigInt);
  EXPECT_FALSE(
      Long1({0, 0, 0, 0, 0, 0, 0, 0x80, 0x00})->root().AsInt().has_value());
  EXPECT_EQ(Long1({0, 0, 0, 0, 0, 0, 0, 0, 0, 1})->root().kind(),
            Kind::kBigInt);
  // Sign-extension bytes past the eighth still fit.
  EXPECT_EQ(Long1({0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
                ->root()
                .AsInt(),
            -2);
}

TEST(PickleTest, MalformedInputIsAnErrorWithItsOffset) {
  EXPECT_THAT(ErrorOf(Bytes({0x80, 2, 'c'}) + "os\nsystem\n"),
              HasSubstr("p.pickle: offset 2: unsupported pickle opcode 0x63"));
  EXPECT_THAT(ErrorOf(Bytes({0x80, 2, ']'})), HasSubstr("offset 3: truncated"));
  EXPECT_THAT(ErrorOf(Bytes({0x80, 2, 'X', 9, 0, 0, 0}) + "ab"),
              HasSubstr("offset 2: truncated string"));
  EXPECT_THAT(ErrorOf(Bytes({0x80, 2, 'J', 1})),
              HasSubstr("offset 2: truncated argument"));
  EXPECT_THAT(ErrorOf(Bytes({0x80, 2, 'h', 5, '.'})),
              HasSubstr("offset 2: memo key 5 was never"));
  EXPECT_THAT(ErrorOf(Bytes({0x80, 2, 'K', 1, 'K', 2, 'a', '.'})),
              HasSubstr("offset 6: APPEND to a value that is not a list"));
  EXPECT_THAT(ErrorOf(Bytes({0x80, 2, ']', 'a', '.'})),
              HasSubstr("offset 3: opcode 0x61 needs 2"));
  EXPECT_THAT(ErrorOf(Bytes({0x80, 2, 'K', 1, 'K', 2, '.'})),
              HasSubstr("offset 6: STOP with a stack that is not one value"));
  EXPECT_THAT(ErrorOf(Bytes({0x80, 2, 'e', '.'})),
              HasSubstr("offset 2: no MARK"));
  EXPECT_THAT(ErrorOf(Bytes({0x80, 2, '}', '(', 'K', 1, 'u', '.'})),
              HasSubstr("offset 6: SETITEMS with an odd number"));
  EXPECT_THAT(ErrorOf(Bytes({0x80, 9, '.'})),
              HasSubstr("offset 0: unsupported protocol 9"));
  EXPECT_THAT(ErrorOf(""), HasSubstr("offset 0: truncated"));
}

}  // namespace
}  // namespace tensormem
