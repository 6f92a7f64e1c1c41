// The typed presets (u8 x s8 -> s32, bfloat16 -> f32) as Tyche tuned them, against oneDNN's int8
// and bf16 primitives on the same data, and against Tyche's own float32 kernel of the same shape:
//   bench_intrinsics --db DIR [--rounds N] [--json FILE] GMM-4-U8S8 C2D-3-U8S8 GMM-4-BF16 ...
// DIR holds the tuning records of each workload and of its float32 preset (GMM-4 for GMM-4-U8S8).
//
// Fair by construction: the same thread count for every system (all cores; OMP_NUM_THREADS and
// Tyche's pool), OpenMP threads passive (they sleep, not spin, while Tyche runs), the order of the
// systems rotated every round, windows of >= 0.3 s interleaved, FLOPs as the presets count them
// (no padding taps), a 95% bootstrap interval on every ratio (over rounds), and each Tyche
// kernel's best time in tuning beside its time here.
//
// oneDNN: GMM's B is an activation (read as it is, as a matmul of two activations is); DENSE_RELU's
// B and C2D's weights are constants, reordered once into oneDNN's layout outside the timing (an
// inference), as Tyche packs them once when loaded.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "bench/interleaved.h"
#include "codegen/llvm/layout_rewrites.h"
#include "codegen/llvm/llvm_codegen.h"
#include "ir/structural.h"
#include "lower/layout_rewrite.h"
#include "lower/lower.h"
#include "runtime/compare.h"
#include "target/cpu.h"
#include "target/host.h"
#include "tune/database/database.h"
#include "tune/search/records.h"
#include "workloads/workloads.h"

using namespace tyche;

namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

dt dnnl_type(DataType t) {
  if (t == DataType::UInt(8)) return dt::u8;
  if (t == DataType::Int(8)) return dt::s8;
  if (t == kInt32) return dt::s32;
  if (t.is_bfloat16()) return dt::bf16;
  return dt::f32;
}

// oneDNN's primitive for a typed preset on Tyche's buffers (inputs, then the output).
class Onednn {
 public:
  Onednn(const workloads::Workload& w, std::vector<runtime::NDArray>& args)
      : engine_(dnnl::engine::kind::cpu, 0), stream_(engine_) {
    const auto& p = w.params;
    dt a_t = dnnl_type(args[0].dtype()), b_t = dnnl_type(args[1].dtype()),
       c_t = dnnl_type(args[2].dtype());
    if (w.op == "GMM" || w.op == "DENSE_RELU") {
      bool dense = w.op == "DENSE_RELU";
      int64_t n = dense ? p[0] : p[1], m = dense ? p[1] : p[2], k = dense ? p[2] : p[3];
      dnnl::memory::desc a({n, k}, a_t, tag::ab), b({k, m}, b_t, tag::ab), c({n, m}, c_t, tag::ab);
      dnnl::primitive_attr attr;
      if (dense) {
        dnnl::post_ops ops;
        ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
        attr.set_post_ops(ops);
      }
      dnnl::matmul::desc desc(a, dense ? dnnl::memory::desc({k, m}, b_t, tag::any) : b, c);
      dnnl::matmul::primitive_desc pd(desc, attr, engine_);
      primitive_ = dnnl::matmul(pd);
      args_ = {{DNNL_ARG_SRC, dnnl::memory(a, engine_, args[0].data())},
               {DNNL_ARG_WEIGHTS, dense ? reordered(b, args[1].data(), pd.weights_desc())
                                        : dnnl::memory(b, engine_, args[1].data())},
               {DNNL_ARG_DST, dnnl::memory(c, engine_, args[2].data())}};
    } else if (w.op == "C2D") {
      int64_t n = p[0], h = p[1], wd = p[2], ci = p[3], co = p[4], k = p[5], s = p[6], pad = p[7];
      int64_t oh = (h + 2 * pad - k) / s + 1, ow = (wd + 2 * pad - k) / s + 1;
      dnnl::memory::desc src({n, ci, h, wd}, a_t, tag::nhwc), dst({n, co, oh, ow}, c_t, tag::nhwc);
      dnnl::memory::desc wei_user({co, ci, k, k}, b_t, tag::hwio),
          wei_any({co, ci, k, k}, b_t, tag::any);
      dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference,
                                           dnnl::algorithm::convolution_direct, src, wei_any, dst,
                                           {s, s}, {pad, pad}, {pad, pad});
      dnnl::convolution_forward::primitive_desc pd(desc, engine_);
      primitive_ = dnnl::convolution_forward(pd);
      args_ = {{DNNL_ARG_SRC, dnnl::memory(src, engine_, args[0].data())},
               {DNNL_ARG_WEIGHTS, reordered(wei_user, args[1].data(), pd.weights_desc())},
               {DNNL_ARG_DST, dnnl::memory(dst, engine_, args[2].data())}};
    } else {
      throw Error(fmt::format("bench_intrinsics: no oneDNN primitive for {}", w.name));
    }
  }
  void run() {
    primitive_.execute(stream_, args_);
    stream_.wait();
  }
  std::string describe() const {
    const char* info = nullptr;
    dnnl_primitive_desc_query(primitive_.get_primitive_desc(), dnnl_query_impl_info_str, 0, &info);
    return info ? info : "unknown";
  }

 private:
  dnnl::memory reordered(const dnnl::memory::desc& user, void* data,
                         const dnnl::memory::desc& want) {
    dnnl::memory from(user, engine_, data), to(want, engine_);
    dnnl::reorder(from, to).execute(stream_, from, to);
    stream_.wait();
    return to;
  }
  dnnl::engine engine_;
  dnnl::stream stream_;
  dnnl::primitive primitive_;
  std::unordered_map<int, dnnl::memory> args_;
};

