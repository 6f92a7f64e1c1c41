// Lowered IR -> LLVM IR. Values of float16/bfloat16 are computed in float (as the interpreter
// computes in wider precision) and rounded when stored or cast, by integer IR unless the CPU
// converts half natively (llvm_float16.h); bools are i1 in registers and one byte in memory.
// Integer arithmetic on signed types carries nsw, which lets LLVM reason about index
// expressions; float arithmetic allows contraction into FMAs.
#include "codegen/llvm/llvm_emitter.h"

#include <fmt/format.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/MDBuilder.h>

#include <optional>
#include <unordered_map>

#include "arith/vector_index.h"
#include "codegen/captures.h"
#include "codegen/llvm/llvm_float16.h"
#include "codegen/llvm/llvm_group_dot.h"
#include "codegen/llvm/llvm_math.h"
#include "codegen/llvm/llvm_tile_dot.h"
#include "ir/functor.h"
#include "ir/op.h"
#include "runtime/module.h"
#include "support/error.h"

namespace tyche::codegen::detail {

std::string packed_name(const std::string& func_name) {
  return func_name + "_packed";
}

namespace {

using ir::ExprKind;

class Emitter {
 public:
  Emitter(llvm::LLVMContext& ctx, llvm::Module* mod, const EmitOptions& opts)
      : ctx_(ctx), mod_(mod), b_(ctx), opts_(opts) {
    llvm::FastMathFlags fmf;
    fmf.setAllowContract(true);
    b_.setFastMathFlags(fmf);
  }

  void emit_function(const ir::PrimFunc& f) {
    // The code itself goes in `<name>.body`, whose parameters are declared noalias and aligned;
    // `<name>` checks that they are (the check would fold away inside the body, the attributes
    // asserting it) and calls it, on aligned copies of the buffers that are not. Not inlined, so
    // the body keeps its attributes.
    std::vector<llvm::Type*> arg_types(f->params.size(), ptr_type());
    auto* fty = llvm::FunctionType::get(status_type(), arg_types, false);
    llvm::Function* body =
        llvm::Function::Create(fty, llvm::Function::InternalLinkage, f->name + ".body", mod_);
    set_attributes(body);
    body->addFnAttr(llvm::Attribute::NoInline);
    for (size_t i = 0; i < f->params.size(); ++i) {
      llvm::Argument* a = body->getArg(static_cast<unsigned>(i));
      a->setName(f->params[i]->name);
      a->addAttr(llvm::Attribute::NoAlias);
      a->addAttr(llvm::Attribute::getWithAlignment(ctx_, llvm::Align(runtime::kKernelAlignment)));
      buffers_[f->params[i].get()] = a;
    }
    begin_function(body);
    emit_stmt(f->body);
    b_.CreateRet(status(runtime::kKernelOk));

    // A null pointer is refused before anything runs (an exported kernel's caller is anyone's
    // C). Aligned pointers go straight to the body; when any is misaligned, the body runs on
    // aligned copies (emit_staged_call).
    llvm::Function* fn =
        llvm::Function::Create(fty, llvm::Function::ExternalLinkage, f->name, mod_);
    set_attributes(fn);
    begin_function(fn);
    llvm::Value* any_null = b_.getFalse();
    llvm::Value* any_misaligned = b_.getFalse();
    std::vector<llvm::Value*> params, misaligned;
    for (size_t i = 0; i < f->params.size(); ++i) {
      llvm::Argument* a = fn->getArg(static_cast<unsigned>(i));
      a->setName(f->params[i]->name);
      params.push_back(a);
      any_null = b_.CreateOr(any_null, b_.CreateIsNull(a));
      llvm::Value* low_bits =
          b_.CreateAnd(b_.CreatePtrToInt(a, b_.getInt64Ty()), runtime::kKernelAlignment - 1);
      misaligned.push_back(b_.CreateICmpNE(low_bits, b_.getInt64(0)));
      any_misaligned = b_.CreateOr(any_misaligned, misaligned.back());
    }
    branch_on_error(any_null, status(runtime::kKernelNullArgument));
    if (uses_tiles_) {
      llvm::FunctionCallee request =
          mod_->getOrInsertFunction(opts_.runtime_prefix + "request_tiles", status_type());
      branch_on_error(b_.CreateICmpNE(b_.CreateCall(request), status(runtime::kKernelOk)),
                      status(runtime::kKernelNoTileState));
    }
    auto* aligned_bb = llvm::BasicBlock::Create(ctx_, "aligned", fn);
    auto* staged_bb = llvm::BasicBlock::Create(ctx_, "staged", fn);
    b_.CreateCondBr(any_misaligned, staged_bb, aligned_bb,
                    llvm::MDBuilder(ctx_).createBranchWeights(1, 1 << 20));
    b_.SetInsertPoint(aligned_bb);
    b_.CreateRet(b_.CreateCall(body, params));
    b_.SetInsertPoint(staged_bb);
    emit_staged_call(f, body, params, misaligned);

    // The packed entry: i32 name_packed(ptr* args).
    auto* pty = llvm::FunctionType::get(status_type(), {ptr_type()}, false);
    llvm::Function* packed =
        llvm::Function::Create(pty, llvm::Function::ExternalLinkage, packed_name(f->name), mod_);
    set_attributes(packed);
    b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", packed));
    std::vector<llvm::Value*> args;
    for (size_t i = 0; i < f->params.size(); ++i) {
      llvm::Value* slot = b_.CreateConstInBoundsGEP1_64(ptr_type(), packed->getArg(0), i);
      args.push_back(b_.CreateAlignedLoad(ptr_type(), slot, llvm::Align(8)));
    }
    b_.CreateRet(b_.CreateCall(fn, args));

    if (opts_.set_num_threads_entry) {
      auto* sty = llvm::FunctionType::get(b_.getVoidTy(), {b_.getInt32Ty()}, false);
      llvm::Function* set = llvm::Function::Create(sty, llvm::Function::ExternalLinkage,
                                                   f->name + "_set_num_threads", mod_);
      set_attributes(set);
      b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", set));
      // A serial kernel starts no threads: setting their number does nothing.
      if (opts_.parallel)
        b_.CreateCall(mod_->getOrInsertFunction(opts_.runtime_prefix + "set_num_threads", sty),
                      {set->getArg(0)});
      b_.CreateRetVoid();
    }
  }

 private:
  // ---- types ----
  llvm::Type* ptr_type() { return llvm::PointerType::get(ctx_, 0); }
  llvm::Type* status_type() { return b_.getInt32Ty(); }
  llvm::Value* status(runtime::KernelStatus s) { return b_.getInt32(static_cast<uint32_t>(s)); }

