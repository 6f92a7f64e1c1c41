#include "tune/postproc/postproc.h"

namespace tyche::tune {

std::vector<PostprocPtr> default_postprocs(const Target& target) {
  std::vector<PostprocPtr> out = {disallow_dynamic_loop(), rewrite_parallel_vectorize_unroll(), rewrite_reduction_block()};
  if (target.is_gpu()) out.push_back(verify_gpu_code());
  return out;
}

}  // namespace tyche::tune
