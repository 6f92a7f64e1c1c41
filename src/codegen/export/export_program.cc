#include "codegen/export/export_program.h"

#include <fmt/format.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/GlobalVariable.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/MDBuilder.h>

#include <memory>

#include "codegen/export/runtime_symbols.h"
#include "codegen/llvm/llvm_emitter.h"
#include "runtime/module.h"
#include "support/error.h"

namespace tyche::codegen {

namespace {

class ProgramEmitter {
 public:
  ProgramEmitter(const ExportProgram& p, llvm::LLVMContext& ctx, llvm::Module* mod)
      : p_(p), ctx_(ctx), mod_(mod), b_(ctx) {}

  void emit() {
    for (size_t i = 0; i < p_.constants.size(); ++i) constants_.push_back(constant(i));
    size_t num_params = static_cast<size_t>(p_.num_inputs) + p_.outputs.size();
    auto* fty = llvm::FunctionType::get(b_.getInt32Ty(),
                                        std::vector<llvm::Type*>(num_params, ptr()), false);
    llvm::Function* fn = function(fty, p_.name);
    std::vector<llvm::Value*> params;
    for (size_t i = 0; i < num_params; ++i) {
      llvm::Argument* a = fn->getArg(static_cast<unsigned>(i));
      a->setName(i < static_cast<size_t>(p_.num_inputs)
                     ? fmt::format("in{}", i)
                     : fmt::format("out{}", i - static_cast<size_t>(p_.num_inputs)));
      params.push_back(a);
    }
    b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", fn));
    llvm::Value* any_null = b_.getFalse();
    for (llvm::Value* a : params) any_null = b_.CreateOr(any_null, b_.CreateIsNull(a));
    leave_if(fn, any_null, status(runtime::kKernelNullArgument), nullptr);

    llvm::Value* arena = nullptr;
    if (p_.arena_bytes > 0) {
      llvm::FunctionCallee alloc = mod_->getOrInsertFunction(
          std::string(kExportRuntimePrefix) + "alloc", ptr(), b_.getInt64Ty());
      arena = b_.CreateCall(alloc, {b_.getInt64(static_cast<uint64_t>(p_.arena_bytes))}, "arena");
      leave_if(fn, b_.CreateIsNull(arena), status(runtime::kKernelOutOfMemory), nullptr);
    }
    for (const ProgramCall& call : p_.calls) {
      std::vector<llvm::Value*> args;
      for (const ProgramBuffer& a : call.args) args.push_back(address(a, params, arena));
      auto* kty = llvm::FunctionType::get(b_.getInt32Ty(),
                                          std::vector<llvm::Type*>(args.size(), ptr()), false);
      llvm::Value* s =
          b_.CreateCall(mod_->getOrInsertFunction(call.kernel, kty), args, call.kernel + ".status");
      leave_if(fn, b_.CreateICmpNE(s, status(runtime::kKernelOk)), s, arena);
    }
    for (size_t o = 0; o < p_.outputs.size(); ++o) {
      const ProgramBuffer& from = p_.outputs[o];
      llvm::MaybeAlign src_align(
          from.kind == ProgramBuffer::Kind::kInput ? 1 : runtime::kKernelAlignment);
      b_.CreateMemCpy(params[static_cast<size_t>(p_.num_inputs) + o], llvm::MaybeAlign(1),
                      address(from, params, arena), src_align,
                      static_cast<uint64_t>(p_.output_bytes.at(o)));
    }
    free_arena(arena);
    b_.CreateRet(status(runtime::kKernelOk));

    // NAME_packed(ptr args)
    llvm::Function* packed =
        function(llvm::FunctionType::get(b_.getInt32Ty(), {ptr()}, false), p_.name + "_packed");
    b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", packed));
    std::vector<llvm::Value*> args;
    for (size_t i = 0; i < num_params; ++i)
      args.push_back(b_.CreateAlignedLoad(
          ptr(), b_.CreateConstInBoundsGEP1_64(ptr(), packed->getArg(0), i), llvm::Align(8)));
    b_.CreateRet(b_.CreateCall(fn, args));

    // NAME_set_num_threads(i32)
    auto* sty = llvm::FunctionType::get(b_.getVoidTy(), {b_.getInt32Ty()}, false);
    llvm::Function* set = function(sty, p_.name + "_set_num_threads");
    b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", set));
    if (p_.parallel)
      b_.CreateCall(
          mod_->getOrInsertFunction(std::string(kExportRuntimePrefix) + "set_num_threads", sty),
          {set->getArg(0)});
    b_.CreateRetVoid();
  }

