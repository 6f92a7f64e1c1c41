// AVX512-VNNI and AVX-VNNI: vpdpbusd, four u8 x s8 products summed into each int32 lane.
#include "schedule/intrin/dot.h"

namespace tyche::schedule::intrin {

std::vector<TensorIntrin> x86_vnni_intrins() {
  const DataType u8 = DataType::UInt(8), s8 = DataType::Int(8);
  return {
      // One zmm instruction.
      dot_intrin("x86_avx512_vnni_dot_16x4_u8s8", 16, 4, u8, s8, kInt32, {{"avx512vnni"}}),
      // One ymm instruction: AVX512-VNNI with VL, or AVX-VNNI's VEX form (CPUs without AVX-512).
      dot_intrin("x86_avx_vnni_dot_8x4_u8s8", 8, 4, u8, s8, kInt32,
                 {{"avx512vnni", "avx512vl"}, {"avxvnni"}}),
  };
}

}  // namespace tyche::schedule::intrin
