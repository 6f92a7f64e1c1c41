// The CPU that code is generated for. "host" is this machine, described by its CPU name *and*
// the feature list it reports (a VM may hide features its CPU name implies); any other name is an
// x86-64 micro-architecture level (x86-64, x86-64-v2, -v3, -v4) or an LLVM CPU name
// (skylake-avx512, znver3, …), whose features LLVM knows. One host can so generate, and run, the
// code an AVX2-only or SSE4.2-only machine would get: the tests run at every level the host can.
//
// The default CPU is "host", or the value of the environment variable TYCHE_CPU when it is set
// (like Halide's HL_JIT_TARGET), so a whole program or test suite can be moved to another level.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tyche::target {

struct Cpu {
  std::string name;                   // as asked: "host", "x86-64-v3", "znver3"
  std::string llvm_cpu;               // LLVM's name of it ("sapphirerapids" for a host)
  std::vector<std::string> features;  // what it has, LLVM's names, implied ones included, sorted
  std::string feature_string;         // "+avx2,+fma,…" as LLVM takes it ("-x" too for the host)

  bool has(std::string_view feature) const;
  // The widest vector registers code should use: 512 with AVX-512, 256 with AVX, else 128.
  int vector_bits() const;
  // Architectural vector registers: 32 with AVX-512, else 16 (x86-64). How many accumulators a
  // register tile may hold with room left for its operands.
  int vector_registers() const;
  // "x86-64-v3 (256-bit vectors)", "host: sapphirerapids (512-bit vectors)".
  std::string describe() const;
};

// "host", "" (the default CPU), a level or an LLVM x86-64 CPU name. Throws tyche::Error naming
// the accepted forms for anything else.
const Cpu& resolve_cpu(const std::string& name);
// TYCHE_CPU if set and non-empty, else "host".
std::string default_cpu_name();

// The features `cpu` has that this host lacks, sorted; empty when code for it runs here.
std::vector<std::string> missing_on_host(const Cpu& cpu);
// Throws tyche::Error ("cannot run code for CPU 'x86-64-v4' on this host (znver3): it lacks
// avx512bw, …") unless code for `cpu` runs here.
void check_runs_on_host(const Cpu& cpu);

// The micro-architecture levels x86-64, x86-64-v2, -v3 and -v4 this host can run, in order.
std::vector<std::string> host_levels();

}  // namespace tyche::target
