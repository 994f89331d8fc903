// PickleDocument: plain data decoded from a Python pickle, read-only.
//
// Reads the opcode subset Python uses to pickle builtins (dict, list, tuple,
// str, int, float, bool, None) with protocols 2 to 5: enough for PyTorch
// memory snapshots. It never constructs objects or calls code: an opcode
// outside the subset (a class, a global, bytes) is an error naming its offset.
// Values live in one flat array, so shared and even self-referencing
// containers are cheap and safe.
//
//   TM_ASSIGN_OR_RETURN(PickleDocument doc,
//                       PickleDocument::Parse(bytes, "snap.pickle"));
//   std::optional<PickleValue> segments = doc.root().Find("segments");
//   for (size_t i = 0; segments && i < segments->size(); ++i) {
//     std::optional<int64_t> address = (*segments)[i].Find("address")->AsInt();
//   }
#ifndef TENSORMEM_TRACE_PICKLE_H_
#define TENSORMEM_TRACE_PICKLE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace tensormem {

class PickleDocument;

// A handle on one value of a PickleDocument; valid while the document lives.
class PickleValue {
 public:
  enum class Kind : uint8_t {
    kNone,
    kBool,
    kInt,
    kBigInt,  // an int outside int64's range; its value is not kept
    kFloat,
    kString,
    kList,
    kTuple,
    kDict,
  };

  Kind kind() const;
  // The number for kInt and kBool (Python's bool is an int), else nullopt.
  std::optional<int64_t> AsInt() const;
  std::optional<double> AsFloat() const;  // kFloat or kInt
  std::optional<std::string_view> AsString() const;
  std::optional<bool> AsBool() const;

  // Elements of a list or tuple, entries of a dict; 0 for other kinds.
  size_t size() const;
  // The i-th element of a list or tuple (i < size()).
  PickleValue operator[](size_t i) const;
  // The value under a string key of a dict (the last one when repeated), or
  // nullopt when this is not a dict or has no such key.
  std::optional<PickleValue> Find(std::string_view key) const;

 private:
  friend class PickleDocument;
  PickleValue(const PickleDocument* document, uint32_t index)
      : document_(document), index_(index) {}

  const PickleDocument* document_;
  uint32_t index_;
};

class PickleDocument {
 public:
  // Decodes `bytes`; `source` names the input in errors ("source: offset N:
  // what").
  static absl::StatusOr<PickleDocument> Parse(std::string bytes,
                                              std::string_view source);

  // The value the pickle's STOP returns.
  PickleValue root() const { return PickleValue(this, root_); }

 private:
  friend class PickleValue;
  friend class PickleParser;
  struct Node {
    PickleValue::Kind kind = PickleValue::Kind::kNone;
    int64_t integer = 0;  // kInt, kBool; string offset into bytes_ for kString
    double number = 0;    // kFloat
    uint64_t length = 0;  // kString byte length
    // kList, kTuple: element indices; kDict: key, value, key, value, ...
    std::vector<uint32_t> children;
  };

  std::string bytes_;
  std::vector<Node> nodes_;
  uint32_t root_ = 0;
};

}  // namespace tensormem

#endif  // TENSORMEM_TRACE_PICKLE_H_
