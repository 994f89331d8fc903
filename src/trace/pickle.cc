#include "tensormem/trace/pickle.h"

#include <bit>
#include <cstring>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_format.h"

namespace tensormem {

using Kind = PickleValue::Kind;

// Runs the pickle machine over the opcode subset: a stack of node indices,
// a list of MARK positions, and the memo.
class PickleParser {
 public:
  PickleParser(PickleDocument& document, std::string_view source)
      : document_(document), bytes_(document.bytes_), source_(source) {}

  absl::Status Run();

 private:
  absl::Status Error(std::string_view what) const {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: offset %d: %s", absl::string_view(source_.data(), source_.size()),
        opcode_offset_, absl::string_view(what.data(), what.size())));
  }
  // Reads `count` bytes as a little-endian unsigned integer.
  bool ReadUnsigned(size_t count, uint64_t& value) {
    if (bytes_.size() - position_ < count) return false;
    value = 0;
    for (size_t i = 0; i < count; ++i) {
      value |= uint64_t{static_cast<uint8_t>(bytes_[position_ + i])} << (8 * i);
    }
    position_ += count;
    return true;
  }
  uint32_t NewNode(Kind kind) {
    document_.nodes_.emplace_back();
    document_.nodes_.back().kind = kind;
    return static_cast<uint32_t>(document_.nodes_.size() - 1);
  }
  void Push(uint32_t node) { stack_.push_back(node); }
  absl::Status PushString(uint64_t length);
  absl::Status PushLong(uint64_t length);
  absl::Status PopMark(size_t& mark);
  absl::Status BuildTuple(size_t first, size_t count);
  absl::Status AddToList(size_t target, size_t first);
  absl::Status AddToDict(size_t target, size_t first);
  absl::Status Step(uint8_t opcode, bool& stop);

  PickleDocument& document_;
  const std::string& bytes_;
  std::string_view source_;
  size_t position_ = 0;
  size_t opcode_offset_ = 0;
  std::vector<uint32_t> stack_;
  std::vector<size_t> marks_;
  absl::flat_hash_map<uint64_t, uint32_t> memo_;
};

absl::Status PickleParser::Run() {
  // Each opcode adds at most one node, so nodes never outnumber input bytes.
  while (position_ < bytes_.size()) {
    opcode_offset_ = position_;
    const auto opcode = static_cast<uint8_t>(bytes_[position_++]);
    bool stop = false;
    if (absl::Status status = Step(opcode, stop); !status.ok()) return status;
    if (stop) {
      if (stack_.size() != 1)
        return Error("STOP with a stack that is not one value");
      document_.root_ = stack_.back();
      return absl::OkStatus();
    }
  }
  opcode_offset_ = position_;
  return Error("truncated: the pickle ends without STOP");
}

absl::Status PickleParser::PushString(uint64_t length) {
  if (bytes_.size() - position_ < length) return Error("truncated string");
  const uint32_t node = NewNode(Kind::kString);
  document_.nodes_[node].integer = static_cast<int64_t>(position_);
  document_.nodes_[node].length = length;
  position_ += length;
  Push(node);
  return absl::OkStatus();
}

absl::Status PickleParser::PushLong(uint64_t length) {
  if (bytes_.size() - position_ < length) return Error("truncated integer");
  // Little-endian two's complement; fits int64 when the bytes past the eighth
  // only repeat the sign.
  const auto* data =
      reinterpret_cast<const uint8_t*>(bytes_.data() + position_);
  const bool negative = length > 0 && (data[length - 1] & 0x80) != 0;
  uint64_t value = negative ? ~uint64_t{0} : 0;
  bool fits = true;
  for (uint64_t i = 0; i < length; ++i) {
    if (i < 8) {
      value &= ~(uint64_t{0xff} << (8 * i));
      value |= uint64_t{data[i]} << (8 * i);
    } else if (data[i] != (negative ? 0xff : 0x00)) {
      fits = false;
    }
  }
  // The eighth byte's sign bit must agree with the number's sign.
  if (length > 8 && ((value >> 63) != 0) != negative) fits = false;
  position_ += length;
  const uint32_t node = NewNode(fits ? Kind::kInt : Kind::kBigInt);
  document_.nodes_[node].integer = static_cast<int64_t>(value);
  Push(node);
  return absl::OkStatus();
}

absl::Status PickleParser::PopMark(size_t& mark) {
  if (marks_.empty()) return Error("no MARK before this opcode");
  mark = marks_.back();
  marks_.pop_back();
  return absl::OkStatus();
}

