#include "codegen/llvm/llvm_math.h"

namespace tyche::codegen::detail {

llvm::Type* same_shape(llvm::Type* like, llvm::Type* elem) {
  if (auto* v = llvm::dyn_cast<llvm::VectorType>(like))
    return llvm::VectorType::get(elem, v->getElementCount());
  return elem;
}

namespace {

// IEEE operations without the builder's fast-math flags (the range reduction is exact as
// written; nothing here should depend on what the caller allowed), and fmuladd for the
// polynomial, fused where the CPU has FMA.
struct Exact {
  llvm::IRBuilderBase& b;
  llvm::Type* f;
  llvm::Type* i;
  llvm::Value* c(float v) const { return llvm::ConstantFP::get(f, v); }
  llvm::Value* k(int32_t v) const {
    return llvm::ConstantInt::get(i, static_cast<uint64_t>(static_cast<int64_t>(v)), true);
  }
  llvm::Value* ins(llvm::Instruction::BinaryOps op, llvm::Value* x, llvm::Value* y) const {
    return b.Insert(llvm::BinaryOperator::Create(op, x, y));
  }
  llvm::Value* add(llvm::Value* x, llvm::Value* y) const {
    return ins(llvm::Instruction::FAdd, x, y);
  }
  llvm::Value* sub(llvm::Value* x, llvm::Value* y) const {
    return ins(llvm::Instruction::FSub, x, y);
  }
  llvm::Value* mul(llvm::Value* x, llvm::Value* y) const {
    return ins(llvm::Instruction::FMul, x, y);
  }
  llvm::Value* fma(llvm::Value* x, llvm::Value* y, llvm::Value* z) const {
    return b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {f}, {x, y, z});
  }
  llvm::Value* div(llvm::Value* x, llvm::Value* y) const {
    return ins(llvm::Instruction::FDiv, x, y);
  }
  // 2^n for integer n in [-126, 127], as float bits.
  llvm::Value* pow2(llvm::Value* n) const {
    return b.CreateBitCast(b.CreateShl(b.CreateAdd(n, k(127)), k(23)), f);
  }
};

}  // namespace

llvm::Value* f32_exp(llvm::IRBuilderBase& b, llvm::Value* x) {
  Exact e{b, x->getType(), same_shape(x->getType(), b.getInt32Ty())};
  // Outside [-104, 89] the result is 0 or infinity; clamping keeps n in range. Comparisons are
  // false for NaN, so a NaN passes through to the arithmetic and comes out NaN.
  x = b.CreateSelect(b.CreateFCmpOLT(x, e.c(-104.0f)), e.c(-104.0f), x);
  x = b.CreateSelect(b.CreateFCmpOGT(x, e.c(89.0f)), e.c(89.0f), x);
  // n = round(x / ln 2) by the 1.5 * 2^23 trick: the sum's last mantissa bits are n, and no
  // float-to-int conversion (poison on NaN) is needed.
  llvm::Value* magic = e.c(12582912.0f);
  llvm::Value* t = e.add(e.mul(x, e.c(1.44269504088896341f)), magic);
  llvm::Value* nf = e.sub(t, magic);
  llvm::Value* n = b.CreateSub(b.CreateBitCast(t, e.i), e.k(0x4b400000));
  // r = x - n ln 2 in two parts: n * 0.693359375 is exact (9 + 8 significant bits).
  llvm::Value* r = e.sub(e.sub(x, e.mul(nf, e.c(0.693359375f))), e.mul(nf, e.c(-2.12194440e-4f)));
  // e^r on |r| <= ln 2 / 2 (Cephes' expf coefficients).
  llvm::Value* p = e.c(1.9875691500e-4f);
  for (float coef :
       {1.3981999507e-3f, 8.3334519073e-3f, 4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f})
    p = e.fma(p, r, e.c(coef));
  p = e.add(e.fma(e.mul(p, r), r, r), e.c(1.0f));
  // p * 2^n as p * 2^(n/2) * 2^(n - n/2): both factors normal for n in [-151, 129]; the first
  // product is exact, the second rounds once (into the subnormals, or to infinity).
  llvm::Value* half = b.CreateAShr(n, e.k(1));
  return e.mul(e.mul(p, e.pow2(half)), e.pow2(b.CreateSub(n, half)));
}

llvm::Value* f32_erf(llvm::IRBuilderBase& b, llvm::Value* x) {
  Exact e{b, x->getType(), same_shape(x->getType(), b.getInt32Ty())};
  llvm::Value* a = b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
  llvm::Value* z = e.mul(a, a);
  // Small |x|: 2/sqrt(pi) * a * sum_k (-z)^k / (k! (2k+1)), k = 0..7, by Horner in z.
  llvm::Value* s = e.c(-1.0f / 75600.0f);
  for (float coef : {1.0f / 9360.0f, -1.0f / 1320.0f, 1.0f / 216.0f, -1.0f / 42.0f, 1.0f / 10.0f,
                     -1.0f / 3.0f, 1.0f})
    s = e.fma(s, z, e.c(coef));
  s = e.mul(e.mul(s, a), e.c(1.12837916709551257f));
  // Large |x|: 1 - (a1 t + ... + a5 t^5) e^(-z).
  llvm::Value* t = e.div(e.c(1.0f), e.fma(a, e.c(0.3275911f), e.c(1.0f)));
  llvm::Value* q = e.c(1.061405429f);
  for (float coef : {-1.453152027f, 1.421413741f, -0.284496736f, 0.254829592f})
    q = e.fma(q, t, e.c(coef));
  q = e.mul(q, t);
  llvm::Value* big = e.sub(e.c(1.0f), e.mul(q, f32_exp(b, e.sub(e.c(0.0f), z))));
  // Both sides are computed (a select vectorizes); NaN compares false and takes the large side,
  // which is NaN too.
  llvm::Value* r = b.CreateSelect(b.CreateFCmpOLT(a, e.c(0.75f)), s, big);
  return b.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, r, x);
}

}  // namespace tyche::codegen::detail