 private:
  llvm::Type* ptr() { return llvm::PointerType::get(ctx_, 0); }
  llvm::Value* status(runtime::KernelStatus s) { return b_.getInt32(static_cast<uint32_t>(s)); }

  llvm::Function* function(llvm::FunctionType* type, const std::string& name) {
    if (mod_->getNamedValue(name)) throw Error(fmt::format("export: '{}' is defined twice", name));
    llvm::Function* fn = llvm::Function::Create(type, llvm::Function::ExternalLinkage, name, mod_);
    fn->addFnAttr(llvm::Attribute::NoUnwind);
    return fn;
  }

  // Constant i: read-only, 64-byte aligned, private to the object.
  llvm::GlobalVariable* constant(size_t i) {
    std::string_view bytes = p_.constants[i];
    auto* type = llvm::ArrayType::get(b_.getInt8Ty(), bytes.size());
    llvm::Constant* init =
        bytes.empty() ? llvm::ConstantAggregateZero::get(type)
                      : llvm::ConstantDataArray::getRaw(llvm::StringRef(bytes.data(), bytes.size()),
                                                        bytes.size(), b_.getInt8Ty());
    auto* g = new llvm::GlobalVariable(*mod_, type, /*isConstant=*/true,
                                       llvm::GlobalValue::PrivateLinkage, init,
                                       fmt::format("{}.constant{}", p_.name, i));
    g->setAlignment(llvm::Align(runtime::kKernelAlignment));
    return g;
  }

  llvm::Value* address(const ProgramBuffer& a, const std::vector<llvm::Value*>& params,
                       llvm::Value* arena) {
    switch (a.kind) {
      case ProgramBuffer::Kind::kInput:
        if (a.index < 0 || a.index >= p_.num_inputs)
          throw InternalError(fmt::format("export: no input {}", a.index));
        return params[static_cast<size_t>(a.index)];
      case ProgramBuffer::Kind::kConstant:
        if (a.index < 0 || static_cast<size_t>(a.index) >= constants_.size())
          throw InternalError(fmt::format("export: no constant {}", a.index));
        return constants_[static_cast<size_t>(a.index)];
      case ProgramBuffer::Kind::kArena:
        if (!arena || a.index < 0 || a.index >= p_.arena_bytes ||
            a.index % runtime::kKernelAlignment != 0)
          throw InternalError(fmt::format("export: arena offset {} outside the arena of {} bytes",
                                          a.index, p_.arena_bytes));
        return b_.CreateConstInBoundsGEP1_64(b_.getInt8Ty(), arena, static_cast<uint64_t>(a.index));
    }
    throw InternalError("export: unknown buffer kind");
  }

  void free_arena(llvm::Value* arena) {
    if (arena)
      b_.CreateCall(mod_->getOrInsertFunction(std::string(kExportRuntimePrefix) + "free",
                                              b_.getVoidTy(), ptr()),
                    {arena});
  }

  // When `failed` holds, frees the arena (if any) and returns `code`; else goes on.
  void leave_if(llvm::Function* fn, llvm::Value* failed, llvm::Value* code, llvm::Value* arena) {
    auto* fail = llvm::BasicBlock::Create(ctx_, "fail", fn);
    auto* ok = llvm::BasicBlock::Create(ctx_, "ok", fn);
    b_.CreateCondBr(failed, fail, ok, llvm::MDBuilder(ctx_).createBranchWeights(1, 1 << 20));
    b_.SetInsertPoint(fail);
    free_arena(arena);
    b_.CreateRet(code);
    b_.SetInsertPoint(ok);
  }

  const ExportProgram& p_;
  llvm::LLVMContext& ctx_;
  llvm::Module* mod_;
  llvm::IRBuilder<> b_;
  std::vector<llvm::GlobalVariable*> constants_;
};

}  // namespace

std::string compile_program_object(const ExportProgram& program, const std::string& cpu) {
  if (program.outputs.size() != program.output_bytes.size())
    throw InternalError("export: one size per output");
  llvm::LLVMContext ctx;
  auto mod = std::make_unique<llvm::Module>(program.name, ctx);
  ProgramEmitter(program, ctx, mod.get()).emit();
  return detail::export_object(*mod, cpu);
}

}  // namespace tyche::codegen
