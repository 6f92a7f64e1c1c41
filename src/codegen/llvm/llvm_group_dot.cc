#include "codegen/llvm/llvm_group_dot.h"

#include <llvm/Config/llvm-config.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsX86.h>

#include <algorithm>
#include <vector>

#include "codegen/llvm/llvm_float16.h"

namespace tyche::codegen::detail {

bool has_feature(const std::string& features, const char* name) {
  std::string token = std::string("+") + name;
  size_t at = 0;
  while ((at = features.find(token, at)) != std::string::npos) {
    size_t end = at + token.size();
    if (end == features.size() || features[end] == ',') return true;
    at = end;
  }
  return false;
}

llvm::Value* lanes_of(llvm::IRBuilderBase& b, llvm::Value* v, int first, int count) {
  std::vector<int> idx;
  for (int i = 0; i < count; ++i) idx.push_back(first + i);
  return b.CreateShuffleVector(v, idx);
}

llvm::Value* concat_lanes(llvm::IRBuilderBase& b, std::vector<llvm::Value*> parts) {
  auto lanes = [](llvm::Value* v) {
    return static_cast<int>(llvm::cast<llvm::FixedVectorType>(v->getType())->getNumElements());
  };
  // Pairs, until one is left; a shuffle takes two vectors of one type, so the shorter of a pair
  // is widened (with poison lanes) first.
  while (parts.size() > 1) {
    std::vector<llvm::Value*> next;
    for (size_t i = 0; i + 1 < parts.size(); i += 2) {
      llvm::Value *x = parts[i], *y = parts[i + 1];
      const int nx = lanes(x), ny = lanes(y), w = std::max(nx, ny);
      auto widen = [&](llvm::Value* v, int n) {
        if (n == w) return v;
        std::vector<int> idx;
        for (int k = 0; k < w; ++k) idx.push_back(k < n ? k : -1);
        return b.CreateShuffleVector(v, idx);
      };
      std::vector<int> idx;
      for (int k = 0; k < nx; ++k) idx.push_back(k);
      for (int k = 0; k < ny; ++k) idx.push_back(w + k);
      next.push_back(b.CreateShuffleVector(widen(x, nx), widen(y, ny), idx));
    }
    if (parts.size() % 2) next.push_back(parts.back());
    parts = std::move(next);
  }
  return parts[0];
}

namespace {

bool is_u8s8(DataType acc, DataType a, DataType b) {
  return acc.element_of() == kInt32 && a.element_of() == DataType::UInt(8) &&
         b.element_of() == DataType::Int(8) && a.lanes() == 4;
}
bool is_bf16(DataType acc, DataType a, DataType b) {
  return acc.element_of() == kFloat32 && a.is_bfloat16() && b.is_bfloat16() && a.lanes() == 2;
}

// The widest native width (in accumulator lanes) that divides `lanes`, or 0.
int native_lanes(DataType acc, DataType a, DataType b, const std::string& f) {
  bool wide = false, narrow = false;
  if (is_u8s8(acc, a, b)) {
    wide = has_feature(f, "avx512vnni");
    narrow = (wide && has_feature(f, "avx512vl")) || has_feature(f, "avxvnni");
  } else if (is_bf16(acc, a, b)) {
    wide = has_feature(f, "avx512bf16");
    narrow = wide && has_feature(f, "avx512vl");
  }
  int lanes = acc.lanes();
  if (wide && lanes % 16 == 0) return 16;
  if (narrow && lanes % 8 == 0) return 8;
  if (narrow && lanes % 4 == 0) return 4;
  return 0;
}

// One native instruction over `w` accumulator lanes.
llvm::Value* native(llvm::IRBuilderBase& b, bool u8s8, int w, llvm::Value* acc, llvm::Value* a,
                    llvm::Value* bv) {
  llvm::Module* m = b.GetInsertBlock()->getModule();
  llvm::Type* i32 = b.getInt32Ty();
  // a's group (4 bytes, or 2 bfloat16) is one 32-bit element, the same in every lane.
  llvm::Value* a_splat = b.CreateVectorSplat(w, b.CreateBitCast(a, i32));
  llvm::Value* b_words = b.CreateBitCast(bv, llvm::FixedVectorType::get(i32, w));
  if (u8s8) {
    llvm::Intrinsic::ID id = w == 16  ? llvm::Intrinsic::x86_avx512_vpdpbusd_512
                             : w == 8 ? llvm::Intrinsic::x86_avx512_vpdpbusd_256
                                      : llvm::Intrinsic::x86_avx512_vpdpbusd_128;
    // vpdpbusd's first source is the unsigned one.
    return b.CreateCall(llvm::Intrinsic::getDeclaration(m, id), {acc, a_splat, b_words});
  }
  llvm::Intrinsic::ID id = w == 16  ? llvm::Intrinsic::x86_avx512bf16_dpbf16ps_512
                           : w == 8 ? llvm::Intrinsic::x86_avx512bf16_dpbf16ps_256
                                    : llvm::Intrinsic::x86_avx512bf16_dpbf16ps_128;
#if LLVM_VERSION_MAJOR >= 17
  llvm::Type* pairs = llvm::FixedVectorType::get(b.getBFloatTy(), 2 * w);
  a_splat = b.CreateBitCast(a_splat, pairs);
  b_words = b.CreateBitCast(b_words, pairs);
#endif
  return b.CreateCall(llvm::Intrinsic::getDeclaration(m, id), {acc, a_splat, b_words});
}

// Element-wise widening to the accumulator's type.
llvm::Value* widen(llvm::IRBuilderBase& b, llvm::Value* v, DataType from, DataType acc) {
  auto* vt = llvm::cast<llvm::FixedVectorType>(v->getType());
  if (acc.is_integer()) {
    llvm::Type* to = llvm::FixedVectorType::get(b.getInt32Ty(), vt->getNumElements());
    return from.is_int() ? b.CreateSExtOrTrunc(v, to) : b.CreateZExtOrTrunc(v, to);
  }
  if (from.is_bfloat16()) return bf16_bits_to_f32(b, v);
  return v;  // float16 and float32 arrive as float values
}

// Any CPU: acc[i] + sum over t of a[t] * b[G*i + t], in order.
llvm::Value* portable(llvm::IRBuilderBase& b, const GroupDotOperands& o) {
  const int n = o.acc_t.lanes(), g = o.a_t.lanes();
  llvm::Value* a = widen(b, o.a, o.a_t, o.acc_t);
  llvm::Value* bv = widen(b, o.b, o.b_t, o.acc_t);
  llvm::Value* acc = o.acc;
  for (int t = 0; t < g; ++t) {
    std::vector<int> idx;
    for (int i = 0; i < n; ++i) idx.push_back(g * i + t);
    llvm::Value* bt = b.CreateShuffleVector(bv, idx);
    llvm::Value* at = b.CreateVectorSplat(n, b.CreateExtractElement(a, b.getInt64(t)));
    acc = o.acc_t.is_integer() ? b.CreateAdd(acc, b.CreateMul(at, bt))
                               : b.CreateFAdd(acc, b.CreateFMul(at, bt));
  }
  return acc;
}

}  // namespace

std::string group_dot_instruction(DataType acc, DataType a, DataType b,
                                  const std::string& features) {
  if (!native_lanes(acc, a, b, features)) return "";
  return is_u8s8(acc, a, b) ? "vpdpbusd" : "vdpbf16ps";
}

llvm::Value* emit_group_dot(llvm::IRBuilderBase& b, const std::string& features,
                            const GroupDotOperands& o) {
  const int w = native_lanes(o.acc_t, o.a_t, o.b_t, features);
  if (!w) return portable(b, o);
  const bool u8s8 = is_u8s8(o.acc_t, o.a_t, o.b_t);
  const int g = o.a_t.lanes(), n = o.acc_t.lanes();
  std::vector<llvm::Value*> parts;
  for (int first = 0; first < n; first += w) {
    llvm::Value* acc = n == w ? o.acc : lanes_of(b, o.acc, first, w);
    llvm::Value* bv = n == w ? o.b : lanes_of(b, o.b, first * g, w * g);
    parts.push_back(native(b, u8s8, w, acc, o.a, bv));
  }
  return concat_lanes(b, std::move(parts));
}

}  // namespace tyche::codegen::detail
