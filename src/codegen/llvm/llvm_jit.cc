// Target selection, the O3 pipeline, ORC JIT compilation, and assembly/object emission.
#include <fmt/format.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Verifier.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/Transforms/Utils/Cloning.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <mutex>
#include <optional>

#include "codegen/export/runtime_symbols.h"
#include "codegen/llvm/kernel_cache.h"
#include "codegen/llvm/llvm_codegen.h"
#include "codegen/llvm/llvm_emitter.h"
#include "ir/op.h"
#include "runtime/thread_pool.h"
#include "support/error.h"
#include "target/cpu.h"

namespace tyche::codegen {

namespace {

void initialize_llvm() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
  });
}

// Position-independent code for export: a user's program is usually a PIE, or a shared library.
llvm::orc::JITTargetMachineBuilder target_builder(const target::Cpu& cpu, bool pic = false) {
  initialize_llvm();
  llvm::orc::JITTargetMachineBuilder jtmb{llvm::Triple(llvm::sys::getProcessTriple())};
  jtmb.setCPU(cpu.llvm_cpu);
  llvm::SubtargetFeatures features(cpu.feature_string);
  jtmb.addFeatures(features.getFeatures());
  jtmb.setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
  if (pic) jtmb.setRelocationModel(llvm::Reloc::PIC_);
  return jtmb;
}

template <typename T>
T unwrap(llvm::Expected<T> v, const char* what) {
  if (!v) throw Error(fmt::format("codegen: {}: {}", what, llvm::toString(v.takeError())));
  return std::move(*v);
}

void check(llvm::Error e, const char* what) {
  if (e) throw Error(fmt::format("codegen: {}: {}", what, llvm::toString(std::move(e))));
}

void optimize(llvm::Module& m, llvm::TargetMachine& tm) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb(&tm);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3).run(m, mam);
}

// Code generation consumes the module it runs on.
std::string emit_file(llvm::Module& m, const target::Cpu& cpu, llvm::CodeGenFileType type,
                      bool pic = false) {
  auto tm = unwrap(target_builder(cpu, pic).createTargetMachine(), "target machine");
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream os(buffer);
  llvm::legacy::PassManager pm;
  if (tm->addPassesToEmitFile(pm, os, nullptr, type))
    throw Error("codegen: this target cannot emit that file type");
  pm.run(m);
  return std::string(buffer.begin(), buffer.end());
}

// The same from a module that must stay as it is (the kept copy).
std::string emit_file_from_copy(const llvm::Module& m, const target::Cpu& cpu,
                                llvm::CodeGenFileType type) {
  std::unique_ptr<llvm::Module> clone = llvm::CloneModule(m);
  return emit_file(*clone, cpu, type);
}

// Emits and verifies the module for `cpu`, and optimizes it unless told not to (the kernel
// cache keys the module as emitted).
std::unique_ptr<llvm::Module> optimized_module(const ir::PrimFunc& lowered, llvm::LLVMContext& ctx,
                                               const target::Cpu& cpu,
                                               const CompileOptions& options,
                                               bool for_export = false, bool optimized = true) {
  detail::EmitOptions eo{.max_stack_bytes = options.max_stack_bytes,
                         .cpu = cpu.llvm_cpu,
                         .features = cpu.feature_string,
                         .vector_bits = cpu.vector_bits(),
                         .native_f16 = cpu.has("f16c"),
                         .set_num_threads_entry = for_export,
                         .parallel = options.parallel,
                         .runtime_prefix = for_export ? kExportRuntimePrefix : kTycheRuntimePrefix};
  std::unique_ptr<llvm::Module> mod = detail::emit_module(lowered, ctx, eo);
  auto tm = unwrap(target_builder(cpu, for_export).createTargetMachine(), "target machine");
  mod->setDataLayout(tm->createDataLayout());
  mod->setTargetTriple(llvm::sys::getProcessTriple());
  if (for_export) mod->setPICLevel(llvm::PICLevel::BigPIC);
  std::string verify_errors;
  llvm::raw_string_ostream verify_os(verify_errors);
  if (llvm::verifyModule(*mod, &verify_os))
    throw InternalError("codegen produced an invalid LLVM module: " + verify_os.str());
  if (optimized) optimize(*mod, *tm);
  return mod;
}

// The module optimized as optimized_module() does.
void optimize_for(llvm::Module& m, const target::Cpu& cpu) {
  auto tm = unwrap(target_builder(cpu).createTargetMachine(), "target machine");
  optimize(m, *tm);
}

