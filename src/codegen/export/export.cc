#include "codegen/export/export.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>
#include <sstream>

#include "codegen/c/c_codegen.h"
#include "codegen/export/runtime_symbols.h"
#include "codegen/llvm/llvm_archive.h"
#include "codegen/llvm/llvm_codegen.h"
#include "ir/op.h"
#include "lower/lower.h"
#include "runtime/module.h"
#include "support/error.h"
#include "support/tensor_size.h"
#include "target/cpu.h"

namespace tyche::codegen {

namespace detail {
// export_runtime_embedded.cc, generated from export_runtime.c at build time.
extern const unsigned char kExportRuntimeObject[];
extern const std::size_t kExportRuntimeObjectSize;
extern const unsigned char kExportRuntimeSource[];
extern const std::size_t kExportRuntimeSourceSize;
}  // namespace detail

namespace {

namespace fs = std::filesystem;

// The runtime's member is named after its ABI (runtime_symbols.h): a library may hold kernels
// of several Tyche versions.
const std::string kRuntimeMember = std::string(kExportRuntimePrefix) + "runtime.o";
const std::string kRuntimeSourceFile = std::string(kExportRuntimePrefix) + "runtime.c";

// Keywords of C11 and C++20 (a header is included by both), and names the header itself uses.
const std::set<std::string>& reserved_names() {
  static const std::set<std::string> names = {"alignas",
                                              "alignof",
                                              "and",
                                              "and_eq",
                                              "asm",
                                              "auto",
                                              "bitand",
                                              "bitor",
                                              "bool",
                                              "break",
                                              "case",
                                              "catch",
                                              "char",
                                              "char8_t",
                                              "char16_t",
                                              "char32_t",
                                              "class",
                                              "compl",
                                              "concept",
                                              "const",
                                              "consteval",
                                              "constexpr",
                                              "constinit",
                                              "const_cast",
                                              "continue",
                                              "co_await",
                                              "co_return",
                                              "co_yield",
                                              "decltype",
                                              "default",
                                              "delete",
                                              "do",
                                              "double",
                                              "dynamic_cast",
                                              "else",
                                              "enum",
                                              "explicit",
                                              "export",
                                              "extern",
                                              "false",
                                              "float",
                                              "for",
                                              "friend",
                                              "goto",
                                              "if",
                                              "inline",
                                              "int",
                                              "long",
                                              "mutable",
                                              "namespace",
                                              "new",
                                              "noexcept",
                                              "not",
                                              "not_eq",
                                              "nullptr",
                                              "operator",
                                              "or",
                                              "or_eq",
                                              "private",
                                              "protected",
                                              "public",
                                              "register",
                                              "reinterpret_cast",
                                              "requires",
                                              "restrict",
                                              "return",
                                              "short",
                                              "signed",
                                              "sizeof",
                                              "static",
                                              "static_assert",
                                              "static_cast",
                                              "struct",
                                              "switch",
                                              "template",
                                              "this",
                                              "thread_local",
                                              "throw",
                                              "true",
                                              "try",
                                              "typedef",
                                              "typeid",
                                              "typename",
                                              "union",
                                              "unsigned",
                                              "using",
                                              "virtual",
                                              "void",
                                              "volatile",
                                              "wchar_t",
                                              "while",
                                              "xor",
                                              "xor_eq",
                                              "main",
                                              "args"};
  return names;
}

// Functions of the C library a program is likely to use: a kernel of that name would be a global
// definition overriding them (its object) or conflicting with their declarations (its C).
const std::set<std::string>& library_names() {
  static const std::set<std::string> names = {
      "abs",    "acos",   "asin",      "atan",    "atan2",     "cbrt",          "ceil",   "cos",
      "cosh",   "erf",    "erfc",      "exp",     "exp2",      "expm1",         "fabs",   "floor",
      "fma",    "fmax",   "fmin",      "fmod",    "hypot",     "log",           "log10",  "log1p",
      "log2",   "lround", "nearbyint", "pow",     "remainder", "rint",          "round",  "sin",
      "sinh",   "sqrt",   "tan",       "tanh",    "trunc",     "aligned_alloc", "calloc", "exit",
      "abort",  "free",   "malloc",    "realloc", "qsort",     "memcmp",        "memcpy", "memmove",
      "memset", "strlen", "printf",    "fprintf", "puts",      "fopen",         "fread",  "fwrite",
      "fclose", "time",   "clock"};
  return names;
}

bool is_identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

// The parameters' names in the prototype: their buffer names made C identifiers, distinct.
std::vector<std::string> parameter_names(const ir::PrimFunc& f) {
  std::vector<std::string> names;
  for (const ir::Buffer& b : f->params) names.push_back(b->name);
  return export_parameter_names(names);
}

std::vector<int64_t> shape_of(const ir::Buffer& b) {
  std::vector<int64_t> shape;
  for (const ir::Expr& d : b->shape) {
    auto c = ir::as_const_int(d);
    if (!c) throw Error(fmt::format("export: parameter '{}' has a symbolic shape", b->name));
    shape.push_back(*c);
  }
  return shape;
}

// The same function under another name.
ir::PrimFunc renamed(const ir::PrimFunc& f, const std::string& name) {
  return ir::PrimFunc(name, f->params, f->num_outputs, f->body);
}

// Writes `content` to `path` through a temporary file in the same directory (renamed over it
// only once complete), returning the temporary's path for the caller to rename.
std::string write_temporary(const fs::path& path, const std::string& content) {
  static std::atomic<int> counter{0};
  std::string tmp = fmt::format("{}.tmp-{}-{}", path.string(), ::getpid(), counter++);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  bool ok = fd >= 0;
  for (size_t done = 0; ok && done < content.size();) {
    ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) done += static_cast<size_t>(n);
  }
  if (ok && ::fsync(fd) != 0) ok = false;  // renamed over the old file only once on disk
  std::string why = ok ? "" : std::strerror(errno);
  if (fd >= 0 && ::close(fd) != 0 && ok) {
    ok = false;
    why = std::strerror(errno);
  }
  if (!ok) {
    if (fd >= 0) ::unlink(tmp.c_str());
    throw Error(fmt::format("export: cannot write '{}': {}", path.string(), why));
  }
  return tmp;
}

// Exports into one directory take turns (two `tyche export --library L` at once, as from make
// -j, would otherwise each add their kernel to the library as it was, and one would be lost).
// Best effort: where directories cannot be locked (some network file systems), no lock.
class DirectoryLock {
 public:
  explicit DirectoryLock(const fs::path& dir)
      : fd_(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)) {
    if (fd_ >= 0 && ::flock(fd_, LOCK_EX) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  ~DirectoryLock() {
    if (fd_ >= 0) ::close(fd_);
  }
  DirectoryLock(const DirectoryLock&) = delete;
  DirectoryLock& operator=(const DirectoryLock&) = delete;

 private:
  int fd_;
};

// `dir`, created when missing.
fs::path create_directory(const std::string& dir) {
  fs::path out(dir);
  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec || !fs::is_directory(out))
    throw Error(fmt::format("export: cannot create the directory '{}': {}", dir,
                            ec ? ec.message() : "a file has that name"));
  return out;
}

// Writes the files (name in `out`, content) under temporary names, then renames each over its
// name, in order; returns their paths. A failure before the renames leaves every file as it was.
std::vector<std::string> write_files(
    const fs::path& out, const std::vector<std::pair<std::string, std::string>>& files) {
  std::vector<std::string> temporaries;
  try {
    for (const auto& [name, content] : files)
      temporaries.push_back(write_temporary(out / name, content));
  } catch (...) {
    for (const std::string& t : temporaries) ::unlink(t.c_str());
    throw;
  }
  std::vector<std::string> written;
  for (size_t i = 0; i < files.size(); ++i) {
    fs::path path = out / files[i].first;
    if (::rename(temporaries[i].c_str(), path.c_str()) != 0) {
      std::string message =
          fmt::format("export: cannot write '{}': {}", path.string(), std::strerror(errno));
      for (size_t j = i; j < files.size(); ++j) ::unlink(temporaries[j].c_str());
      throw Error(message);
    }
    written.push_back(path.string());
  }
  return written;
}

}  // namespace