absl::Status PickleParser::BuildTuple(size_t first, size_t count) {
  const uint32_t node = NewNode(Kind::kTuple);
  document_.nodes_[node].children.assign(stack_.begin() + first,
                                         stack_.begin() + first + count);
  stack_.resize(first);
  Push(node);
  return absl::OkStatus();
}

absl::Status PickleParser::AddToList(size_t target, size_t first) {
  PickleDocument::Node& list = document_.nodes_[stack_[target]];
  if (list.kind != Kind::kList)
    return Error("APPEND to a value that is not a list");
  list.children.insert(list.children.end(), stack_.begin() + first,
                       stack_.end());
  stack_.resize(first);
  return absl::OkStatus();
}

absl::Status PickleParser::AddToDict(size_t target, size_t first) {
  if ((stack_.size() - first) % 2 != 0)
    return Error("SETITEMS with an odd number of values");
  PickleDocument::Node& dict = document_.nodes_[stack_[target]];
  if (dict.kind != Kind::kDict)
    return Error("SETITEM on a value that is not a dict");
  dict.children.insert(dict.children.end(), stack_.begin() + first,
                       stack_.end());
  stack_.resize(first);
  return absl::OkStatus();
}

absl::Status PickleParser::Step(uint8_t opcode, bool& stop) {
  uint64_t argument = 0;
  auto read = [&](size_t count) {
    return ReadUnsigned(count, argument) ? absl::OkStatus()
                                         : Error("truncated argument");
  };
  auto need = [&](size_t count) {
    return stack_.size() >= count + (marks_.empty() ? 0 : marks_.back())
               ? absl::OkStatus()
               : Error(absl::StrFormat(
                     "opcode 0x%02x needs %d values on the stack", opcode,
                     count));
  };
#define TM_PICKLE_TRY(expr) \
  if (absl::Status s_ = (expr); !s_.ok()) return s_
  switch (opcode) {
    case 0x80:  // PROTO
      TM_PICKLE_TRY(read(1));
      if (argument > 5)
        return Error(absl::StrFormat("unsupported protocol %d", argument));
      return absl::OkStatus();
    case 0x95:  // FRAME: a length hint only
      return read(8);
    case '}':
      Push(NewNode(Kind::kDict));
      return absl::OkStatus();
    case ']':
      Push(NewNode(Kind::kList));
      return absl::OkStatus();
    case ')':
      Push(NewNode(Kind::kTuple));
      return absl::OkStatus();
    case '(':  // MARK
      marks_.push_back(stack_.size());
      return absl::OkStatus();
    case 's':  // SETITEM
      TM_PICKLE_TRY(need(3));
      return AddToDict(stack_.size() - 3, stack_.size() - 2);
    case 'u': {  // SETITEMS
      size_t mark = 0;
      TM_PICKLE_TRY(PopMark(mark));
      if (mark == 0) return Error("SETITEMS without a dict below its MARK");
      return AddToDict(mark - 1, mark);
    }
    case 'a':  // APPEND
      TM_PICKLE_TRY(need(2));
      return AddToList(stack_.size() - 2, stack_.size() - 1);
    case 'e': {  // APPENDS
      size_t mark = 0;
      TM_PICKLE_TRY(PopMark(mark));
      if (mark == 0) return Error("APPENDS without a list below its MARK");
      return AddToList(mark - 1, mark);
    }
    case 0x8c:  // SHORT_BINUNICODE
      TM_PICKLE_TRY(read(1));
      return PushString(argument);
    case 'X':  // BINUNICODE
      TM_PICKLE_TRY(read(4));
      return PushString(argument);
    case 0x8d:  // BINUNICODE8
      TM_PICKLE_TRY(read(8));
      return PushString(argument);
    case 'J': {  // BININT: signed 32-bit
      TM_PICKLE_TRY(read(4));
      const uint32_t node = NewNode(Kind::kInt);
      document_.nodes_[node].integer =
          static_cast<int32_t>(static_cast<uint32_t>(argument));
      Push(node);
      return absl::OkStatus();
    }
    case 'K':    // BININT1
    case 'M': {  // BININT2
      TM_PICKLE_TRY(read(opcode == 'K' ? 1 : 2));
      const uint32_t node = NewNode(Kind::kInt);
      document_.nodes_[node].integer = static_cast<int64_t>(argument);
      Push(node);
      return absl::OkStatus();
    }
    case 0x8a:  // LONG1
      TM_PICKLE_TRY(read(1));
      return PushLong(argument);
    case 0x8b:  // LONG4
      TM_PICKLE_TRY(read(4));
      return PushLong(argument);
    case 'G': {  // BINFLOAT: big-endian IEEE double
      if (bytes_.size() - position_ < 8) return Error("truncated float");
      uint64_t bits = 0;
      for (int i = 0; i < 8; ++i)
        bits = bits << 8 | static_cast<uint8_t>(bytes_[position_ + i]);
      position_ += 8;
      const uint32_t node = NewNode(Kind::kFloat);
      document_.nodes_[node].number = std::bit_cast<double>(bits);
      Push(node);
      return absl::OkStatus();
    }
    case 0x88:    // NEWTRUE
    case 0x89: {  // NEWFALSE
      const uint32_t node = NewNode(Kind::kBool);
      document_.nodes_[node].integer = opcode == 0x88 ? 1 : 0;
      Push(node);
      return absl::OkStatus();
    }
    case 'N':
      Push(NewNode(Kind::kNone));
      return absl::OkStatus();
    case 0x85:  // TUPLE1
    case 0x86:  // TUPLE2
    case 0x87:  // TUPLE3
      TM_PICKLE_TRY(need(opcode - 0x84));
      return BuildTuple(stack_.size() - (opcode - 0x84), opcode - 0x84);
    case 't': {  // TUPLE
      size_t mark = 0;
      TM_PICKLE_TRY(PopMark(mark));
      return BuildTuple(mark, stack_.size() - mark);
    }
    case 0x94:  // MEMOIZE
      TM_PICKLE_TRY(need(1));
      memo_[memo_.size()] = stack_.back();
      return absl::OkStatus();
    case 'q':  // BINPUT
    case 'r':  // LONG_BINPUT
      TM_PICKLE_TRY(read(opcode == 'q' ? 1 : 4));
      TM_PICKLE_TRY(need(1));
      memo_[argument] = stack_.back();
      return absl::OkStatus();
    case 'h':    // BINGET
    case 'j': {  // LONG_BINGET
      TM_PICKLE_TRY(read(opcode == 'h' ? 1 : 4));
      auto it = memo_.find(argument);
      if (it == memo_.end())
        return Error(absl::StrFormat("memo key %d was never stored", argument));
      Push(it->second);
      return absl::OkStatus();
    }
    case '.':  // STOP
      stop = true;
      return absl::OkStatus();
    default:
      return Error(
          absl::StrFormat("unsupported pickle opcode 0x%02x (only plain "
                          "dict/list/tuple/str/int/float/bool/None "
                          "data is read)",
                          opcode));
  }
#undef TM_PICKLE_TRY
}