// A JIT with the runtime's symbols and the process's (libc, libm, libgcc_s) available. Generated
// code calls nothing else: no compiler-rt helpers (codegen tests check every CPU level).
std::unique_ptr<llvm::orc::LLJIT> make_jit(const target::Cpu& cpu) {
  auto jit =
      unwrap(llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(target_builder(cpu)).create(),
             "creating the JIT");
  llvm::orc::JITDylib& jd = jit->getMainJITDylib();
  llvm::orc::SymbolMap runtime_symbols;
  auto add = [&](const char* name, void* fn) {
    runtime_symbols[jit->mangleAndIntern(name)] = {llvm::orc::ExecutorAddr::fromPtr(fn),
                                                   llvm::JITSymbolFlags::Exported};
  };
  add("tyche_parallel_for", reinterpret_cast<void*>(&tyche_parallel_for));
  add("tyche_alloc", reinterpret_cast<void*>(&tyche_alloc));
  add("tyche_free", reinterpret_cast<void*>(&tyche_free));
  add("tyche_request_tiles", reinterpret_cast<void*>(&tyche_request_tiles));
  check(jd.define(llvm::orc::absoluteSymbols(std::move(runtime_symbols))), "runtime symbols");
  jd.addGenerator(unwrap(llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
                             jit->getDataLayout().getGlobalPrefix()),
                         "process symbols"));
  return jit;
}

std::vector<int64_t> elems_of(const ir::PrimFunc& f) {
  std::vector<int64_t> out;
  for (const ir::Buffer& p : f->params) {
    int64_t elems = 1;
    for (const ir::Expr& d : p->shape) {
      auto c = ir::as_const_int(d);
      if (!c) throw Error(fmt::format("codegen: parameter '{}' has a symbolic shape", p->name));
      elems *= *c;
    }
    out.push_back(elems);
  }
  return out;
}

class LLVMKernel : public CompiledKernel {
 public:
  LLVMKernel(const ir::PrimFunc& lowered, const CompileOptions& options)
      : cpu_(&target::resolve_cpu(options.cpu)) {
    auto start = std::chrono::steady_clock::now();
    target::check_runs_on_host(*cpu_);
    name_ = lowered->name;
    has_signature_ = true;
    param_elems_ = elems_of(lowered);
    for (const ir::Buffer& p : lowered->params) param_dtypes_.push_back(p->dtype);
    ctx_ = std::make_unique<llvm::LLVMContext>();
    std::unique_ptr<llvm::Module> mod =
        optimized_module(lowered, *ctx_, *cpu_, options, false, /*optimized=*/false);
    std::optional<std::string> cached;
    if (!options.keep_module)
      cached = detail::kernel_cache_path(*mod, cpu_->llvm_cpu, cpu_->feature_string);
    // Through an object file, as the tuner's worker and exported code get it: the machine code
    // timed in tuning is the code that runs here.
    std::string obj = cached ? detail::read_cached_object(*cached) : "";
    if (obj.empty()) {
      optimize_for(*mod, *cpu_);
      if (options.keep_module) kept_ = llvm::CloneModule(*mod);
      obj = emit_file(*mod, *cpu_, llvm::CodeGenFileType::ObjectFile);
      if (cached) detail::write_cached_object(*cached, obj);
    }
    jit_ = make_jit(*cpu_);
    check(jit_->addObjectFile(llvm::MemoryBuffer::getMemBufferCopy(obj, name_ + ".o")),
          "loading the object");
    auto addr = unwrap(jit_->lookup(detail::packed_name(name_)), "looking up the kernel");
    entry_ = addr.toPtr<runtime::PackedFunc>();
    compile_seconds_ =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }

  // A kernel loaded from an object file.
  LLVMKernel(const std::string& object_path, const std::string& name)
      : cpu_(&target::resolve_cpu("host")) {
    auto start = std::chrono::steady_clock::now();
    name_ = name;
    auto buffer = llvm::MemoryBuffer::getFile(object_path);
    if (!buffer)
      throw Error(fmt::format("cannot read object file '{}': {}", object_path,
                              buffer.getError().message()));
    jit_ = make_jit(*cpu_);
    check(jit_->addObjectFile(std::move(*buffer)), "loading the object file");
    auto addr = unwrap(jit_->lookup(detail::packed_name(name_)), "looking up the kernel");
    entry_ = addr.toPtr<runtime::PackedFunc>();
    compile_seconds_ =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }

  ~LLVMKernel() override {
    jit_.reset();
    kept_.reset();
  }

