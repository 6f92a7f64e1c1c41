// AVX512-BF16: vdpbf16ps, two bfloat16 products summed into each float32 lane.
#include "schedule/intrin/dot.h"

namespace tyche::schedule::intrin {

std::vector<TensorIntrin> x86_avx512_bf16_intrins() {
  const DataType bf16 = DataType::BFloat16();
  return {
      dot_intrin("x86_avx512_bf16_dot_16x2_bf16", 16, 2, bf16, bf16, kFloat32, {{"avx512bf16"}}),
      dot_intrin("x86_avx512_bf16_dot_8x2_bf16", 8, 2, bf16, bf16, kFloat32,
                 {{"avx512bf16", "avx512vl"}}),
  };
}

}  // namespace tyche::schedule::intrin