  // The type a value of `t` has in registers.
  llvm::Type* value_type(DataType t) {
    llvm::Type* e;
    if (t.is_bool())
      e = b_.getInt1Ty();
    else if (t.is_float())
      e = t.bits() == 64 ? b_.getDoubleTy() : b_.getFloatTy();  // f16/bf16 computed in float
    else if (t.is_integer())
      e = b_.getIntNTy(t.bits());
    else
      throw Error(fmt::format("codegen: unsupported type {}", t.str()));
    return t.lanes() > 1 ? llvm::FixedVectorType::get(e, t.lanes()) : e;
  }
  // The type an element of `t` has in memory.
  llvm::Type* memory_type(DataType t) {
    llvm::Type* e;
    if (t.is_bool())
      e = b_.getInt8Ty();
    else if (t.is_bfloat16())
      e = b_.getInt16Ty();  // its bits; see llvm_float16.h
    else if (t.is_float() && t.bits() == 16)
      e = opts_.native_f16 ? b_.getHalfTy() : b_.getInt16Ty();
    else
      e = value_type(t.element_of());
    return t.lanes() > 1 ? llvm::FixedVectorType::get(e, t.lanes()) : e;
  }
  bool narrow_float(DataType t) { return t.is_float() && t.bits() == 16; }

  void set_attributes(llvm::Function* fn) {
    fn->addFnAttr(llvm::Attribute::NoUnwind);
    // A register tile that outgrows the register file spills vectors to the stack. Without a
    // frame pointer reserved before register allocation, LLVM cannot realign the frame then and
    // spills with unaligned moves, whose alignment follows the thread's stack: a spilled
    // accumulator that straddles two cache lines stalls store forwarding on every iteration,
    // and the same kernel ran 0.96-1.40 ms from one process to the next (C2D-3 on Zen 4).
    fn->addFnAttr("frame-pointer", "all");
    if (!opts_.cpu.empty()) fn->addFnAttr("target-cpu", opts_.cpu);
    if (!opts_.features.empty()) fn->addFnAttr("target-features", opts_.features);
    if (opts_.vector_bits >= 512) {
      fn->addFnAttr("prefer-vector-width", "512");
      fn->addFnAttr("min-legal-vector-width", "512");
    }
  }

  void begin_function(llvm::Function* fn) {
    func_ = fn;
    entry_ = llvm::BasicBlock::Create(ctx_, "entry", fn);
    b_.SetInsertPoint(entry_);
  }

  // When `failed` holds, leaves the current function with `code`, freeing the heap buffers
  // allocated so far in it; else goes on after the branch.
  void branch_on_error(llvm::Value* failed, llvm::Value* code) {
    auto* fail = llvm::BasicBlock::Create(ctx_, "fail", func_);
    auto* ok = llvm::BasicBlock::Create(ctx_, "ok", func_);
    b_.CreateCondBr(failed, fail, ok, llvm::MDBuilder(ctx_).createBranchWeights(1, 1 << 20));
    b_.SetInsertPoint(fail);
    for (auto it = live_heap_.rbegin(); it != live_heap_.rend(); ++it)
      b_.CreateCall(free_function(), {*it});
    b_.CreateRet(code);
    b_.SetInsertPoint(ok);
  }

  // The runtime's allocator: fresh memory, like malloc's (it overlaps no other buffer), 64-byte
  // aligned; null when exhausted.
  llvm::FunctionCallee alloc_function() {
    llvm::FunctionCallee alloc =
        mod_->getOrInsertFunction(opts_.runtime_prefix + "alloc", ptr_type(), b_.getInt64Ty());
    if (auto* decl = llvm::dyn_cast<llvm::Function>(alloc.getCallee())) {
      decl->addRetAttr(llvm::Attribute::NoAlias);
      decl->addRetAttr(
          llvm::Attribute::getWithAlignment(ctx_, llvm::Align(runtime::kKernelAlignment)));
    }
    return alloc;
  }

  // The slow path of the entry: each misaligned buffer is copied into an aligned temporary from
  // the runtime's allocator (inputs before the body, outputs back after it), the body runs on
  // those, the temporaries are freed and its status returned (out of memory, nothing computed,
  // when a temporary cannot be had).
  void emit_staged_call(const ir::PrimFunc& f, llvm::Function* body,
                        const std::vector<llvm::Value*>& params,
                        const std::vector<llvm::Value*>& misaligned) {
    size_t num_inputs = f->params.size() - static_cast<size_t>(f->num_outputs);
    std::vector<llvm::Value*> temps, args;
    std::vector<int64_t> bytes;
    for (size_t i = 0; i < params.size(); ++i) {
      const ir::Buffer& p = f->params[i];
      int64_t elements = 1;
      for (const ir::Expr& d : p->shape) {
        auto c = ir::as_const_int(d);
        if (!c) throw Error(fmt::format("codegen: parameter '{}' has a symbolic shape", p->name));
        elements *= *c;
      }
      bytes.push_back(elements * p->dtype.bytes());
      llvm::BasicBlock* before = b_.GetInsertBlock();
      auto* copy_bb = llvm::BasicBlock::Create(ctx_, p->name + ".stage", func_);
      auto* next_bb = llvm::BasicBlock::Create(ctx_, p->name + ".staged", func_);
      b_.CreateCondBr(misaligned[i], copy_bb, next_bb);
      b_.SetInsertPoint(copy_bb);
      llvm::Value* temp =
          b_.CreateCall(alloc_function(), {b_.getInt64(static_cast<uint64_t>(bytes.back()))});
      branch_on_error(b_.CreateIsNull(temp),
                      status(runtime::kKernelOutOfMemory));  // frees the earlier ones
      if (i < num_inputs)
        b_.CreateMemCpy(temp, llvm::MaybeAlign(runtime::kKernelAlignment), params[i],
                        llvm::MaybeAlign(1), static_cast<uint64_t>(bytes.back()));
      llvm::BasicBlock* copied = b_.GetInsertBlock();
      b_.CreateBr(next_bb);
      b_.SetInsertPoint(next_bb);
      llvm::PHINode* t =
          b_.CreatePHI(ptr_type(), 2, p->name + ".temp");  // null: the caller's buffer is used
      t->addIncoming(llvm::ConstantPointerNull::get(llvm::PointerType::get(ctx_, 0)), before);
      t->addIncoming(temp, copied);
      llvm::PHINode* arg = b_.CreatePHI(ptr_type(), 2, p->name + ".arg");
      arg->addIncoming(params[i], before);
      arg->addIncoming(temp, copied);
      temps.push_back(t);
      args.push_back(arg);
      live_heap_.push_back(t);
    }
    live_heap_.clear();
    llvm::Value* result = b_.CreateCall(body, args);
    for (size_t i = num_inputs; i < params.size(); ++i) {
      auto* back_bb = llvm::BasicBlock::Create(ctx_, f->params[i]->name + ".copy_back", func_);
      auto* done_bb = llvm::BasicBlock::Create(ctx_, f->params[i]->name + ".copied_back", func_);
      b_.CreateCondBr(b_.CreateIsNull(temps[i]), done_bb, back_bb);
      b_.SetInsertPoint(back_bb);
      b_.CreateMemCpy(params[i], llvm::MaybeAlign(1), temps[i],
                      llvm::MaybeAlign(runtime::kKernelAlignment), static_cast<uint64_t>(bytes[i]));
      b_.CreateBr(done_bb);
      b_.SetInsertPoint(done_bb);
    }
    for (llvm::Value* t : temps) b_.CreateCall(free_function(), {t});  // null: nothing to free
    b_.CreateRet(result);
  }

