// Element types of an index-notation program: the `dtypes` argument ("A=uint8, B=int8, C=int32")
// and the rules each statement must follow once its tensors have types (index_notation.h).
#include <algorithm>
#include <cmath>
#include <map>

#include "te/index_notation_syntax.h"

namespace tyche::te::notation {

namespace {

constexpr DataType kAllowed[] = {DataType::Int(8),   DataType::UInt(8),   DataType::Int(16),
                                 DataType::Int(32),  DataType::Float(16), DataType::BFloat16(),
                                 DataType::Float(32)};

bool allowed(DataType t) {
  return std::find(std::begin(kAllowed), std::end(kAllowed), t) != std::end(kAllowed);
}

std::string allowed_list() {
  std::string s;
  for (DataType t : kAllowed) s += (s.empty() ? "" : ", ") + t.str();
  return s;
}

[[noreturn]] void fail_formula(int column, const std::string& what) {
  fail(fmt::format("formula column {}: {}", column, what));
}

// Checks one right-hand side node (and its children) against its statement's types.
void check_expr(const IndexNotationExpr& e, const IndexNotationProgram& p,
                const IndexNotationStatement& st, DataType out) {
  const bool integer = out.is_integer();
  const std::string out_text = fmt::format("'{}' is {}", st.output, out.str());
  switch (e.op) {
    case IndexNotationOp::kNumber:
      if (integer && (e.value != std::floor(e.value) || std::abs(e.value) > 2147483647.0))
        fail_formula(e.column,
                     fmt::format("{} is not an int32 constant, and {}", e.value, out_text));
      break;
    case IndexNotationOp::kAccess: {
      DataType t = p.tensor(e.tensor).dtype;
      if (integer && t.is_float())
        fail_formula(e.column,
                     fmt::format("'{}' is {} and {}: index notation never converts a float "
                                 "to an integer",
                                 e.tensor, t.str(), out_text));
      break;
    }
    case IndexNotationOp::kDiv:
      if (integer)
        fail_formula(e.column, fmt::format("'/' needs a float result, and {}", out_text));
      break;
    case IndexNotationOp::kCall:
      if (integer && e.func != IndexNotationFunc::kMax && e.func != IndexNotationFunc::kMin &&
          e.func != IndexNotationFunc::kAbs)
        fail_formula(e.column, fmt::format("{} needs a float result, and {}",
                                           index_notation_func_name(e.func), out_text));
      break;
    default:
      break;
  }
  for (const IndexNotationExpr& a : e.args) check_expr(a, p, st, out);
}

}  // namespace

std::vector<DtypeEntry> parse_dtypes(std::string_view s) {
  std::vector<DtypeEntry> out;
  AssignmentList list(s, "dtypes", "a tensor name", "types");
  while (list.next()) {
    const std::string& name = list.name();
    std::string type(list.value(is_ident_char));
    size_t type_pos = list.value_pos();
    if (type.empty())
      list.fail_at(type_pos, fmt::format("expected an element type for '{}', found {}", name,
                                         list.found(type_pos)));
    DataType t;
    try {
      t = DataType::parse(type);
    } catch (const InputError&) {
      t = DataType::Void();
    }
    if (!allowed(t))
      list.fail_at(type_pos, fmt::format("unknown element type '{}' for '{}' (formulas take {})",
                                         type, name, allowed_list()));
    for (const DtypeEntry& d : out)
      if (d.name == name)
        fail(fmt::format("dtypes column {}: '{}' is given a type twice", list.name_column(), name));
    out.push_back({name, t, list.name_column()});
  }
  return out;
}

void assign_dtypes(IndexNotationProgram& p, const std::vector<DtypeEntry>& entries) {
  for (const DtypeEntry& d : entries) {
    auto it = std::find_if(p.tensors.begin(), p.tensors.end(),
                           [&](const IndexNotationTensor& t) { return t.name == d.name; });
    if (it == p.tensors.end()) {
      std::string names;
      for (const IndexNotationTensor& t : p.tensors) names += (names.empty() ? "" : ", ") + t.name;
      fail(fmt::format("dtypes column {}: the formula has no tensor '{}' (its tensors: {})",
                       d.column, d.name, names));
    }
    it->dtype = d.dtype;
  }
  for (const IndexNotationStatement& st : p.statements) {
    DataType out = p.tensor(st.output).dtype;
    if (st.is_reduction() && out.is_float() && out.bits() == 16)
      fail_formula(st.column,
                   fmt::format("'{}' is {}: reduce into a float32 tensor and convert it in a "
                               "second statement (T[...] += ...; {}[...] = T[...])",
                               st.output, out.str(), st.output));
    check_expr(st.rhs, p, st, out);
  }
}

}  // namespace tyche::te::notation