void check_export_name(const std::string& name) {
  if (!is_identifier(name))
    throw Error(fmt::format(
        "export: '{}' is not a C identifier (letters, digits and _, not starting with a digit)",
        name));
  if (reserved_names().count(name))
    throw Error(fmt::format("export: '{}' is a C or C++ keyword", name));
  std::string base = name.size() > 1 && (name.back() == 'f' || name.back() == 'l')
                         ? name.substr(0, name.size() - 1)
                         : name;
  if (library_names().count(name) || library_names().count(base))
    throw Error(fmt::format(
        "export: '{}' is a function of the C library; the kernel would replace it", name));
  if (name[0] == '_')
    throw Error(
        fmt::format("export: names starting with '_' are the C implementation's ('{}')", name));
  if (name.rfind("tyche_", 0) == 0)
    throw Error(fmt::format("export: names starting with 'tyche_' are the runtime's ('{}')", name));
}

std::string export_runtime_object() {
  return std::string(reinterpret_cast<const char*>(detail::kExportRuntimeObject),
                     detail::kExportRuntimeObjectSize);
}

std::string export_runtime_member() {
  return kRuntimeMember;
}

std::vector<std::string> export_parameter_names(const std::vector<std::string>& names) {
  std::vector<std::string> out;
  std::set<std::string> used;
  for (const std::string& name : names) {
    std::string n;
    for (char c : name) n += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
    if (n.empty() || std::isdigit(static_cast<unsigned char>(n[0])) || reserved_names().count(n))
      n = "arg_" + n;
    std::string unique = n;
    for (int k = 2; used.count(unique); ++k) unique = fmt::format("{}_{}", n, k);
    used.insert(unique);
    out.push_back(unique);
  }
  return out;
}

