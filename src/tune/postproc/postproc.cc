#include "tune/postproc/postproc.h"

namespace tyche::tune {

std::vector<PostprocPtr> default_postprocs(const TuneContext& context) {
  std::vector<PostprocPtr> out;
  if (!context.target.is_gpu())
    out = {disallow_dynamic_loop(), rewrite_layout(), rewrite_parallel_vectorize_unroll(),
           rewrite_reduction_block()};
  else
    out = {disallow_dynamic_loop(), rewrite_cooperative_fetch(),
           rewrite_parallel_vectorize_unroll(), rewrite_reduction_block(), verify_gpu_code()};
  for (const PostprocPtr& p : out) p->initialize(context);
  return out;
}

}  // namespace tyche::tune