absl::StatusOr<PickleDocument> PickleDocument::Parse(std::string bytes,
                                                     std::string_view source) {
  PickleDocument document;
  document.bytes_ = std::move(bytes);
  PickleParser parser(document, source);
  if (absl::Status status = parser.Run(); !status.ok()) return status;
  return document;
}

PickleValue::Kind PickleValue::kind() const {
  return document_->nodes_[index_].kind;
}

std::optional<int64_t> PickleValue::AsInt() const {
  const PickleDocument::Node& node = document_->nodes_[index_];
  if (node.kind != Kind::kInt && node.kind != Kind::kBool) return std::nullopt;
  return node.integer;
}

std::optional<double> PickleValue::AsFloat() const {
  const PickleDocument::Node& node = document_->nodes_[index_];
  if (node.kind == Kind::kFloat) return node.number;
  if (node.kind == Kind::kInt) return static_cast<double>(node.integer);
  return std::nullopt;
}

std::optional<std::string_view> PickleValue::AsString() const {
  const PickleDocument::Node& node = document_->nodes_[index_];
  if (node.kind != Kind::kString) return std::nullopt;
  return std::string_view(document_->bytes_).substr(node.integer, node.length);
}

std::optional<bool> PickleValue::AsBool() const {
  const PickleDocument::Node& node = document_->nodes_[index_];
  if (node.kind != Kind::kBool) return std::nullopt;
  return node.integer != 0;
}

size_t PickleValue::size() const {
  const PickleDocument::Node& node = document_->nodes_[index_];
  switch (node.kind) {
    case Kind::kList:
    case Kind::kTuple:
      return node.children.size();
    case Kind::kDict:
      return node.children.size() / 2;
    default:
      return 0;
  }
}

PickleValue PickleValue::operator[](size_t i) const {
  return PickleValue(document_, document_->nodes_[index_].children[i]);
}

std::optional<PickleValue> PickleValue::Find(std::string_view key) const {
  const PickleDocument::Node& node = document_->nodes_[index_];
  if (node.kind != Kind::kDict) return std::nullopt;
  for (size_t i = node.children.size(); i >= 2; i -= 2) {
    const PickleValue candidate(document_, node.children[i - 2]);
    if (candidate.AsString() == key)
      return PickleValue(document_, node.children[i - 1]);
  }
  return std::nullopt;
}

}  // namespace tensormem
