// The best programs a tuning database holds, against oneDNN on the same shapes, measured
// interleaved in one run: matmul (GMM, batch 1) against dnnl_sgemm, conv2d (C2D, NHWC) against
// oneDNN's convolution with NHWC activations and the weights in the layout oneDNN prefers
// (reordered once, outside the timing, as an inference would). Tyche's layout rewrites of the
// weights likewise run once, before timing.
//   bench_tuned --db DIR GMM-4 C2D-3
//   bench_tuned [--db DIR] --trace a.py --trace b.py GMM-4   (hand schedules too, by file name)
//   bench_tuned --rounds 40 ...   (more windows than the default 10: a steadier median on a noisy
//   host)
#include <dnnl.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "bench/interleaved.h"
#include "codegen/llvm/layout_rewrites.h"
#include "codegen/llvm/llvm_codegen.h"
#include "interp/interpreter.h"
#include "ir/structural.h"
#include "lower/layout_rewrite.h"
#include "lower/lower.h"
#include "runtime/compare.h"
#include "schedule/trace.h"
#include "target/cpu.h"
#include "target/host.h"
#include "tune/database/database.h"
#include "tune/search/records.h"
#include "workloads/workloads.h"

using namespace tyche;

namespace {

void dnnl_check(dnnl_status_t s, const char* what) {
  if (s != dnnl_success) throw Error(std::string("oneDNN: ") + what + " failed");
}

// oneDNN's conv2d for the C2D preset's parameters (N, H, W, CI, CO, K, stride, pad).
class DnnlConv {
 public:
  DnnlConv(const std::vector<int64_t>& p, const float* src, const float* hwio_weights, float* dst) {
    int64_t n = p[0], h = p[1], w = p[2], ci = p[3], co = p[4], k = p[5], stride = p[6], pad = p[7];
    int64_t oh = (h + 2 * pad - k) / stride + 1, ow = (w + 2 * pad - k) / stride + 1;
    dnnl_check(dnnl_engine_create(&engine_, dnnl_cpu, 0), "engine");
    dnnl_check(dnnl_stream_create(&stream_, engine_, dnnl_stream_default_flags), "stream");
    dnnl_dims_t src_dims = {n, ci, h, w}, wei_dims = {co, ci, k, k}, dst_dims = {n, co, oh, ow};
    dnnl_dims_t strides = {stride, stride}, padding = {pad, pad};
    dnnl_memory_desc_t src_md, wei_any, wei_user, dst_md;
    dnnl_check(dnnl_memory_desc_init_by_tag(&src_md, 4, src_dims, dnnl_f32, dnnl_nhwc), "src");
    dnnl_check(dnnl_memory_desc_init_by_tag(&wei_any, 4, wei_dims, dnnl_f32, dnnl_format_tag_any),
               "weights");
    dnnl_check(dnnl_memory_desc_init_by_tag(&wei_user, 4, wei_dims, dnnl_f32, dnnl_hwio),
               "weights");
    dnnl_check(dnnl_memory_desc_init_by_tag(&dst_md, 4, dst_dims, dnnl_f32, dnnl_nhwc), "dst");
    dnnl_convolution_desc_t cd;
    dnnl_check(dnnl_convolution_forward_desc_init(&cd, dnnl_forward_inference,
                                                  dnnl_convolution_direct, &src_md, &wei_any,
                                                  nullptr, &dst_md, strides, padding, padding),
               "convolution");
    dnnl_primitive_desc_t pd;
    dnnl_check(dnnl_primitive_desc_create(&pd, &cd, nullptr, engine_, nullptr),
               "primitive descriptor");
    const dnnl_memory_desc_t* wei_md = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    dnnl_check(dnnl_primitive_create(&conv_, pd), "primitive");
    dnnl_check(dnnl_memory_create(&src_, &src_md, engine_, const_cast<float*>(src)), "src memory");
    dnnl_check(dnnl_memory_create(&dst_, &dst_md, engine_, dst), "dst memory");
    dnnl_memory_t user;
    dnnl_check(dnnl_memory_create(&user, &wei_user, engine_, const_cast<float*>(hwio_weights)),
               "weights memory");
    dnnl_check(dnnl_memory_create(&wei_, wei_md, engine_, DNNL_MEMORY_ALLOCATE), "weights memory");
    dnnl_primitive_desc_t rpd;
    dnnl_check(
        dnnl_reorder_primitive_desc_create(&rpd, &wei_user, engine_, wei_md, engine_, nullptr),
        "reorder");
    dnnl_primitive_t reorder;
    dnnl_check(dnnl_primitive_create(&reorder, rpd), "reorder");
    dnnl_exec_arg_t rargs[2] = {{DNNL_ARG_FROM, user}, {DNNL_ARG_TO, wei_}};
    dnnl_check(dnnl_primitive_execute(reorder, stream_, 2, rargs), "reorder");
    dnnl_check(dnnl_stream_wait(stream_), "wait");
    dnnl_primitive_destroy(reorder);
    dnnl_primitive_desc_destroy(rpd);
    dnnl_memory_destroy(user);
    dnnl_primitive_desc_destroy(pd);
  }
  ~DnnlConv() {
    dnnl_primitive_destroy(conv_);
    dnnl_memory_destroy(src_);
    dnnl_memory_destroy(wei_);
    dnnl_memory_destroy(dst_);
    dnnl_stream_destroy(stream_);
    dnnl_engine_destroy(engine_);
  }
  void run() {
    dnnl_exec_arg_t args[3] = {
        {DNNL_ARG_SRC, src_}, {DNNL_ARG_WEIGHTS, wei_}, {DNNL_ARG_DST, dst_}};
    dnnl_check(dnnl_primitive_execute(conv_, stream_, 3, args), "convolution");
    dnnl_check(dnnl_stream_wait(stream_), "wait");
  }

