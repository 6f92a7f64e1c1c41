#include "tune/measure/gpu_build.h"

#include <fmt/format.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "codegen/gpu/cuda_function.h"
#include "codegen/gpu/gpu_codegen.h"
#include "support/error.h"

namespace tyche::tune {

namespace {

using json = nlohmann::json;
constexpr const char* kSuffix = ".gpu.json";

std::string hex(const std::vector<char>& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) {
    auto b = static_cast<unsigned char>(c);
    out += digits[b >> 4];
    out += digits[b & 15];
  }
  return out;
}

std::vector<char> unhex(const std::string& s) {
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    throw Error("GPU program file: the cubin is not hexadecimal");
  };
  if (s.size() % 2) throw Error("GPU program file: the cubin is not hexadecimal");
  std::vector<char> out(s.size() / 2);
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = static_cast<char>(nibble(s[2 * i]) << 4 | nibble(s[2 * i + 1]));
  return out;
}

json plan_json(const codegen::GpuLaunchPlan& p) {
  json kernels = json::array();
  for (const codegen::GpuKernelLaunch& k : p.kernels)
    kernels.push_back({{"name", k.name},
                       {"grid", k.grid},
                       {"block", k.block},
                       {"shared_bytes", k.shared_bytes},
                       {"args", k.args}});
  return {{"param_bytes", p.param_bytes},
          {"num_outputs", p.num_outputs},
          {"intermediate_bytes", p.intermediate_bytes},
          {"kernels", kernels}};
}

codegen::GpuLaunchPlan plan_of(const json& j) {
  codegen::GpuLaunchPlan p;
  p.param_bytes = j.at("param_bytes").get<std::vector<size_t>>();
  p.num_outputs = j.at("num_outputs").get<int>();
  p.intermediate_bytes = j.at("intermediate_bytes").get<std::vector<size_t>>();
  if (p.num_outputs < 0 || static_cast<size_t>(p.num_outputs) > p.param_bytes.size())
    throw Error("GPU program file: more outputs than parameters");
  for (const json& k : j.at("kernels")) {
    codegen::GpuKernelLaunch launch{
        k.at("name").get<std::string>(), k.at("grid").get<std::array<int64_t, 3>>(),
        k.at("block").get<std::array<int64_t, 3>>(), k.at("shared_bytes").get<int64_t>(),
        k.at("args").get<std::vector<int64_t>>()};
    for (int64_t a : launch.args)
      if (a >= static_cast<int64_t>(p.param_bytes.size()) ||
          -1 - a >= static_cast<int64_t>(p.intermediate_bytes.size()))
        throw Error(fmt::format("GPU program file: kernel {} takes a buffer that does not exist",
                                launch.name));
    p.kernels.push_back(std::move(launch));
  }
  return p;
}

}  // namespace

bool is_gpu_built(const std::string& path) {
  return path.ends_with(kSuffix);
}

BuildResult build_gpu(const BuildInput& input, const std::string& path,
                      const target::Target& target) {
  BuildResult r;
  r.name = input.func->name;
  auto start = std::chrono::steady_clock::now();
  try {
    const bool cuda = target.kind == "cuda";
    lower::GpuProgram program =
        lower::lower_gpu(input.func, {}, codegen::gpu_lower_options(target));
    json file = {{"dialect", target.kind}, {"plan", plan_json(codegen::launch_plan(program))}};
    if (cuda) {
      codegen::CudaBinary binary = codegen::compile_cuda(program, codegen::cuda_arch(target));
      if (std::string why = codegen::check_cuda_limits(binary, program, target); !why.empty())
        throw Error(why);
      file["arch"] = binary.arch;
      file["cubin"] = hex(binary.compiled.cubin);
    } else {
      file["source"] = codegen::emit_gpu(program, codegen::GpuDialect::kOpenCL);
    }
    r.object_path = path + kSuffix;
    std::ofstream out(r.object_path);
    out << file.dump();
    if (!out) throw Error(fmt::format("cannot write '{}'", r.object_path));
  } catch (const std::exception& e) {
    r.error = e.what();
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

GpuBuilt read_gpu_built(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(fmt::format("cannot read GPU program file '{}'", path));
  std::stringstream text;
  text << in.rdbuf();
  try {
    json j = json::parse(text.str());
    GpuBuilt b;
    b.dialect = j.at("dialect").get<std::string>();
    if (b.dialect != "cuda" && b.dialect != "opencl")
      throw Error(fmt::format("GPU program file: unknown dialect '{}'", b.dialect));
    b.plan = plan_of(j.at("plan"));
    if (b.dialect == "cuda")
      b.cubin = unhex(j.at("cubin").get<std::string>());
    else
      b.source = j.at("source").get<std::string>();
    return b;
  } catch (const json::exception& e) {
    throw Error(fmt::format("GPU program file '{}' is corrupt: {}", path, e.what()));
  }
}

}  // namespace tyche::tune
