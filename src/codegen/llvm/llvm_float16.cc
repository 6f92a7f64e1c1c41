// The binary16 sequences follow the well-known branch-free formulation (rebias the exponent,
// round by adding half an ulp minus one plus the lowest kept bit; subnormals through one float
// addition, whose rounding is the one we want), written with selects so they vectorize.
#include "codegen/llvm/llvm_float16.h"

#include <llvm/IR/Intrinsics.h>

#include "codegen/llvm/llvm_math.h"

namespace tyche::codegen::detail {

namespace {

struct Ops {
  llvm::IRBuilderBase& b;
  llvm::Type* i32;  // i32 or <N x i32>
  llvm::Type* f32;

  llvm::Constant* k(uint32_t v) { return llvm::ConstantInt::get(i32, v); }
  llvm::Value* bits(llvm::Value* f) { return b.CreateBitCast(f, i32); }
  llvm::Value* real(llvm::Value* u) { return b.CreateBitCast(u, f32); }
  llvm::Value* and_(llvm::Value* a, uint32_t m) { return b.CreateAnd(a, k(m)); }
  llvm::Value* shr(llvm::Value* a, uint32_t n) { return b.CreateLShr(a, k(n)); }
  llvm::Value* shl(llvm::Value* a, uint32_t n) { return b.CreateShl(a, k(n)); }
  llvm::Value* add(llvm::Value* a, uint32_t c) { return b.CreateAdd(a, k(c)); }
};

Ops ops_for(llvm::IRBuilderBase& b, llvm::Type* like) {
  return Ops{b, same_shape(like, b.getInt32Ty()), same_shape(like, b.getFloatTy())};
}

// Plain IEEE arithmetic: no contraction or other fast-math liberties, whatever the builder's
// defaults are.
llvm::Value* exact_fadd(llvm::IRBuilderBase& b, llvm::Value* x, llvm::Value* y) {
  auto* r = llvm::BinaryOperator::CreateFAdd(x, y);
  return b.Insert(r);
}

}  // namespace

llvm::Value* f32_to_f16_bits(llvm::IRBuilderBase& b, llvm::Value* f) {
  Ops o = ops_for(b, f->getType());
  llvm::Value* u = o.bits(f);
  llvm::Value* sign = o.and_(u, 0x80000000u);
  llvm::Value* a = b.CreateXor(u, sign);  // |f|
  // |f| >= 65536 (or inf, NaN): infinity, or a quiet NaN keeping the payload's top bits.
  llvm::Value* nan = b.CreateOr(o.and_(o.shr(a, 13), 0x3ff), o.k(0x7e00));
  llvm::Value* big = b.CreateSelect(b.CreateICmpUGT(a, o.k(0x7f800000u)), nan, o.k(0x7c00));
  // |f| < 2^-14: subnormal or zero. Adding 0.5 puts the half's last bit at the float's last bit,
  // so the float addition rounds to nearest even exactly where the half must.
  llvm::Value* half_magic = o.k(126u << 23);  // 0.5f
  llvm::Value* small =
      b.CreateSub(o.bits(exact_fadd(b, o.real(a), o.real(half_magic))), half_magic);
  // Normal: rebias the exponent, then round to nearest even on the 13 dropped bits (a carry
  // into the exponent is the right result, up to infinity).
  llvm::Value* odd = o.and_(o.shr(a, 13), 1);
  llvm::Value* normal = o.shr(b.CreateAdd(o.add(a, (uint32_t(15 - 127) << 23) + 0xfff), odd), 13);
  llvm::Value* r =
      b.CreateSelect(b.CreateICmpUGE(a, o.k((127u + 16) << 23)), big,
                     b.CreateSelect(b.CreateICmpULT(a, o.k(113u << 23)), small, normal));
  r = b.CreateOr(r, o.shr(sign, 16));
  return b.CreateTrunc(r, same_shape(f->getType(), b.getInt16Ty()));
}

llvm::Value* f16_bits_to_f32(llvm::IRBuilderBase& b, llvm::Value* h) {
  Ops o = ops_for(b, h->getType());
  llvm::Value* x = b.CreateZExt(h, o.i32);
  llvm::Value* sign = o.shl(o.and_(x, 0x8000), 16);
  llvm::Value* m = o.shl(o.and_(x, 0x7fff), 13);  // exponent and mantissa in float position
  llvm::Value* exp = o.and_(m, 0x7c00u << 13);
  llvm::Value* normal = o.add(m, uint32_t(127 - 15) << 23);
  // Infinity and NaN: exponent all ones; a NaN comes back quiet, as the hardware returns it.
  llvm::Value* special = o.add(normal, uint32_t(128 - 16) << 23);
  llvm::Value* is_nan = b.CreateICmpNE(o.and_(x, 0x3ff), o.k(0));
  special = b.CreateSelect(is_nan, b.CreateOr(special, o.k(0x00400000)), special);
  // Zero and subnormal: read the mantissa as a normal number of exponent -14, subtract 2^-14.
  llvm::Value* magic = o.k(113u << 23);  // 2^-14
  llvm::Value* subnormal = o.bits(
      b.Insert(llvm::BinaryOperator::CreateFSub(o.real(o.add(normal, 1u << 23)), o.real(magic))));
  llvm::Value* r = b.CreateSelect(b.CreateICmpEQ(exp, o.k(0x7c00u << 13)), special,
                                  b.CreateSelect(b.CreateICmpEQ(exp, o.k(0)), subnormal, normal));
  return o.real(b.CreateOr(r, sign));
}

llvm::Value* f32_to_bf16_bits(llvm::IRBuilderBase& b, llvm::Value* f) {
  Ops o = ops_for(b, f->getType());
  llvm::Value* u = o.bits(f);
  llvm::Value* high = o.shr(u, 16);
  llvm::Value* nan = b.CreateOr(high, o.k(0x40));
  llvm::Value* rounded = o.shr(b.CreateAdd(o.add(u, 0x7fff), o.and_(high, 1)), 16);
  llvm::Value* r =
      b.CreateSelect(b.CreateICmpUGT(o.and_(u, 0x7fffffffu), o.k(0x7f800000u)), nan, rounded);
  return b.CreateTrunc(r, same_shape(f->getType(), b.getInt16Ty()));
}

llvm::Value* bf16_bits_to_f32(llvm::IRBuilderBase& b, llvm::Value* h) {
  Ops o = ops_for(b, h->getType());
  return o.real(o.shl(b.CreateZExt(h, o.i32), 16));
}

llvm::Value* f64_to_f32_round_to_odd(llvm::IRBuilderBase& b, llvm::Value* d) {
  Ops o = ops_for(b, d->getType());
  llvm::Value* r = b.CreateFPTrunc(d, o.f32);  // to nearest even
  llvm::Value* back = b.CreateFPExt(r, d->getType());
  llvm::Value* rb = o.bits(r);
  // Inexact with an even last bit: step to the other neighbour of d, which is odd. Adding one to
  // the bits moves away from zero.
  llvm::Value* inexact = b.CreateFCmpONE(back, d);
  llvm::Value* even = b.CreateICmpEQ(o.and_(rb, 1), o.k(0));
  llvm::Value* fabs_back = b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, back);
  llvm::Value* fabs_d = b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, d);
  llvm::Value* step =
      b.CreateSelect(b.CreateFCmpOLT(fabs_back, fabs_d), o.add(rb, 1), b.CreateSub(rb, o.k(1)));
  return o.real(b.CreateSelect(b.CreateAnd(inexact, even), step, rb));
}

}  // namespace tyche::codegen::detail
