#include "support/dtype.h"

#include <charconv>

#include "support/error.h"

namespace tyche {

std::string DataType::str() const {
  if (is_void()) return "void";
  if (is_handle()) return "handle";
  std::string base;
  switch (code_) {
    case Code::kInt:
      base = fmt::format("int{}", bits_);
      break;
    case Code::kUInt:
      base = fmt::format("uint{}", bits_);
      break;
    case Code::kFloat:
      base = fmt::format("float{}", bits_);
      break;
    case Code::kBFloat:
      base = "bfloat16";
      break;
    case Code::kBool:
      base = "bool";
      break;
    case Code::kHandle:
      base = "handle";
      break;
  }
  if (lanes_ != 1) base += fmt::format("x{}", lanes_);
  return base;
}

DataType DataType::parse(std::string_view name) {
  auto fail = [&]() -> DataType { throw InputError(fmt::format("unknown data type '{}'", name)); };
  int lanes = 1;
  if (auto x = name.find('x'); x != std::string_view::npos) {
    auto rest = name.substr(x + 1);
    auto [p, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), lanes);
    if (ec != std::errc() || p != rest.data() + rest.size() || lanes < 1) return fail();
    name = name.substr(0, x);
  }
  if (name == "bool") return Bool(lanes);
  if (name == "bfloat16") return BFloat16(lanes);
  if (name == "handle") return Handle();
  struct Prefix {
    std::string_view text;
    Code code;
  };
  for (auto [text, code] :
       {Prefix{"uint", Code::kUInt}, Prefix{"int", Code::kInt}, Prefix{"float", Code::kFloat}}) {
    if (name.substr(0, text.size()) != text) continue;
    auto digits = name.substr(text.size());
    int bits = 0;
    auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), bits);
    if (ec != std::errc() || p != digits.data() + digits.size()) return fail();
    bool ok = code == Code::kFloat ? (bits == 16 || bits == 32 || bits == 64)
                                   : (bits == 8 || bits == 16 || bits == 32 || bits == 64);
    if (!ok) return fail();
    return {code, bits, lanes};
  }
  return fail();
}

}  // namespace tyche