  llvm::FunctionCallee free_function() {
    return mod_->getOrInsertFunction(opts_.runtime_prefix + "free", b_.getVoidTy(), ptr_type());
  }

  // An alloca in the entry block, so loops do not grow the stack.
  llvm::Value* entry_alloca(llvm::Type* t, uint64_t count, unsigned align) {
    llvm::IRBuilder<> eb(ctx_);
    eb.SetInsertPoint(entry_, entry_->getFirstInsertionPt());
    llvm::AllocaInst* a = eb.CreateAlloca(t, eb.getInt64(count));
    a->setAlignment(llvm::Align(align));
    return a;
  }

  // ---- expressions ----
  llvm::Value* emit(const ir::Expr& e) {
    switch (e.kind()) {
      case ExprKind::kIntImm: {
        int64_t v = e.as<ir::IntImmNode>()->value;
        return llvm::ConstantInt::get(value_type(e.dtype()), static_cast<uint64_t>(v),
                                      e.dtype().is_int());
      }
      case ExprKind::kFloatImm:
        return llvm::ConstantFP::get(value_type(e.dtype()), e.as<ir::FloatImmNode>()->value);
      case ExprKind::kVar: {
        auto it = vars_.find(e.as<ir::VarNode>());
        if (it == vars_.end())
          throw InternalError(
              fmt::format("codegen: unbound variable '{}'", e.as<ir::VarNode>()->name));
        return it->second;
      }
      case ExprKind::kNot:
        return b_.CreateNot(emit(e.as<ir::NotNode>()->a));
      case ExprKind::kSelect: {
        auto* n = e.as<ir::SelectNode>();
        return b_.CreateSelect(emit(n->condition), emit(n->true_value), emit(n->false_value));
      }
      case ExprKind::kCast:
        return emit_cast(e.dtype(), e.as<ir::CastNode>()->value);
      case ExprKind::kBufferLoad:
        return emit_load(e.as<ir::BufferLoadNode>());
      case ExprKind::kCall:
        return emit_call(e.as<ir::CallNode>());
      case ExprKind::kRamp: {
        auto* n = e.as<ir::RampNode>();
        llvm::Value* base = b_.CreateVectorSplat(n->lanes, emit(n->base));
        llvm::Value* stride = b_.CreateVectorSplat(n->lanes, emit(n->stride));
        std::vector<llvm::Constant*> steps;
        for (int i = 0; i < n->lanes; ++i)
          steps.push_back(llvm::ConstantInt::get(value_type(n->base.dtype()), i));
        return b_.CreateAdd(base, b_.CreateMul(stride, llvm::ConstantVector::get(steps)));
      }
      case ExprKind::kBroadcast: {
        auto* n = e.as<ir::BroadcastNode>();
        return b_.CreateVectorSplat(n->lanes, emit(n->value));
      }
      case ExprKind::kLet: {
        auto* n = e.as<ir::LetNode>();
        vars_[n->var.get()] = emit(n->value);
        llvm::Value* v = emit(n->body);
        vars_.erase(n->var.get());
        return v;
      }
      default:
        return emit_binary(e.as_binary());
    }
  }

  llvm::Value* emit_binary(const ir::BinaryNode* n) {
    TYCHE_CHECK(n, "codegen: unknown expression kind");
    DataType t = n->a.dtype();
    llvm::Value* a = emit(n->a);
    llvm::Value* b = emit(n->b);
    bool f = t.is_float(), s = t.is_int();
    switch (n->kind) {
      case ExprKind::kAdd:
        return f ? b_.CreateFAdd(a, b) : b_.CreateAdd(a, b, "", false, s);
      case ExprKind::kSub:
        return f ? b_.CreateFSub(a, b) : b_.CreateSub(a, b, "", false, s);
      case ExprKind::kMul:
        return f ? b_.CreateFMul(a, b) : b_.CreateMul(a, b, "", false, s);
      case ExprKind::kDiv:
        return f ? b_.CreateFDiv(a, b) : s ? b_.CreateSDiv(a, b) : b_.CreateUDiv(a, b);
      case ExprKind::kFloorDiv:
      case ExprKind::kFloorMod:
        return emit_floor_div_mod(n->kind == ExprKind::kFloorDiv, a, b, s);
      case ExprKind::kMin:
      case ExprKind::kMax: {
        bool is_min = n->kind == ExprKind::kMin;
        llvm::Value* lt = f   ? b_.CreateFCmpOLT(a, b)
                          : s ? b_.CreateICmpSLT(a, b)
                              : b_.CreateICmpULT(a, b);
        return is_min ? b_.CreateSelect(lt, a, b) : b_.CreateSelect(lt, b, a);
      }
      case ExprKind::kEQ:
        return f ? b_.CreateFCmpOEQ(a, b) : b_.CreateICmpEQ(a, b);
      case ExprKind::kNE:
        return f ? b_.CreateFCmpUNE(a, b) : b_.CreateICmpNE(a, b);
      case ExprKind::kLT:
        return f ? b_.CreateFCmpOLT(a, b) : s ? b_.CreateICmpSLT(a, b) : b_.CreateICmpULT(a, b);
      case ExprKind::kLE:
        return f ? b_.CreateFCmpOLE(a, b) : s ? b_.CreateICmpSLE(a, b) : b_.CreateICmpULE(a, b);
      case ExprKind::kGT:
        return f ? b_.CreateFCmpOGT(a, b) : s ? b_.CreateICmpSGT(a, b) : b_.CreateICmpUGT(a, b);
      case ExprKind::kGE:
        return f ? b_.CreateFCmpOGE(a, b) : s ? b_.CreateICmpSGE(a, b) : b_.CreateICmpUGE(a, b);
      case ExprKind::kAnd:
        return b_.CreateAnd(a, b);
      case ExprKind::kOr:
        return b_.CreateOr(a, b);
      default:
        throw InternalError(
            fmt::format("codegen: unexpected binary operator {}", ir::binary_op_name(n->kind)));
    }
  }