// Median of per-round ratios a / b and its 95% bootstrap interval over rounds.
struct Ratio {
  double median = 0, lo = 0, hi = 0;
};
Ratio ratio(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> r;
  for (size_t i = 0; i < a.size(); ++i) r.push_back(a[i] / b[i]);
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<size_t> pick(0, r.size() - 1);
  std::vector<double> boots;
  for (int s = 0; s < 2000; ++s) {
    std::vector<double> sample;
    for (size_t i = 0; i < r.size(); ++i) sample.push_back(r[pick(rng)]);
    boots.push_back(median(sample));
  }
  std::sort(boots.begin(), boots.end());
  return {median(r), boots[boots.size() * 25 / 1000], boots[boots.size() * 975 / 1000]};
}

// The float32 preset of a typed one ("GMM-4-U8S8" -> "GMM-4").
std::string float32_name(const std::string& name) {
  return name.substr(0, name.rfind('-'));
}

}  // namespace

int main(int argc, char** argv) {
  // Before oneDNN starts its OpenMP threads: every core, and threads that sleep while they wait.
  target::Target target = target::Target::host();
  setenv("OMP_NUM_THREADS", std::to_string(target.num_cores).c_str(), 1);
  setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
  std::string db_dir, json_file;
  std::vector<std::string> names;
  int rounds = 21;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--db") == 0 && i + 1 < argc)
      db_dir = argv[++i];
    else if (std::strcmp(argv[i], "--json") == 0 && i + 1 < argc)
      json_file = argv[++i];
    else if (std::strcmp(argv[i], "--rounds") == 0 && i + 1 < argc)
      rounds = std::max(3, std::atoi(argv[++i]));
    else
      names.push_back(argv[i]);
  }
  if (db_dir.empty() || names.empty()) {
    std::fprintf(stderr,
                 "usage: bench_intrinsics --db DIR [--rounds N] [--json FILE] WORKLOAD...\n");
    return 2;
  }
  try {
    tune::Database db(db_dir);
    std::string cpu =
        fmt::format("{} ({})", target::cpu_model_name(), target::resolve_cpu("").llvm_cpu);
    std::printf(
        "cpu: %s, %d threads for every system; %d rounds of >= 0.3 s windows, order rotated\n",
        cpu.c_str(), target.num_cores, rounds);
    std::string json =
        fmt::format("{{\"cpu\": \"{}\", \"threads\": {}, \"rounds\": {}, \"workloads\": [", cpu,
                    target.num_cores, rounds);
    bool all_correct = true;
    for (size_t wi = 0; wi < names.size(); ++wi) {
      workloads::Workload w = workloads::get_preset(names[wi]);
      workloads::Workload f32 = workloads::get_preset(float32_name(w.name));
      struct System {
        std::string name;
        std::unique_ptr<codegen::CompiledKernel> kernel;
        std::vector<runtime::NDArray> args;
        double tuning_best = 0;  // the record's best seconds while tuning
        std::vector<runtime::NDArray>
            packed;  // weights laid out anew, read by the kernel in place of theirs
        std::vector<void*> ptrs;
      };
      std::vector<System> tyche;
      for (const workloads::Workload* x : {&w, &f32}) {
        auto programs = tune::best_programs(db, x->name, x->func, target, 1);
        if (programs.empty()) throw Error(fmt::format("the database has no record of {}", x->name));
        // A model's weights are laid out anew once, before timing (as the tuner and the executor
        // do at load): the timed kernel is the program's main part.
        lower::SplitProgram split = lower::split_layout_rewrites(programs[0]);
        System s{x == &w ? "tyche" : "tyche float32",
                 codegen::compile(lower::lower(split.main).func),
                 workloads::make_inputs(x->func),
                 0,
                 {},
                 {}};
        auto expected = x->reference(s.args);
        s.args.emplace_back(expected[0].shape(), expected[0].dtype());
        std::vector<void*> ptrs;
        for (auto& a : s.args) ptrs.push_back(a.data());
        codegen::apply_rewrites(codegen::compile_rewrites(split.rewrites, {}), x->func, ptrs,
                                s.packed);
        s.ptrs = ptrs;
        s.kernel->run(s.ptrs.data());
        runtime::Comparison c = runtime::compare(s.args.back(), expected[0]);
        if (!c.ok)
          std::printf("  %s: %s computes a wrong result: %s\n", x->name.c_str(), s.name.c_str(),
                      c.message.c_str());
        all_correct = all_correct && c.ok;
        double best = 1e30;
        uint64_t hash = ir::structural_hash(x->func);
        for (const tune::TuningRecord* r :
             db.records_of(hash, tune::preferred_target_key(db, hash, target)))
          if (r->ok()) best = std::min(best, r->typical_seconds());
        s.tuning_best = best;
        tyche.push_back(std::move(s));
      }
      std::vector<runtime::NDArray> dnnl_args = workloads::make_inputs(w.func);
      auto expected = w.reference(dnnl_args);
      dnnl_args.emplace_back(expected[0].shape(), expected[0].dtype());
      Onednn onednn(w, dnnl_args);
      onednn.run();
      runtime::Comparison dc = runtime::compare(dnnl_args.back(), expected[0]);
      if (!dc.ok)
        std::printf("  oneDNN's %s output differs from the reference: %s\n", w.name.c_str(),
                    dc.message.c_str());

      std::vector<bench::Measured> ms;
      for (System& s : tyche) ms.push_back({s.name, [&s] { s.kernel->run(s.ptrs.data()); }, 1, {}});
      ms.push_back({"oneDNN (" + onednn.describe() + ")", [&] { onednn.run(); }, 1, {}});
      // Calibrate, then rounds with the order rotated.
      for (auto& m : ms) {
        m.run();
        double t0 = bench::now();
        m.run();
        m.calls = std::max(1, static_cast<int>(0.3 / std::max(bench::now() - t0, 1e-6)));
      }
      for (int r = 0; r < rounds; ++r)
        for (size_t i = 0; i < ms.size(); ++i) {
          bench::Measured& m = ms[(i + r) % ms.size()];
          double t0 = bench::now();
          for (int c = 0; c < m.calls; ++c) m.run();
          m.seconds.push_back((bench::now() - t0) / m.calls);
        }
      std::printf("%s [%s]: %s\n", w.name.c_str(), w.shape.c_str(),
                  tyche[0].args.empty() ? "" : "checked against the reference");
      double flop = w.flop;
      for (size_t i = 0; i < ms.size(); ++i) {
        std::string tuned =
            i < tyche.size() ? fmt::format(", best in tuning {:.3f} ms", tyche[i].tuning_best * 1e3)
                             : "";
        std::printf("  %-40s median %8.3f ms, %7.1f GOP/s, cv %4.1f%%%s\n", ms[i].name.c_str(),
                    ms[i].median() * 1e3, flop / ms[i].median() / 1e9, ms[i].cv() * 100,
                    tuned.c_str());
      }
      Ratio vs_dnnl = ratio(ms[2].seconds, ms[0].seconds),
            vs_f32 = ratio(ms[1].seconds, ms[0].seconds);
      std::printf("  tyche / oneDNN (throughput): %.2fx [%.2f, %.2f]\n", vs_dnnl.median, vs_dnnl.lo,
                  vs_dnnl.hi);
      std::printf("  tyche / tyche float32 (throughput): %.2fx [%.2f, %.2f]\n", vs_f32.median,
                  vs_f32.lo, vs_f32.hi);
      json += fmt::format(
          "{}{{\"workload\": \"{}\", \"tyche_s\": {}, \"tyche_float32_s\": {}, \"onednn_s\": {}, "
          "\"onednn_impl\": \"{}\", "
          "\"tyche_best_in_tuning_s\": {}, \"tyche_float32_best_in_tuning_s\": {}, \"vs_onednn\": "
          "[{}, {}, {}], \"vs_float32\": [{}, {}, {}]}}",
          wi ? ", " : "", w.name, ms[0].median(), ms[1].median(), ms[2].median(), onednn.describe(),
          tyche[0].tuning_best, tyche[1].tuning_best, vs_dnnl.median, vs_dnnl.lo, vs_dnnl.hi,
          vs_f32.median, vs_f32.lo, vs_f32.hi);
    }
    json += "]}\n";
    if (!json_file.empty()) std::ofstream(json_file) << json;
    return all_correct ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_intrinsics: %s\n", e.what());
    return 2;
  }
}