 private:
  dnnl_engine_t engine_ = nullptr;
  dnnl_stream_t stream_ = nullptr;
  dnnl_primitive_t conv_ = nullptr;
  dnnl_memory_t src_ = nullptr, wei_ = nullptr, dst_ = nullptr;
};

}  // namespace

int main(int argc, char** argv) {
  std::string db_dir;
  std::vector<std::string> names, trace_files;
  int rounds = 10;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--db") == 0 && i + 1 < argc)
      db_dir = argv[++i];
    else if (std::strcmp(argv[i], "--trace") == 0 && i + 1 < argc)
      trace_files.push_back(argv[++i]);
    else if (std::strcmp(argv[i], "--rounds") == 0 && i + 1 < argc)
      rounds = std::max(1, std::atoi(argv[++i]));
    else
      names.push_back(argv[i]);
  }
  if ((db_dir.empty() && trace_files.empty()) || names.empty()) {
    std::fprintf(stderr,
                 "usage: bench_tuned [--db DIR] [--trace FILE]... [--rounds N] WORKLOAD...\n");
    return 2;
  }
  try {
    target::Target target = target::Target::host();
    std::printf("cpu: %s (%s), %d threads; %d interleaved rounds of >= 300 ms windows\n",
                target::cpu_model_name().c_str(), target::resolve_cpu("").llvm_cpu.c_str(),
                target.num_cores, rounds);
    bool all_correct = true;
    for (const std::string& name : names) {
      workloads::Workload w = workloads::get_preset(name);
      // The three best records: the best of a thousand noisy measurements is partly the luckiest,
      // so its runners-up are measured too and the fastest here is the one compared.
      std::vector<ir::PrimFunc> programs;
      std::vector<std::string> labels;
      if (!db_dir.empty()) {
        programs = tune::best_programs(tune::Database(db_dir), w.name, w.func, target, 3);
        for (size_t i = 0; i < programs.size(); ++i)
          labels.push_back(i == 0 ? std::string("tyche (best record)")
                                  : "tyche (record " + std::to_string(i + 1) + ")");
      }
      for (const std::string& file : trace_files) {
        programs.push_back(schedule::apply_trace_file(w.func, file));
        labels.push_back("tyche " + std::filesystem::path(file).filename().string());
      }
      auto inputs = workloads::make_inputs(w.func);
      auto expected = w.reference(inputs);
      std::vector<std::unique_ptr<codegen::CompiledKernel>> kernels;
      std::vector<std::vector<runtime::NDArray>> outputs;
      std::vector<std::vector<void*>> ptrs;
      bool correct = true;
      std::vector<std::vector<runtime::NDArray>> packed;  // weights laid out anew, per program
      for (const ir::PrimFunc& program : programs) {
        // A model's weights are laid out anew once, before timing (as the tuner and the executor do
        // at load): the timed kernel is the program's main part.
        lower::SplitProgram split = lower::split_layout_rewrites(program);
        kernels.push_back(codegen::compile(lower::lower(split.main).func));
        std::vector<runtime::NDArray> args = inputs;
        for (const auto& e : expected) args.push_back(runtime::NDArray(e.shape(), e.dtype()));
        std::vector<void*> p;
        for (auto& a : args) p.push_back(a.data());
        packed.emplace_back();
        codegen::apply_rewrites(codegen::compile_rewrites(split.rewrites, {}), w.func, p,
                                packed.back());
        kernels.back()->run(p.data());
        bool ok = runtime::compare(args[inputs.size()], expected[0]).ok;
        correct = correct && ok;
        all_correct = all_correct && ok;
        if (!ok) std::printf("  (record %zu computes a wrong result)\n", kernels.size());
        outputs.push_back(std::move(args));
        ptrs.push_back(std::move(p));
      }
      std::vector<bench::Measured> ms;
      for (size_t i = 0; i < kernels.size(); ++i)
        ms.push_back({labels[i], [&, i] { kernels[i]->run(ptrs[i].data()); }, 1, {}});
      if (std::getenv("TYCHE_BENCH_OBJECT")) {  // the best record as the tuner's worker runs it: an
                                                // object file
        std::string obj = "/tmp/bench_tuned_best.o";
        ir::PrimFunc main = lower::lower(lower::split_layout_rewrites(programs[0]).main).func;
        codegen::compile_to_object(main, obj);
        kernels.push_back(codegen::load_object(obj, main->name));
        ptrs.push_back(ptrs[0]);
        size_t i = kernels.size() - 1;
        ms.push_back(
            {"tyche (best record, object)", [&, i] { kernels[i]->run(ptrs[i].data()); }, 1, {}});
      }
      runtime::NDArray out(expected[0].shape(), kFloat32);
      std::unique_ptr<DnnlConv> conv;
      if (w.op == "GMM" && w.params[0] == 1) {
        int n = static_cast<int>(w.params[1]), m = static_cast<int>(w.params[2]),
            k = static_cast<int>(w.params[3]);
        const float* a = inputs[0].data_as<float>();
        const float* b = inputs[1].data_as<float>();
        float* c = out.data_as<float>();
        ms.push_back({"oneDNN sgemm",
                      [=] { dnnl_sgemm('N', 'N', n, m, k, 1.0f, a, k, b, m, 0.0f, c, m); },
                      1,
                      {}});
      } else if (w.op == "C2D") {
        conv = std::make_unique<DnnlConv>(w.params, inputs[0].data_as<float>(),
                                          inputs[1].data_as<float>(), out.data_as<float>());
        ms.push_back({"oneDNN convolution (NHWC)", [&] { conv->run(); }, 1, {}});
      }
      size_t n_tyche = kernels.size();
      bool has_baseline = ms.size() > n_tyche;
      bench::measure_interleaved(ms, rounds, 0.3);
      if (has_baseline) {
        bool same = runtime::compare(out, expected[0]).ok;
        all_correct = all_correct && same;
        if (!same) std::printf("  (the oneDNN output differs from the reference)\n");
      }
      std::printf("%s [%s]: %s\n", w.name.c_str(), w.shape.c_str(), correct ? "correct" : "WRONG");
      for (const bench::Measured& m : ms)
        std::printf("  %-28s median %8.3f ms, %7.1f GFLOP/s, cv %4.1f%%\n", m.name.c_str(),
                    m.median() * 1e3, w.flop / m.median() / 1e9, m.cv() * 100);
      if (has_baseline) {
        size_t fastest = 0;
        for (size_t i = 1; i < n_tyche; ++i)
          if (ms[i].median() < ms[fastest].median()) fastest = i;
        std::printf("  ratio tyche / oneDNN (throughput): %.2fx (%s)\n",
                    ms[n_tyche].median() / ms[fastest].median(), ms[fastest].name.c_str());
      }
    }
    return all_correct ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_tuned: %s\n", e.what());
    return 2;
  }
}