std::string export_dtype_comment(DataType t) {
  if (t.is_bfloat16()) return "bfloat16 (uint16_t: the high half of a float's bits)";
  if (t.is_float() && t.bits() == 16) return "float16 (uint16_t: IEEE half-precision bits)";
  if (t.is_bool()) return "bool (one byte, 0 or 1)";
  return t.str();
}

std::string export_error_codes() {
  using namespace runtime;
  std::string cases;
  for (int32_t code :
       {kKernelOk, kKernelNullArgument, kKernelOutOfMemory, kKernelMisaligned, kKernelNoTileState})
    cases += fmt::format("    case {}: return \"{}\";\n", code, kernel_status_text(code));
  return fmt::format(R"(#ifndef TYCHE_OK
#define TYCHE_OK {}
#define TYCHE_ERROR_NULL_ARGUMENT {}
#define TYCHE_ERROR_OUT_OF_MEMORY {}
#define TYCHE_ERROR_MISALIGNED {} /* no longer returned: any alignment works */
#define TYCHE_ERROR_NO_TILE_STATE {} /* the OS refused AMX's tile registers */
#define TYCHE_ALIGNMENT {} /* a recommendation: any alignment; {}-byte aligned buffers avoid a copy */
static inline const char* tyche_error_string(int code) {{
  switch (code) {{
{}  }}
  return "unknown error code";
}}
#endif
)",
                     static_cast<int>(kKernelOk), static_cast<int>(kKernelNullArgument),
                     static_cast<int>(kKernelOutOfMemory), static_cast<int>(kKernelMisaligned),
                     static_cast<int>(kKernelNoTileState), kKernelAlignment, kKernelAlignment,
                     cases);
}

std::string export_header_opening(const std::string& name, bool parallel) {
  std::string h;
  if (parallel)
    h += " *\n"
         " * The thread pool is shared by every Tyche kernel in the program. It starts on the "
         "first\n"
         " * parallel loop with TYCHE_NUM_THREADS threads (an environment variable), else one per "
         "CPU\n" +
         fmt::format(
             " * this process may use; {}_set_num_threads(n) sets the number (1: run serially).\n",
             name);
  h += " */\n";
  h += fmt::format("#ifndef {0}\n#define {0}\n\n#include <stdbool.h>\n#include <stdint.h>\n\n",
                   "TYCHE_EXPORT_" + name + "_H");
  h += "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n" + export_error_codes() + "\n";
  return h;
}

