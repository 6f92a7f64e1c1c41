// Scalar and vector element types, shared by the IR and the runtime (DLPack-compatible codes).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tyche {

class DataType {
 public:
  // Same numbering as DLPack's DLDataTypeCode, with bool as its own code.
  enum class Code : uint8_t {
    kInt = 0,
    kUInt = 1,
    kFloat = 2,
    kBFloat = 4,
    kBool = 6,
    kHandle = 3
  };

  constexpr DataType() = default;
  constexpr DataType(Code code, int bits, int lanes = 1)
      : code_(code), bits_(static_cast<uint8_t>(bits)), lanes_(static_cast<uint16_t>(lanes)) {}

  static constexpr DataType Int(int bits, int lanes = 1) { return {Code::kInt, bits, lanes}; }
  static constexpr DataType UInt(int bits, int lanes = 1) { return {Code::kUInt, bits, lanes}; }
  static constexpr DataType Float(int bits, int lanes = 1) { return {Code::kFloat, bits, lanes}; }
  static constexpr DataType BFloat16(int lanes = 1) { return {Code::kBFloat, 16, lanes}; }
  static constexpr DataType Bool(int lanes = 1) { return {Code::kBool, 1, lanes}; }
  static constexpr DataType Handle() { return {Code::kHandle, 64, 1}; }
  static constexpr DataType Void() { return {Code::kHandle, 0, 0}; }

  constexpr Code code() const { return code_; }
  constexpr int bits() const { return bits_; }
  constexpr int lanes() const { return lanes_; }
  constexpr int bytes() const { return (bits_ + 7) / 8; }

  constexpr bool is_int() const { return code_ == Code::kInt; }
  constexpr bool is_uint() const { return code_ == Code::kUInt; }
  constexpr bool is_integer() const { return is_int() || is_uint(); }
  // Integer or bool: values the interpreter keeps as exact integers.
  constexpr bool is_int_like() const { return is_integer() || is_bool(); }
  constexpr bool is_float() const { return code_ == Code::kFloat || code_ == Code::kBFloat; }
  constexpr bool is_bfloat16() const { return code_ == Code::kBFloat; }
  constexpr bool is_bool() const { return code_ == Code::kBool; }
  constexpr bool is_handle() const { return code_ == Code::kHandle && bits_ != 0; }
  constexpr bool is_void() const { return code_ == Code::kHandle && bits_ == 0; }
  constexpr bool is_scalar() const { return lanes_ == 1; }
  constexpr bool is_vector() const { return lanes_ > 1; }

  constexpr DataType element_of() const { return {code_, bits_, 1}; }
  constexpr DataType with_lanes(int lanes) const { return {code_, bits_, lanes}; }

  constexpr bool operator==(const DataType&) const = default;

  // "float32", "int64", "float32x8", "bool".
  std::string str() const;
  // Inverse of str(); throws InputError for an unknown name.
  static DataType parse(std::string_view name);

 private:
  Code code_ = Code::kHandle;
  uint8_t bits_ = 0;
  uint16_t lanes_ = 0;
};

inline constexpr DataType kInt32 = DataType::Int(32);
inline constexpr DataType kInt64 = DataType::Int(64);
inline constexpr DataType kFloat32 = DataType::Float(32);
inline constexpr DataType kFloat64 = DataType::Float(64);
inline constexpr DataType kBool = DataType::Bool();

}  // namespace tyche
