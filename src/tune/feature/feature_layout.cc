// The names of the features, in vector order: the one place the layout is written.
#include <fmt/format.h>

#include <unordered_map>

#include "support/error.h"
#include "support/hash.h"
#include "tune/feature/per_store_feature.h"

namespace tyche::tune {

namespace {

std::vector<std::string> make_names() {
  std::vector<std::string> n;
  for (const char* a : {"float_addsub", "float_mul", "float_mad", "float_divmod", "float_cmp",
                        "float_math", "float_minmax", "int_addsub", "int_mul", "int_divmod",
                        "int_cmp", "int_minmax", "bool_op", "select", "cast"})
    n.push_back(fmt::format("arith.{}", a));
  for (const char* kind : {"vectorize", "unroll", "parallel"})
    for (const char* f : {"num", "prod", "len", "pos_none", "pos_inner", "pos_middle", "pos_outer"})
      n.push_back(fmt::format("loop.{}_{}", kind, f));
  for (const char* g : {"is_gpu", "blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x",
                        "threadIdx.y", "threadIdx.z", "vthread"})
    n.push_back(fmt::format("loop.{}", g));
  for (int b = 0; b < kFeatureBuffers; ++b)
    for (const char* f : {"access_read",
                          "access_write",
                          "access_read_write",
                          "bytes",
                          "unique_bytes",
                          "lines",
                          "unique_lines",
                          "reuse_loop",
                          "reuse_serial",
                          "reuse_none",
                          "reuse_distance_iters",
                          "reuse_distance_bytes",
                          "reuse_count",
                          "bytes_per_reuse",
                          "unique_bytes_per_reuse",
                          "lines_per_reuse",
                          "unique_lines_per_reuse",
                          "stride",
                          "footprint_1",
                          "footprint_2",
                          "footprint_3",
                          "footprint_4"})
      n.push_back(fmt::format("buf{}.{}", b, f));
  for (int i = 0; i < kIntensityPoints; ++i) n.push_back(fmt::format("intensity.{}", i));
  for (const char* a : {"bytes", "total_elements", "outer_prod", "inner_prod"})
    n.push_back(fmt::format("alloc.{}", a));
  for (const char* o : {"prod", "num_loops", "auto_unroll_max_step"})
    n.push_back(fmt::format("outer.{}", o));
  return n;
}

const std::unordered_map<std::string, int>& index_of() {
  static const std::unordered_map<std::string, int> m = [] {
    std::unordered_map<std::string, int> out;
    const auto& names = feature_names();
    for (size_t i = 0; i < names.size(); ++i) out.emplace(names[i], static_cast<int>(i));
    return out;
  }();
  return m;
}

}  // namespace

const std::vector<std::string>& feature_names() {
  static const std::vector<std::string> names = make_names();
  return names;
}

int feature_count() {
  return static_cast<int>(feature_names().size());
}

int feature_index(const std::string& name) {
  auto it = index_of().find(name);
  if (it == index_of().end()) throw Error(fmt::format("unknown feature '{}'", name));
  return it->second;
}

uint64_t feature_layout_hash() {
  static const uint64_t h = [] {
    uint64_t v = hash_combine(0, static_cast<uint64_t>(kFeatureLayoutVersion));
    for (const std::string& n : feature_names()) v = hash_combine(v, hash_string(n));
    return v;
  }();
  return h;
}

}  // namespace tyche::tune