std::string export_argument_defines(const std::string& prefix, const std::vector<int64_t>& shape,
                                    int64_t elements, int64_t bytes, DataType dtype) {
  std::string h = fmt::format("#define {}_DIMS {}\n", prefix, shape.size());
  if (!shape.empty())  // C has no empty initializer
    h += fmt::format("#define {}_SHAPE {{{}}}\n", prefix, fmt::join(shape, ", "));
  h += fmt::format("#define {}_ELEMENTS {}\n#define {}_BYTES {}\n#define {}_DTYPE \"{}\"\n", prefix,
                   elements, prefix, bytes, prefix, dtype.str());
  return h;
}

std::string export_header_closing(const std::string& name, const std::string& prototype,
                                  bool parallel, const std::string& what) {
  return prototype + ";\n" +
         fmt::format(
             "/* The same, the argument pointers in an array (inputs, then outputs). */\nint32_t "
             "{}_packed(void** args);\n",
             name) +
         fmt::format(
             "/* The number of threads of the library's pool{}. */\nvoid {}_set_num_threads(int "
             "n);\n",
             parallel ? "" : fmt::format(" (this {} runs serially: no effect)", what), name) +
         "\n#ifdef __cplusplus\n}\n#endif\n\n#endif\n";
}

std::string export_comment_text(std::string text) {
  for (size_t i; (i = text.find("*/")) != std::string::npos;) text.replace(i, 2, "* /");
  for (size_t i; (i = text.find("/*")) != std::string::npos;) text.replace(i, 2, "/ *");
  std::replace(text.begin(), text.end(), '\n', ' ');
  return text;
}

std::vector<std::string> write_export_files(
    const std::string& dir, const std::vector<std::pair<std::string, std::string>>& files) {
  fs::path out = create_directory(dir);
  DirectoryLock lock(out);
  return write_files(out, files);
}

std::string export_runtime_source() {
  return std::string(reinterpret_cast<const char*>(detail::kExportRuntimeSource),
                     detail::kExportRuntimeSourceSize);
}

std::string export_header(const ir::PrimFunc& func, const ExportOptions& o) {
  check_export_name(o.name);
  const std::string& n = o.name;
  std::vector<std::string> names = parameter_names(func);
  size_t num_inputs = func->params.size() - static_cast<size_t>(func->num_outputs);
  std::string code =
      o.target == "c" ? "portable C11"
                      : fmt::format("machine code for {}", target::resolve_cpu(o.cpu).describe());
  std::ostringstream h;
  h << fmt::format("/* {}.h: the kernel {}, exported by Tyche (tyche export).\n", n, n);
  if (!o.description.empty()) h << fmt::format(" * {}\n", export_comment_text(o.description));
  h << fmt::format(" * Code: {}; {}.\n", code,
                   o.parallel ? "parallel loops run on the library's thread pool"
                              : "serial (exported with --threads 1)");
  std::vector<std::string> proto;
  for (size_t i = 0; i < names.size(); ++i)
    proto.push_back(fmt::format("{}{}* {}", i < num_inputs ? "const " : "",
                                c_parameter_type(func->params[i]->dtype), names[i]));
  std::string prototype = fmt::format("int32_t {}({})", n, fmt::join(proto, ", "));
  h << " *\n *   " << prototype << ";\n *\n";
  h << " * Arguments, in order: dense row-major arrays (the last index varies fastest), each\n"
    << " * overlapping no other, of any alignment; " << runtime::kKernelAlignment
    << "-byte aligned buffers (TYCHE_ALIGNMENT, aligned_alloc) avoid a\n"
    << " * copy (a misaligned one is copied into an aligned temporary, and back for an output):\n";
  for (size_t i = 0; i < names.size(); ++i) {
    const ir::Buffer& b = func->params[i];
    std::string dims;
    for (int64_t d : shape_of(b)) dims += fmt::format("[{}]", d);
    h << fmt::format(" *   {:<10} {:<7} {} {}\n", names[i], i < num_inputs ? "input" : "output",
                     export_dtype_comment(b->dtype), dims);
  }
  h << " * Returns TYCHE_OK (0), or TYCHE_ERROR_NULL_ARGUMENT (nothing was computed), or\n"
    << " * TYCHE_ERROR_OUT_OF_MEMORY (an aligned copy or an intermediate buffer; the outputs may "
       "be\n"
    << " * partial); tyche_error_string(code) says which. Calls from several threads at once are "
       "safe.\n";
  h << export_header_opening(n, o.parallel);
  h << "/* Each argument's rank, shape (an initializer: int64_t s[] = ..._SHAPE;), element count,\n"
    << " * bytes and dtype. */\n";
  for (size_t i = 0; i < names.size(); ++i) {
    const ir::Buffer& b = func->params[i];
    std::vector<int64_t> shape = shape_of(b);
    TensorSize size = tensor_size(fmt::format("argument '{}'", names[i]), shape, b->dtype);
    int64_t elements = size.elements;
    std::string p = fmt::format("{}_{}", n, names[i]);
    h << export_argument_defines(p, shape, elements, size.bytes, b->dtype);
  }
  h << fmt::format("#define {}_NUM_ARGS {}\n#define {}_NUM_INPUTS {}\n\n", n, names.size(), n,
                   num_inputs);
  h << export_header_closing(n, prototype, o.parallel, "kernel");
  return h.str();
}

