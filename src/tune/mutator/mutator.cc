#include "tune/mutator/mutator.h"

namespace tyche::tune {

std::vector<std::pair<MutatorPtr, double>> default_mutators(const target::Target& target) {
  if (target.is_gpu())
    return {{mutate_tile_size(), 0.9}, {mutate_unroll(), 0.08}, {mutate_thread_binding(), 0.02}};
  return {{mutate_tile_size(), 0.9},
          {mutate_compute_location(), 0.05},
          {mutate_unroll(), 0.03},
          {mutate_parallel(), 0.02}};
}

}  // namespace tyche::tune