  // floordiv/floormod rounding toward negative infinity.
  llvm::Value* emit_floor_div_mod(bool div, llvm::Value* a, llvm::Value* b, bool is_signed) {
    if (!is_signed) return div ? b_.CreateUDiv(a, b) : b_.CreateURem(a, b);
    llvm::Value* q = b_.CreateSDiv(a, b);
    llvm::Value* r = b_.CreateSRem(a, b);
    llvm::Value* zero = llvm::Constant::getNullValue(a->getType());
    llvm::Value* adjust =
        b_.CreateAnd(b_.CreateICmpNE(r, zero),
                     b_.CreateICmpNE(b_.CreateICmpSLT(r, zero), b_.CreateICmpSLT(b, zero)));
    if (div) return b_.CreateSub(q, b_.CreateZExt(adjust, a->getType()));
    return b_.CreateSelect(adjust, b_.CreateAdd(r, b), r);
  }

  llvm::Value* emit_cast(DataType to, const ir::Expr& from_expr) {
    DataType from = from_expr.dtype();
    llvm::Value* v = emit(from_expr);
    llvm::Type* target = value_type(to);
    llvm::Value* out;
    if (to.is_bool()) {
      llvm::Value* zero = llvm::Constant::getNullValue(v->getType());
      out = from.is_float() ? b_.CreateFCmpUNE(v, zero) : b_.CreateICmpNE(v, zero);
    } else if (narrow_float(to) && !(from.is_float() && from.bits() <= 32)) {
      // Round once, as from the exact value: an integer goes to double (exact up to 2^53), a
      // double to float rounded to odd, and that float to the narrow type.
      llvm::Type* f64 = value_type(DataType::Float(64, to.lanes()));
      llvm::Value* d = from.is_float() ? v
                       : from.is_int() ? b_.CreateSIToFP(v, f64)
                                       : b_.CreateUIToFP(v, f64);
      out = to_value(to_memory(f64_to_f32_round_to_odd(b_, d), to), to);
    } else if (to.is_float()) {
      if (from.is_float())
        out = b_.CreateFPCast(v, target);
      else
        out = from.is_int() ? b_.CreateSIToFP(v, target) : b_.CreateUIToFP(v, target);
      if (narrow_float(to))
        out = to_value(to_memory(out, to), to);  // round, keep computing in float
    } else if (from.is_float()) {
      out = to.is_int() ? b_.CreateFPToSI(v, target) : b_.CreateFPToUI(v, target);
    } else {
      out = b_.CreateIntCast(v, target, from.is_int());
    }
    return out;
  }

  llvm::Value* buffer_base(const ir::Buffer& buf) {
    auto it = buffers_.find(buf.get());
    if (it == buffers_.end())
      throw InternalError(fmt::format("codegen: buffer '{}' is not allocated here", buf->name));
    return it->second;
  }

  // The address of `index` (a scalar) in `buf`; the contiguous run at a Ramp of stride 1.
  llvm::Value* address(const ir::Buffer& buf, llvm::Type* elem, llvm::Value* index) {
    index = b_.CreateSExtOrTrunc(index, b_.getInt64Ty());
    return b_.CreateInBoundsGEP(elem, buffer_base(buf), index);
  }

  static const ir::RampNode* unit_ramp(const ir::Expr& index) {
    auto* r = index.as<ir::RampNode>();
    return r && ir::is_const_int(r->stride, 1) ? r : nullptr;
  }

  llvm::Value* to_value(llvm::Value* mem, DataType t) {
    if (t.is_bool()) return b_.CreateICmpNE(mem, llvm::Constant::getNullValue(mem->getType()));
    if (t.is_bfloat16()) return bf16_bits_to_f32(b_, mem);
    if (narrow_float(t))
      return opts_.native_f16 ? b_.CreateFPExt(mem, value_type(t)) : f16_bits_to_f32(b_, mem);
    return mem;
  }
  llvm::Value* to_memory(llvm::Value* v, DataType t) {
    if (t.is_bool()) return b_.CreateZExt(v, memory_type(t));
    if (t.is_bfloat16()) return f32_to_bf16_bits(b_, v);
    if (narrow_float(t))
      return opts_.native_f16 ? b_.CreateFPTrunc(v, memory_type(t)) : f32_to_f16_bits(b_, v);
    return v;
  }

  llvm::Value* emit_load(const ir::BufferLoadNode* n) {
    return to_value(emit_load_memory(n), n->dtype);
  }

  // The loaded elements as memory holds them (a bfloat16's bits, not its float value).
  llvm::Value* emit_load_memory(const ir::BufferLoadNode* n) {
    DataType t = n->dtype;
    DataType elem_t = t.element_of();
    llvm::Type* elem = memory_type(elem_t);
    llvm::Align align(elem_t.bytes());
    const ir::Expr& index = n->indices.at(0);
    if (t.lanes() == 1)
      return b_.CreateAlignedLoad(elem, address(n->buffer, elem, emit(index)), align);
    if (const ir::RampNode* r = unit_ramp(index))
      return b_.CreateAlignedLoad(memory_type(t), address(n->buffer, elem, emit(r->base)), align);
    if (const ir::RampNode* r = index.as<ir::RampNode>(); r && r->stride.as<ir::IntImmNode>()) {
      // A constant stride: one load per lane at a constant offset from the base, the vector built
      // from scalars. The gather instruction is slower: TBG-3's transposed copies made its best
      // kernel 79 us with it, 68.5 us without (Zen 4); Intel's microcode against Downfall slowed
      // its gathers too.
      llvm::Value* base = address(n->buffer, elem, emit(r->base));
      int64_t stride = r->stride.as<ir::IntImmNode>()->value;
      llvm::Value* v = llvm::PoisonValue::get(memory_type(t));
      for (int lane = 0; lane < t.lanes(); ++lane) {
        llvm::Value* p = b_.CreateInBoundsGEP(elem, base, b_.getInt64(stride * lane));
        v = b_.CreateInsertElement(v, b_.CreateAlignedLoad(elem, p, align), b_.getInt64(lane));
      }
      return v;
    }
    if (auto tile = rows_of(index)) {
      // Rows of consecutive elements (a tile of a larger array): one load per row.
      llvm::Value* base = address(n->buffer, elem, emit(tile->base));
      llvm::Type* row_t = memory_type(elem_t.with_lanes(tile->width));
      std::vector<llvm::Value*> rows;
      for (int r = 0; r < tile->rows; ++r)
        rows.push_back(b_.CreateAlignedLoad(
            row_t, b_.CreateInBoundsGEP(elem, base, b_.getInt64(r * tile->row_stride)), align));
      return concat_lanes(b_, std::move(rows));
    }
    llvm::Value* idx =
        b_.CreateSExtOrTrunc(emit(index), llvm::FixedVectorType::get(b_.getInt64Ty(), t.lanes()));
    llvm::Value* ptrs = b_.CreateInBoundsGEP(elem, buffer_base(n->buffer), idx);
    return b_.CreateMaskedGather(memory_type(t), ptrs, align);
  }