ExportResult export_kernel(const ir::PrimFunc& func, const std::string& dir,
                           const ExportOptions& o) {
  check_export_name(o.name);
  if (o.target != "llvm" && o.target != "c")
    throw Error(fmt::format("export: unknown target '{}' (llvm or c)", o.target));
  if (o.target == "c" && !o.cpu.empty())
    throw Error("export: --cpu is for --target llvm (C is compiled by your compiler)");
  if (o.target == "c" && !o.library.empty())
    throw Error("export: --library is for --target llvm (C goes into a library of yours)");
  std::string library = o.library.empty() ? o.name : o.library;
  if (!is_identifier(library))
    throw Error(fmt::format("export: '{}' cannot name a library (letters, digits and _)", library));

  // Everything compiled first: an error here writes nothing.
  ExportResult result;
  std::string header = export_header(func, o);
  lower::Lowered lowered = lower::lower(renamed(func, o.name));
  result.notes = lowered.notes;
  const ir::PrimFunc& f = lowered.func;
  std::string object, source;
  if (o.target == "llvm") {
    object = compile_export_object(f, {.cpu = o.cpu,
                                       .keep_module = false,
                                       .max_stack_bytes = o.max_stack_bytes,
                                       .parallel = o.parallel});
  } else {
    source = fmt::format("#include \"{}.h\"\n", o.name) +
             emit_c(f, {.max_stack_bytes = o.max_stack_bytes, .parallel = o.parallel});
    if (o.parallel)
      source += fmt::format(
          "\nvoid {0}set_num_threads(int n);\nvoid {1}_set_num_threads(int n) {{ "
          "{0}set_num_threads(n); }}\n",
          kExportRuntimePrefix, o.name);
    else
      source += fmt::format("\nvoid {}_set_num_threads(int n) {{ (void)n; }}\n", o.name);
  }

  fs::path out = create_directory(dir);
  DirectoryLock lock(out);
  // In this order: a header never names a kernel its library or source lacks.
  std::vector<std::pair<std::string, std::string>> files;
  if (o.target == "llvm") {
    fs::path archive = out / ("lib" + library + ".a");
    std::vector<std::string> symbols = {o.name, o.name + "_packed", o.name + "_set_num_threads"};
    files.emplace_back(
        archive.filename().string(),
        archive_with(archive, {{o.name + ".o", object}, {kRuntimeMember, export_runtime_object()}},
                     symbols));
  } else {
    if (o.parallel) files.emplace_back(kRuntimeSourceFile, export_runtime_source());
    files.emplace_back(o.name + ".c", source);
  }
  files.emplace_back(o.name + ".h", header);
  result.files = write_files(out, files);
  return result;
}

}  // namespace tyche::codegen
