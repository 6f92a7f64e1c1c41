#include "schedule/instruction.h"

#include <algorithm>
#include <cmath>

namespace tyche::schedule {

Value Value::real(double v) {
  Value x;
  x.kind = Kind::kFloat;
  x.f = v;
  return x;
}

Value Value::string(std::string v) {
  Value x;
  x.kind = Kind::kString;
  x.s = std::move(v);
  return x;
}

Value Value::of_list(std::vector<Value> items) {
  Value x;
  x.kind = Kind::kList;
  x.list = std::move(items);
  return x;
}

bool Value::operator==(const Value& o) const {
  if (kind != o.kind) return false;
  switch (kind) {
    case Kind::kNone:
      return true;
    case Kind::kFloat:
      return f == o.f || (std::isnan(f) && std::isnan(o.f));
    case Kind::kString:
      return s == o.s;
    case Kind::kList:
      return list == o.list;
    default:
      return i == o.i;
  }
}

std::optional<size_t> InstructionKind::param_index(std::string_view param) const {
  for (size_t i = 0; i < params.size(); ++i)
    if (params[i].name == param) return i;
  return std::nullopt;
}

const char* value_kind_name(Value::Kind kind) {
  switch (kind) {
    case Value::Kind::kNone:
      return "None";
    case Value::Kind::kInt:
      return "an integer";
    case Value::Kind::kFloat:
      return "a float";
    case Value::Kind::kBool:
      return "a bool";
    case Value::Kind::kString:
      return "a string";
    case Value::Kind::kBlockRV:
      return "a block";
    case Value::Kind::kLoopRV:
      return "a loop";
    case Value::Kind::kExprRV:
      return "an expression variable";
    case Value::Kind::kList:
      return "a list";
  }
  return "?";
}

const char* param_type_name(ParamType t) {
  switch (t) {
    case ParamType::kBlock:
      return "a block";
    case ParamType::kLoop:
      return "a loop";
    case ParamType::kBlockOrLoop:
      return "a block or a loop";
    case ParamType::kExpr:
      return "an integer or expression variable";
    case ParamType::kInt:
      return "an integer";
    case ParamType::kFloat:
      return "a float";
    case ParamType::kBool:
      return "True or False";
    case ParamType::kString:
      return "a string";
    case ParamType::kAnnValue:
      return "an integer, float, string or expression variable";
    case ParamType::kBlockList:
      return "a list of blocks";
    case ParamType::kLoopList:
      return "a list of loops";
    case ParamType::kOptExprList:
      return "a list of integers, expression variables or None";
    case ParamType::kIntList:
      return "a list of integers";
    case ParamType::kFloatList:
      return "a list of floats";
  }
  return "?";
}

namespace {

using K = Value::Kind;

bool all_of_kind(const Value& v, std::initializer_list<K> kinds) {
  return v.kind == K::kList && std::all_of(v.list.begin(), v.list.end(), [&](const Value& x) {
           return std::find(kinds.begin(), kinds.end(), x.kind) != kinds.end();
         });
}

}  // namespace

bool value_matches(const Value& v, ParamType t) {
  switch (t) {
    case ParamType::kBlock:
      return v.kind == K::kBlockRV;
    case ParamType::kLoop:
      return v.kind == K::kLoopRV;
    case ParamType::kBlockOrLoop:
      return v.kind == K::kBlockRV || v.kind == K::kLoopRV;
    case ParamType::kExpr:
      return v.kind == K::kInt || v.kind == K::kExprRV;
    case ParamType::kInt:
      return v.kind == K::kInt;
    case ParamType::kFloat:
      return v.kind == K::kFloat || v.kind == K::kInt;
    case ParamType::kBool:
      return v.kind == K::kBool;
    case ParamType::kString:
      return v.kind == K::kString;
    case ParamType::kAnnValue:
      return v.kind == K::kInt || v.kind == K::kFloat || v.kind == K::kString ||
             v.kind == K::kExprRV;
    case ParamType::kBlockList:
      return all_of_kind(v, {K::kBlockRV});
    case ParamType::kLoopList:
      return all_of_kind(v, {K::kLoopRV});
    case ParamType::kOptExprList:
      return all_of_kind(v, {K::kInt, K::kExprRV, K::kNone});
    case ParamType::kIntList:
      return all_of_kind(v, {K::kInt});
    case ParamType::kFloatList:
      return all_of_kind(v, {K::kFloat, K::kInt});
  }
  return false;
}

bool decision_matches(const Value& v, DecisionType t) {
  switch (t) {
    case DecisionType::kNone:
      return v.kind == K::kNone;
    case DecisionType::kInt:
      return v.kind == K::kInt;
    case DecisionType::kIntList:
      return all_of_kind(v, {K::kInt});
  }
  return false;
}

const InstructionKind* find_instruction_kind(std::string_view name) {
  for (const InstructionKind* k : instruction_kinds())
    if (k->name == name) return k;
  return nullptr;
}

}  // namespace tyche::schedule