  // A vector index as rows of at least 4 consecutive elements, or nullopt (a ramp, a gather).
  static std::optional<arith::TileIndex> rows_of(const ir::Expr& index) {
    auto tile = arith::tile_index(index);
    return tile && tile->rows > 1 && tile->width >= 4 ? tile : std::nullopt;
  }

  void emit_store(const ir::BufferStoreNode* n) {
    if (auto* call = n->value.as<ir::CallNode>();
        call && call->op == ir::CallOp::kTileDot && emit_amx_store(n, call))
      return;
    DataType t = n->value.dtype();
    DataType elem_t = t.element_of();
    llvm::Type* elem = memory_type(elem_t);
    llvm::Align align(elem_t.bytes());
    llvm::Value* value = to_memory(emit(n->value), t);
    const ir::Expr& index = n->indices.at(0);
    if (t.lanes() == 1) {
      b_.CreateAlignedStore(value, address(n->buffer, elem, emit(index)), align);
    } else if (const ir::RampNode* r = unit_ramp(index)) {
      b_.CreateAlignedStore(value, address(n->buffer, elem, emit(r->base)), align);
    } else if (auto tile = rows_of(index)) {
      llvm::Value* base = address(n->buffer, elem, emit(tile->base));
      for (int r = 0; r < tile->rows; ++r)
        b_.CreateAlignedStore(lanes_of(b_, value, r * tile->width, tile->width),
                              b_.CreateInBoundsGEP(elem, base, b_.getInt64(r * tile->row_stride)),
                              align);
    } else {
      llvm::Value* idx =
          b_.CreateSExtOrTrunc(emit(index), llvm::FixedVectorType::get(b_.getInt64Ty(), t.lanes()));
      b_.CreateMaskedScatter(value, b_.CreateInBoundsGEP(elem, buffer_base(n->buffer), idx), align);
    }
  }

  // A libm function applied per lane (no LLVM intrinsic for it).
  llvm::Value* libm_call(const char* f32, const char* f64, llvm::Value* x) {
    llvm::Type* t = x->getType();
    llvm::Type* scalar = t->getScalarType();
    llvm::FunctionCallee fn =
        mod_->getOrInsertFunction(scalar->isDoubleTy() ? f64 : f32, scalar, scalar);
    if (!t->isVectorTy()) return b_.CreateCall(fn, {x});
    unsigned lanes = llvm::cast<llvm::FixedVectorType>(t)->getNumElements();
    llvm::Value* out = llvm::PoisonValue::get(t);
    for (unsigned i = 0; i < lanes; ++i)
      out = b_.CreateInsertElement(out, b_.CreateCall(fn, {b_.CreateExtractElement(x, i)}), i);
    return out;
  }

  // float exp inline (it vectorizes; see llvm_math.h); other types through LLVM's intrinsic.
  llvm::Value* emit_exp(llvm::Value* x) {
    if (x->getType()->getScalarType()->isFloatTy()) return detail::f32_exp(b_, x);
    return b_.CreateUnaryIntrinsic(llvm::Intrinsic::exp, x);
  }

  // Integer bit operations; an out-of-range shift as ir::CallOp::kShiftLeft says (LLVM's would be
  // poison).
  llvm::Value* emit_bit_call(const ir::CallNode* n, llvm::Value* x) {
    if (n->op == ir::CallOp::kBitwiseNot) return b_.CreateNot(x);
    llvm::Value* y = emit(n->args[1]);
    switch (n->op) {
      case ir::CallOp::kBitwiseAnd:
        return b_.CreateAnd(x, y);
      case ir::CallOp::kBitwiseOr:
        return b_.CreateOr(x, y);
      case ir::CallOp::kBitwiseXor:
        return b_.CreateXor(x, y);
      default: {
        llvm::Value* shifted = n->op == ir::CallOp::kShiftLeft ? b_.CreateShl(x, y)
                               : n->dtype.is_int()             ? b_.CreateAShr(x, y)
                                                               : b_.CreateLShr(x, y);
        unsigned bits = static_cast<unsigned>(n->dtype.bits());
        llvm::Value* width = llvm::ConstantInt::get(y->getType(), bits);
        llvm::Value* out = llvm::Constant::getNullValue(x->getType());
        if (n->op == ir::CallOp::kShiftRight && n->dtype.is_int())  // the sign, all bits
          out = b_.CreateAShr(x, llvm::ConstantInt::get(x->getType(), bits - 1));
        return b_.CreateSelect(b_.CreateICmpUGE(y, width), out, b_.CreateFreeze(shifted));
      }
    }
  }

