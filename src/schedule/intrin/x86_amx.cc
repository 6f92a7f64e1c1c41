// AMX (Intel Sapphire Rapids and later): tdpbusd and tdpbf16ps, a 16 x 16 tile of accumulators
// updated from 16 rows of 64 bytes of activations and 16 rows of 64 bytes of packed weights.
#include "schedule/intrin/dot.h"

namespace tyche::schedule::intrin {

std::vector<TensorIntrin> x86_amx_intrins() {
  const DataType u8 = DataType::UInt(8), s8 = DataType::Int(8), bf16 = DataType::BFloat16();
  return {
      tile_intrin("x86_amx_tile_16x16x64_u8s8", 16, 16, 64, u8, s8, kInt32,
                  {{"amx-tile", "amx-int8"}}),
      tile_intrin("x86_amx_tile_16x16x32_bf16", 16, 16, 32, bf16, bf16, kFloat32,
                  {{"amx-tile", "amx-bf16"}}),
  };
}

}  // namespace tyche::schedule::intrin