  std::string llvm_ir() const override {
    std::string s;
    llvm::raw_string_ostream os(s);
    kept().print(os, nullptr);
    return os.str();
  }
  std::string assembly() const override {
    return emit_file_from_copy(kept(), *cpu_, llvm::CodeGenFileType::AssemblyFile);
  }
  void save_object(const std::string& path) const override {
    std::string obj = emit_file_from_copy(kept(), *cpu_, llvm::CodeGenFileType::ObjectFile);
    std::ofstream out(path, std::ios::binary);
    if (!out.write(obj.data(), static_cast<std::streamsize>(obj.size())))
      throw Error(fmt::format("cannot write '{}'", path));
  }

 private:
  const llvm::Module& kept() const {
    if (!kept_)
      throw Error("codegen: compile with keep_module to get the IR, assembly or object file");
    return *kept_;
  }

  const target::Cpu* cpu_;
  std::unique_ptr<llvm::LLVMContext> ctx_;  // of the kept module
  std::unique_ptr<llvm::Module> kept_;
  std::unique_ptr<llvm::orc::LLJIT> jit_;
};

}  // namespace

void CompiledKernel::fail(int32_t status) const {
  throw Error(fmt::format("kernel '{}' failed: {}", name_, runtime::kernel_status_text(status)));
}

void CompiledKernel::run(std::vector<runtime::NDArray>& args) const {
  if (!has_signature_) {  // loaded from an object file: no parameter metadata to check against
    std::vector<void*> ptrs;
    for (auto& a : args) ptrs.push_back(a.data());
    run(ptrs.data());
    return;
  }
  if (args.size() != param_elems_.size())
    throw Error(fmt::format("kernel '{}' takes {} buffers, got {}", name_, param_elems_.size(),
                            args.size()));
  std::vector<void*> ptrs;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].numel() != param_elems_[i] || args[i].dtype() != param_dtypes_[i])
      throw Error(fmt::format("kernel '{}': argument {} is {} elements of {}, expected {} of {}",
                              name_, i, args[i].numel(), args[i].dtype().str(), param_elems_[i],
                              param_dtypes_[i].str()));
    ptrs.push_back(args[i].data());
  }
  run(ptrs.data());
}

std::unique_ptr<CompiledKernel> compile(const ir::PrimFunc& lowered,
                                        const CompileOptions& options) {
  return std::make_unique<LLVMKernel>(lowered, options);
}

void compile_to_object(const ir::PrimFunc& lowered, const std::string& path,
                       const CompileOptions& options) {
  const target::Cpu& cpu = target::resolve_cpu(options.cpu);
  llvm::LLVMContext ctx;
  std::unique_ptr<llvm::Module> mod = optimized_module(lowered, ctx, cpu, options);
  std::string obj = emit_file(*mod, cpu, llvm::CodeGenFileType::ObjectFile);
  std::ofstream out(path, std::ios::binary);
  if (!out.write(obj.data(), static_cast<std::streamsize>(obj.size())))
    throw Error(fmt::format("cannot write '{}'", path));
}

std::string compile_export_object(const ir::PrimFunc& lowered, const CompileOptions& options) {
  const target::Cpu& cpu = target::resolve_cpu(options.cpu);
  llvm::LLVMContext ctx;
  std::unique_ptr<llvm::Module> mod =
      optimized_module(lowered, ctx, cpu, options, /*for_export=*/true);
  return emit_file(*mod, cpu, llvm::CodeGenFileType::ObjectFile, /*pic=*/true);
}

namespace detail {

std::string export_object(llvm::Module& mod, const std::string& cpu_name) {
  const target::Cpu& cpu = target::resolve_cpu(cpu_name);
  auto tm = unwrap(target_builder(cpu, /*pic=*/true).createTargetMachine(), "target machine");
  mod.setDataLayout(tm->createDataLayout());
  mod.setTargetTriple(llvm::sys::getProcessTriple());
  mod.setPICLevel(llvm::PICLevel::BigPIC);
  std::string verify_errors;
  llvm::raw_string_ostream verify_os(verify_errors);
  if (llvm::verifyModule(mod, &verify_os))
    throw InternalError("codegen produced an invalid LLVM module: " + verify_os.str());
  return emit_file(mod, cpu, llvm::CodeGenFileType::ObjectFile, /*pic=*/true);
}

}  // namespace detail

std::unique_ptr<CompiledKernel> load_object(const std::string& path, const std::string& name) {
  return std::make_unique<LLVMKernel>(path, name);
}

runtime::Module build_module(const std::vector<ir::PrimFunc>& lowered,
                             const CompileOptions& options) {
  runtime::Module m;
  for (const ir::PrimFunc& f : lowered) {
    std::shared_ptr<CompiledKernel> k = compile(f, options);
    m.add(f->name, k->packed(), k);
  }
  return m;
}

}  // namespace tyche::codegen
