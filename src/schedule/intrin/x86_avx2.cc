// CPUs with AVX2 but no VNNI: the same u8 x s8 -> s32 dot product, which the backend emits as
// widening 16-bit multiplies and pairwise adds (vpmaddwd), exact where vpmaddubsw would saturate.
#include "schedule/intrin/dot.h"

namespace tyche::schedule::intrin {

std::vector<TensorIntrin> x86_avx2_intrins() {
  return {dot_intrin("x86_avx2_dot_8x4_u8s8", 8, 4, DataType::UInt(8), DataType::Int(8), kInt32,
                     {{"avx2"}})};
}

}  // namespace tyche::schedule::intrin