  llvm::Value* emit_call(const ir::CallNode* n) {
    if (n->op == ir::CallOp::kIfThenElse) return emit_lazy_if(n);
    if (n->op == ir::CallOp::kGroupDot || n->op == ir::CallOp::kTileDot)
      return emit_group_dot_call(n);
    if (ir::is_gpu_call(n->op))
      throw Error(fmt::format("codegen: {} in CPU code", ir::call_op_name(n->op)));
    llvm::Value* x = emit(n->args[0]);
    if (ir::is_bit_call(n->op)) return emit_bit_call(n, x);
    bool is_float = n->args[0].dtype().is_float();
    llvm::Value* one = is_float ? llvm::ConstantFP::get(x->getType(), 1.0) : nullptr;
    switch (n->op) {
      case ir::CallOp::kExp:
        return emit_exp(x);
      case ir::CallOp::kLog:
        return b_.CreateUnaryIntrinsic(llvm::Intrinsic::log, x);
      case ir::CallOp::kSqrt:
        return b_.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x);
      case ir::CallOp::kRsqrt:
        return b_.CreateFDiv(one, b_.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x));
      case ir::CallOp::kTanh:
        return libm_call("tanhf", "tanh", x);
      case ir::CallOp::kErf:
        if (x->getType()->getScalarType()->isFloatTy()) return detail::f32_erf(b_, x);
        return libm_call("erff", "erf", x);
      case ir::CallOp::kSin:
        return libm_call("sinf", "sin", x);
      case ir::CallOp::kCos:
        return libm_call("cosf", "cos", x);
      case ir::CallOp::kTan:
        return libm_call("tanf", "tan", x);
      case ir::CallOp::kAsin:
        return libm_call("asinf", "asin", x);
      case ir::CallOp::kAcos:
        return libm_call("acosf", "acos", x);
      case ir::CallOp::kAtan:
        return libm_call("atanf", "atan", x);
      case ir::CallOp::kSinh:
        return libm_call("sinhf", "sinh", x);
      case ir::CallOp::kCosh:
        return libm_call("coshf", "cosh", x);
      case ir::CallOp::kAsinh:
        return libm_call("asinhf", "asinh", x);
      case ir::CallOp::kAcosh:
        return libm_call("acoshf", "acosh", x);
      case ir::CallOp::kAtanh:
        return libm_call("atanhf", "atanh", x);
      case ir::CallOp::kSigmoid: {
        // e^-|x| never overflows: 1 / (1 + t) for x >= 0, t / (1 + t) below, so that results
        // down to the subnormals keep their digits (1 / (1 + e^-x) is 0 from x = -88).
        llvm::Value* t = emit_exp(b_.CreateFNeg(b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x)));
        llvm::Value* numerator =
            b_.CreateSelect(b_.CreateFCmpOGE(x, llvm::ConstantFP::get(x->getType(), 0.0)), one, t);
        return b_.CreateFDiv(numerator, b_.CreateFAdd(one, t));
      }
      case ir::CallOp::kAbs:
        return is_float ? b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x)
                        : b_.CreateBinaryIntrinsic(llvm::Intrinsic::abs, x, b_.getFalse());
      case ir::CallOp::kPow:
        if (llvm::Value* root = emit_pow_by_square_roots(x, n->args[1])) return root;
        return b_.CreateBinaryIntrinsic(llvm::Intrinsic::pow, x, emit(n->args[1]));
      case ir::CallOp::kFloor:
        return is_float ? b_.CreateUnaryIntrinsic(llvm::Intrinsic::floor, x) : x;
      case ir::CallOp::kCeil:
        return is_float ? b_.CreateUnaryIntrinsic(llvm::Intrinsic::ceil, x) : x;
      case ir::CallOp::kRound:
        return is_float ? b_.CreateUnaryIntrinsic(llvm::Intrinsic::roundeven, x) : x;
      default:
        throw InternalError(fmt::format("codegen: unsupported call {}", ir::call_op_name(n->op)));
    }
  }

  // pow(x, p) for a constant p of 1/4, 1/2 or 3/4 (LRN's beta is 3/4 in every model-zoo network)
  // from square roots, which vectorize: llvm.pow is a libm call per element. Within 2 ulp of pow,
  // with its special values: x + 0 turns -0 into +0, -inf gives +inf, a negative x NaN.
  llvm::Value* emit_pow_by_square_roots(llvm::Value* x, const ir::Expr& exponent) {
    const ir::Expr* e = &exponent;
    if (const auto* lanes = exponent.as<ir::BroadcastNode>()) e = &lanes->value;  // vectorized
    const auto* p = e->as<ir::FloatImmNode>();
    if (!p || !exponent.dtype().is_float() ||
        (p->value != 0.25 && p->value != 0.5 && p->value != 0.75))
      return nullptr;
    llvm::Type* t = x->getType();
    llvm::Value* x0 = b_.Insert(
        llvm::BinaryOperator::Create(llvm::Instruction::FAdd, x, llvm::ConstantFP::get(t, 0.0)));
    llvm::Value* r = b_.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x0);
    if (p->value != 0.5) {
      llvm::Value* q = b_.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, r);
      r = p->value == 0.25 ? q : b_.CreateFMul(r, q);
    }
    llvm::Value* inf = llvm::ConstantFP::getInfinity(t);
    return b_.CreateSelect(b_.CreateFCmpOEQ(x, llvm::ConstantFP::getInfinity(t, true)), inf, r);
  }

  // group_dot's bfloat16 operands go as their bits (a load's, without the round trip through
  // float); the rest as values.
  llvm::Value* emit_group_dot_call(const ir::CallNode* n) {
    auto operand = [&](const ir::Expr& x) -> llvm::Value* {
      if (!x.dtype().is_bfloat16()) return emit(x);
      if (auto* load = x.as<ir::BufferLoadNode>()) return emit_load_memory(load);
      return to_memory(emit(x), x.dtype());
    };
    GroupDotOperands ops{emit(n->args[0]),   operand(n->args[1]), operand(n->args[2]),
                         n->args[0].dtype(), n->args[1].dtype(),  n->args[2].dtype()};
    if (n->op == ir::CallOp::kTileDot)
      return emit_tile_dot(b_, opts_.features, ops, ir::tile_dot_shape(n));
    return emit_group_dot(b_, opts_.features, ops);
  }

  // C[..] = tile_dot(C'[..], A[..], B[..], M) with every operand a tile in memory, on a CPU with
  // AMX: the tile instructions straight from and to memory. False (nothing emitted) otherwise.
  bool emit_amx_store(const ir::BufferStoreNode* store, const ir::CallNode* n) {
    const ir::TileDotShape s = ir::tile_dot_shape(n);
    DataType acc_t = n->args[0].dtype(), a_t = n->args[1].dtype(), b_t = n->args[2].dtype();
    std::string instruction = amx_instruction(acc_t, a_t, b_t, s, opts_.features);
    if (instruction.empty()) return false;
    auto load = [](const ir::Expr& e) { return e.as<ir::BufferLoadNode>(); };
    const ir::BufferLoadNode *acc = load(n->args[0]), *a = load(n->args[1]), *b = load(n->args[2]);
    if (!acc || !a || !b || store->indices.size() != 1 || acc->indices.size() != 1 ||
        a->indices.size() != 1 || b->indices.size() != 1)
      return false;
    // Each operand's index as `rows` rows of `width` elements, all checked before any address is
    // emitted.
    auto rows_of_width = [](const ir::Expr& index, int rows,
                            int width) -> std::optional<arith::TileIndex> {
      auto t = arith::tile_index(index, width);
      return t && t->rows == rows ? t : std::nullopt;
    };
    auto out_idx = rows_of_width(store->indices[0], s.m, s.n),
         acc_idx = rows_of_width(acc->indices[0], s.m, s.n);
    auto a_idx = rows_of_width(a->indices[0], s.m, s.k),
         b_idx = rows_of_width(b->indices[0], s.k / s.g, s.n * s.g);
    if (!out_idx || !acc_idx || !a_idx || !b_idx) return false;
    auto in_memory = [&](const ir::Buffer& buffer, const arith::TileIndex& t) {
      DataType elem_t = buffer->dtype.element_of();
      return TileInMemory{address(buffer, memory_type(elem_t), emit(t.base)),
                          t.row_stride * elem_t.bytes()};
    };
    TileInMemory c_in = in_memory(acc->buffer, *acc_idx),
                 c_out = in_memory(store->buffer, *out_idx);
    TileInMemory a_tile = in_memory(a->buffer, *a_idx), b_tile = in_memory(b->buffer, *b_idx);
    emit_amx_tile_dot(b_, instruction, s, a_t.element_of().bytes(), c_in, a_tile, b_tile, c_out);
    uses_tiles_ = true;
    return true;
  }

  // if_then_else evaluates only the chosen side: branches and a phi.
  llvm::Value* emit_lazy_if(const ir::CallNode* n) {
    llvm::Value* cond = emit(n->args[0]);
    if (cond->getType()->isVectorTy())  // lowering keeps lane-dependent conditions scalar
      throw InternalError("codegen: if_then_else with a vector condition");
    llvm::BasicBlock* then_bb = llvm::BasicBlock::Create(ctx_, "ite.then", func_);
    llvm::BasicBlock* else_bb = llvm::BasicBlock::Create(ctx_, "ite.else", func_);
    llvm::BasicBlock* done_bb = llvm::BasicBlock::Create(ctx_, "ite.done", func_);
    b_.CreateCondBr(cond, then_bb, else_bb);
    b_.SetInsertPoint(then_bb);
    llvm::Value* t = emit(n->args[1]);
    llvm::BasicBlock* then_end = b_.GetInsertBlock();
    b_.CreateBr(done_bb);
    b_.SetInsertPoint(else_bb);
    llvm::Value* f = emit(n->args[2]);
    llvm::BasicBlock* else_end = b_.GetInsertBlock();
    b_.CreateBr(done_bb);
    b_.SetInsertPoint(done_bb);
    llvm::PHINode* phi = b_.CreatePHI(t->getType(), 2);
    phi->addIncoming(t, then_end);
    phi->addIncoming(f, else_end);
    return phi;
  }

  // ---- statements ----
  void emit_stmt(const ir::Stmt& s) {
    switch (s.kind()) {
      case ir::StmtKind::kBufferStore:
        emit_store(s.as<ir::BufferStoreNode>());
        return;
      case ir::StmtKind::kSeqStmt:
        for (const ir::Stmt& c : s.as<ir::SeqStmtNode>()->seq) emit_stmt(c);
        return;
      case ir::StmtKind::kIfThenElse:
        emit_if(s.as<ir::IfThenElseNode>());
        return;
      case ir::StmtKind::kEvaluate:
        emit(s.as<ir::EvaluateNode>()->value);
        return;
      case ir::StmtKind::kFor: {
        auto* f = s.as<ir::ForNode>();
        if (f->for_kind == ir::ForKind::kParallel && opts_.parallel)
          emit_parallel(f);
        else
          emit_loop(f->loop_var, emit(f->min), emit(f->extent), [&] { emit_stmt(f->body); });
        return;
      }
      case ir::StmtKind::kAllocate:
        emit_allocate(s.as<ir::AllocateNode>());
        return;
      case ir::StmtKind::kBlock:
      case ir::StmtKind::kBlockRealize:
        throw Error("codegen: the function still has blocks: lower it first");
    }
  }

  void emit_if(const ir::IfThenElseNode* n) {
    llvm::Value* cond = emit(n->condition);
    llvm::BasicBlock* then_bb = llvm::BasicBlock::Create(ctx_, "if.then", func_);
    llvm::BasicBlock* done_bb = llvm::BasicBlock::Create(ctx_, "if.done", func_);
    llvm::BasicBlock* else_bb =
        n->else_case.defined() ? llvm::BasicBlock::Create(ctx_, "if.else", func_) : done_bb;
    b_.CreateCondBr(cond, then_bb, else_bb);
    b_.SetInsertPoint(then_bb);
    emit_stmt(n->then_case);
    b_.CreateBr(done_bb);
    if (n->else_case.defined()) {
      b_.SetInsertPoint(else_bb);
      emit_stmt(n->else_case);
      b_.CreateBr(done_bb);
    }
    b_.SetInsertPoint(done_bb);
  }

  // for (var = min; var < min + extent; ++var) body()
  template <typename Body>
  void emit_loop(const ir::Var& var, llvm::Value* min, llvm::Value* extent, Body body) {
    llvm::Type* t = value_type(var.dtype());
    min = b_.CreateIntCast(min, t, true);
    llvm::Value* end = b_.CreateAdd(min, b_.CreateIntCast(extent, t, true), "", false, true);
    llvm::BasicBlock* pre = b_.GetInsertBlock();
    llvm::BasicBlock* head = llvm::BasicBlock::Create(ctx_, var.name() + ".head", func_);
    llvm::BasicBlock* body_bb = llvm::BasicBlock::Create(ctx_, var.name() + ".body", func_);
    llvm::BasicBlock* exit = llvm::BasicBlock::Create(ctx_, var.name() + ".exit", func_);
    b_.CreateBr(head);
    b_.SetInsertPoint(head);
    llvm::PHINode* iv = b_.CreatePHI(t, 2, var.name());
    iv->addIncoming(min, pre);
    b_.CreateCondBr(b_.CreateICmpSLT(iv, end), body_bb, exit);
    b_.SetInsertPoint(body_bb);
    vars_[var.get()] = iv;
    body();
    vars_.erase(var.get());
    llvm::Value* next = b_.CreateAdd(iv, llvm::ConstantInt::get(t, 1), "", false, true);
    iv->addIncoming(next, b_.GetInsertBlock());
    b_.CreateBr(head);
    b_.SetInsertPoint(exit);
  }

  void emit_allocate(const ir::AllocateNode* n) {
    const ir::Buffer& buf = n->buffer;
    auto size = ir::as_const_int(buf->shape.at(0));
    if (!size) throw Error(fmt::format("codegen: buffer '{}' has a non-constant size", buf->name));
    DataType t = buf->dtype;
    int64_t bytes = *size * t.bytes();
    llvm::Type* elem = memory_type(t.element_of());
    if (bytes <= opts_.max_stack_bytes) {
      buffers_[buf.get()] = entry_alloca(elem, static_cast<uint64_t>(*size), 64);
      emit_stmt(n->body);
    } else {
      llvm::Value* p = b_.CreateCall(alloc_function(), {b_.getInt64(static_cast<uint64_t>(bytes))});
      branch_on_error(b_.CreateIsNull(p), status(runtime::kKernelOutOfMemory));
      buffers_[buf.get()] = p;
      live_heap_.push_back(p);
      emit_stmt(n->body);
      live_heap_.pop_back();
      b_.CreateCall(free_function(), {p});
    }
    buffers_.erase(buf.get());
  }

  // The body of a parallel loop becomes `void body(i64 begin, i64 end, ptr env)`; env holds the
  // captured variables and buffer pointers. The loop itself becomes tyche_parallel_for.
  void emit_parallel(const ir::ForNode* loop) {
    FreeVars free;
    free.add_parallel_body(loop);
    std::vector<llvm::Type*> fields;
    for (const ir::VarNode* v : free.vars) fields.push_back(value_type(v->dtype));
    for (size_t i = 0; i < free.buffers.size(); ++i) fields.push_back(ptr_type());
    llvm::StructType* env_type = llvm::StructType::get(ctx_, fields);

    // Fill the environment in the current function.
    llvm::Value* env = entry_alloca(env_type, 1, 8);
    unsigned field = 0;
    for (const ir::VarNode* v : free.vars)
      b_.CreateStore(lookup_var(v), b_.CreateStructGEP(env_type, env, field++));
    for (const ir::BufferNode* buf : free.buffers) {
      auto it = buffers_.find(buf);
      if (it == buffers_.end())
        throw InternalError(fmt::format(
            "codegen: parallel loop over '{}' uses buffer '{}', which is neither a parameter nor "
            "allocated around the loop",
            loop->loop_var->name, buf->name));
      b_.CreateStore(it->second, b_.CreateStructGEP(env_type, env, field++));
    }
    llvm::Value* extent = b_.CreateSExtOrTrunc(emit(loop->extent), b_.getInt64Ty());

    // The outlined body.
    auto* body_type = llvm::FunctionType::get(
        status_type(), {b_.getInt64Ty(), b_.getInt64Ty(), ptr_type()}, false);
    auto* body_fn = llvm::Function::Create(
        body_type, llvm::Function::InternalLinkage,
        fmt::format("{}_parallel_{}", func_->getName().str(), parallel_count_++), mod_);
    set_attributes(body_fn);
    body_fn->getArg(2)->addAttr(llvm::Attribute::NoAlias);
    auto saved_vars = vars_;
    auto saved_buffers = buffers_;
    auto saved_heap = std::move(live_heap_);
    live_heap_.clear();
    llvm::Function* saved_func = func_;
    llvm::BasicBlock* saved_entry = entry_;
    llvm::BasicBlock* saved_block = b_.GetInsertBlock();

    // body_fn unpacks the environment and calls body_impl, which runs the iterations. body_impl
    // takes the buffers as noalias parameters, as the kernel itself does: distinct buffers never
    // overlap, and once body_impl is inlined LLVM keeps that as scoped alias information, so an
    // accumulator tile in an output stays in registers across a loop that reads other buffers.
    begin_function(body_fn);
    llvm::Value* env_arg = body_fn->getArg(2);
    std::vector<llvm::Value*> impl_args = {body_fn->getArg(0), body_fn->getArg(1)};
    std::vector<llvm::Type*> impl_types = {b_.getInt64Ty(), b_.getInt64Ty()};
    field = 0;
    for (const ir::VarNode* v : free.vars) {
      impl_args.push_back(b_.CreateLoad(value_type(v->dtype),
                                        b_.CreateStructGEP(env_type, env_arg, field++), v->name));
      impl_types.push_back(value_type(v->dtype));
    }
    for (const ir::BufferNode* buf : free.buffers) {
      llvm::LoadInst* p =
          b_.CreateLoad(ptr_type(), b_.CreateStructGEP(env_type, env_arg, field++), buf->name);
      // 64-byte aligned, as the kernel's parameters and allocations are (kept through inlining).
      p->setMetadata(llvm::LLVMContext::MD_align,
                     llvm::MDNode::get(ctx_, {llvm::ConstantAsMetadata::get(b_.getInt64(64))}));
      impl_args.push_back(p);
      impl_types.push_back(ptr_type());
    }
    auto* impl_fn =
        llvm::Function::Create(llvm::FunctionType::get(status_type(), impl_types, false),
                               llvm::Function::InternalLinkage, body_fn->getName() + "_impl", mod_);
    set_attributes(impl_fn);
    impl_fn->addFnAttr(llvm::Attribute::AlwaysInline);
    b_.CreateRet(b_.CreateCall(impl_fn, impl_args));

    begin_function(impl_fn);
    vars_.clear();
    buffers_.clear();
    unsigned arg = 2;
    for (const ir::VarNode* v : free.vars) vars_[v] = impl_fn->getArg(arg++);
    for (const ir::BufferNode* buf : free.buffers) {
      llvm::Argument* p = impl_fn->getArg(arg++);
      p->setName(buf->name);
      p->addAttr(llvm::Attribute::NoAlias);
      p->addAttr(llvm::Attribute::getWithAlignment(ctx_, llvm::Align(64)));
      buffers_[buf] = p;
    }
    // Iterations [begin, end) of the loop: var = min + i.
    ir::Var index(loop->loop_var.name() + "_task", kInt64);
    llvm::Value* begin = impl_fn->getArg(0);
    llvm::Value* end = impl_fn->getArg(1);
    llvm::Value* local_min =
        b_.CreateIntCast(emit(loop->min), value_type(loop->loop_var.dtype()), true);
    emit_loop(index, begin, b_.CreateSub(end, begin), [&] {
      llvm::Value* i =
          b_.CreateIntCast(vars_.at(index.get()), value_type(loop->loop_var.dtype()), true);
      vars_[loop->loop_var.get()] = b_.CreateAdd(local_min, i, "", false, true);
      emit_stmt(loop->body);
    });
    b_.CreateRet(status(runtime::kKernelOk));

    func_ = saved_func;
    entry_ = saved_entry;
    vars_ = std::move(saved_vars);
    buffers_ = std::move(saved_buffers);
    live_heap_ = std::move(saved_heap);
    b_.SetInsertPoint(saved_block);
    llvm::FunctionCallee pfor =
        mod_->getOrInsertFunction(opts_.runtime_prefix + "parallel_for", status_type(),
                                  b_.getInt64Ty(), ptr_type(), ptr_type());
    llvm::Value* result = b_.CreateCall(pfor, {extent, body_fn, env});
    branch_on_error(b_.CreateICmpNE(result, status(runtime::kKernelOk)), result);
  }

  llvm::Value* lookup_var(const ir::VarNode* v) {
    auto it = vars_.find(v);
    if (it == vars_.end())
      throw InternalError(fmt::format("codegen: unbound variable '{}'", v->name));
    return it->second;
  }

  llvm::LLVMContext& ctx_;
  llvm::Module* mod_;
  llvm::IRBuilder<> b_;
  EmitOptions opts_;
  llvm::Function* func_ = nullptr;
  llvm::BasicBlock* entry_ = nullptr;
  std::unordered_map<const ir::VarNode*, llvm::Value*> vars_;
  std::unordered_map<const ir::BufferNode*, llvm::Value*> buffers_;
  bool uses_tiles_ = false;  // AMX: the entry asks for the tile state first
  std::vector<llvm::Value*>
      live_heap_;  // tyche_alloc'd buffers of the current function, outermost first
  int parallel_count_ = 0;
};

}  // namespace

std::unique_ptr<llvm::Module> emit_module(const ir::PrimFunc& lowered, llvm::LLVMContext& ctx,
                                          const EmitOptions& options) {
  auto mod = std::make_unique<llvm::Module>(lowered->name, ctx);
  Emitter(ctx, mod.get(), options).emit_function(lowered);
  return mod;
}

}  // namespace tyche::codegen::detail
