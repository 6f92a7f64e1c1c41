#include "tune/postproc/postproc.h"

namespace tyche::tune {

std::vector<PostprocPtr> default_postprocs(const Target& target) {
  if (!target.is_gpu()) return {disallow_dynamic_loop(), rewrite_parallel_vectorize_unroll(), rewrite_reduction_block()};
  return {disallow_dynamic_loop(), rewrite_cooperative_fetch(), rewrite_parallel_vectorize_unroll(),
          rewrite_reduction_block(), verify_gpu_code()};
}

}  // namespace tyche::tune
