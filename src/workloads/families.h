// The operator families of docs/workloads.md, one table entry each: every fact about a family (its
// parameters, presets, groups, dilation, capsule size, how it scales down, its TE definition) is
// written once here, and the reference implementations, the presets and the scale-down rules
// read it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "te/tensor.h"

namespace tyche::workloads {

// The element types of a preset's typed variant (GMM-4-U8S8): its first input (the activations),
// its second (the weights, or GMM's right operand) and its output, which every product is widened
// to before it is accumulated; any further input stays float32. Suffix "" is float32 throughout.
struct Precision {
  std::string suffix;  // "", "U8S8" (uint8 x int8 -> int32), "BF16" (bfloat16 x bfloat16 ->
                       // float32), "F16" (float16 x float16 -> float32: tensor cores)
  DataType data = kFloat32, weight = kFloat32, out = kFloat32;
  bool is_float32() const { return suffix.empty(); }
};
// Every precision, float32 first.
const std::vector<Precision>& precisions();
// The precision of that suffix (case-insensitive; "" is float32); throws InputError naming the
// suffixes for an unknown one.
const Precision& find_precision(std::string_view suffix);

enum class FamilyId : uint8_t {
  kGmm,
  kC1d,
  kC2d,
  kC3d,
  kGrp,
  kDil,
  kDep,
  kT2d,
  kCap,
  kNrm,
  kSfm,
  kCbr,
  kTbg,
  kDenseRelu
};

struct Family {
  FamilyId id;
  std::string name;                           // "GRP"
  std::vector<std::string> params;            // the parameter tuple's names
  std::vector<std::vector<int64_t>> presets;  // <name>-1 .. <name>-4
  bool last_is_pad = false;                   // the last parameter is a padding (may be 0)
  int64_t groups = 1;                         // grouped convolution (GRP)
  int64_t dilation = 1;                       // dilated convolution (DIL)
  int64_t capsule = 1;                        // capsule convolution's pose matrix side (CAP)
  bool typed = false;  // has typed variants (Precision): GMM, C2D, DENSE_RELU
  // The tuple shrunk so the interpreter checks the workload well under a second, keeping kernel
  // sizes, strides, padding and group structure.
  std::function<std::vector<int64_t>(const Family&, std::vector<int64_t>)> scale_down;
  // The inputs then the outputs, as TE tensors (presets.cc); only a typed family gets a precision
  // other than float32.
  std::function<std::vector<te::Tensor>(const Family&, const std::vector<int64_t>&,
                                        const Precision&)>
      build;
};

// Every family, in docs/workloads.md order.
const std::vector<Family>& families();
// The family named `name` (case-insensitive), or nullptr.
const Family* find_family(const std::string& name);

}  // namespace tyche::workloads
