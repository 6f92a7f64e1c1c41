// One golden file per workload (GMM, C2D, SFM) recording, for every primitive, the IR it
// produces from the unscheduled program, or the one-line reason it refuses. Every accepted
// result must also compute the reference.
#include <functional>

#include "../schedule_test_util.h"

namespace tyche::schedule {
namespace {

struct Roles {
  std::string reduction;  // a reduction block
  std::string spatial;    // a complete (spatial) intermediate block, or empty
  std::string consumer;   // a block consuming `spatial` or the reduction's input, or empty
};

// The outcome of one primitive: an error's reason, or nothing.
using Step = std::function<std::optional<std::string>(Schedule&, const Roles&)>;

template <typename T>
std::optional<std::string> reason(const Result<T>& r) {
  if (r.ok()) return std::nullopt;
  return std::string(error_code_name(r.error().code())) + ": " + r.error().reason();
}

BlockRV block(Schedule& s, const std::string& name) {
  return s.get_block(name).value();
}
std::vector<LoopRV> loops(Schedule& s, const std::string& name) {
  return s.get_loops(block(s, name)).value();
}

const std::vector<std::pair<std::string, Step>>& steps() {
  static const std::vector<std::pair<std::string, Step>> kSteps = {
      {"split",
       [](Schedule& s, const Roles& r) {
         return reason(s.split(loops(s, r.reduction).back(), {std::nullopt, 4}));
       }},
      {"fuse",
       [](Schedule& s, const Roles& r) {
         auto l = loops(s, r.reduction);
         return reason(s.fuse({l[0], l[1]}));
       }},
      {"reorder",
       [](Schedule& s, const Roles& r) {
         auto l = loops(s, r.reduction);
         return reason(s.reorder({l.back(), l[l.size() - 2]}));
       }},
      {"add_unit_loop",
       [](Schedule& s, const Roles& r) { return reason(s.add_unit_loop(block(s, r.reduction))); }},
      {"parallel",
       [](Schedule& s, const Roles& r) { return reason(s.parallel(loops(s, r.reduction)[0])); }},
      {"vectorize",
       [](Schedule& s, const Roles& r) {
         auto l = loops(s, r.spatial.empty() ? r.reduction : r.spatial);
         return reason(s.vectorize(l.back()));
       }},
      {"unroll",
       [](Schedule& s, const Roles& r) { return reason(s.unroll(loops(s, r.reduction).back())); }},
      {"bind",
       [](Schedule& s, const Roles& r) {
         return reason(s.bind(loops(s, r.reduction)[0], "blockIdx.x"));
       }},
      {"annotate",
       [](Schedule& s, const Roles& r) {
         if (auto e = reason(
                 s.annotate(loops(s, r.reduction)[0], "pragma_auto_unroll_max_step", int64_t{16})))
           return e;
         return reason(s.annotate(block(s, r.reduction), "schedule_rule", std::string("none")));
       }},
      {"compute_at",
       [](Schedule& s, const Roles& r) {
         if (r.consumer.empty())
           return reason(s.compute_at(block(s, r.reduction), loops(s, r.reduction)[0]));
         std::string producer = r.spatial.empty() ? r.reduction : r.spatial;
         return reason(s.compute_at(block(s, producer), loops(s, r.consumer)[0]));
       }},
      {"reverse_compute_at",
       [](Schedule& s, const Roles& r) {
         if (r.consumer.empty())
           return reason(s.reverse_compute_at(block(s, r.reduction), loops(s, r.reduction)[0]));
         std::string producer = r.spatial.empty() ? r.reduction : r.spatial;
         return reason(s.reverse_compute_at(block(s, r.consumer), loops(s, producer)[0]));
       }},
      {"compute_inline",
       [](Schedule& s, const Roles& r) {
         return reason(s.compute_inline(block(s, r.spatial.empty() ? r.reduction : r.spatial)));
       }},
      {"reverse_compute_inline",
       [](Schedule& s, const Roles& r) {
         return reason(
             s.reverse_compute_inline(block(s, r.consumer.empty() ? r.reduction : r.consumer)));
       }},
      {"cache_read",
       [](Schedule& s, const Roles& r) {
         return reason(s.cache_read(block(s, r.reduction), 0, "shared"));
       }},
      {"cache_write",
       [](Schedule& s, const Roles& r) {
         return reason(s.cache_write(block(s, r.reduction), 0, "local"));
       }},
      {"set_scope",
       [](Schedule& s, const Roles& r) {
         return reason(
             s.set_scope(block(s, r.spatial.empty() ? r.reduction : r.spatial), 0, "shared"));
       }},
      {"storage_align",
       [](Schedule& s, const Roles& r) {
         return reason(
             s.storage_align(block(s, r.spatial.empty() ? r.reduction : r.spatial), 0, 0, 8, 1));
       }},
      {"transform_layout",
       [](Schedule& s, const Roles& r) {
         // The written buffer's dimensions reversed: a permutation fits any rank.
         BlockRV b = block(s, r.spatial.empty() ? r.reduction : r.spatial);
         size_t rank = s.block_sref(b).value()->as_block()->writes[0].buffer->shape.size();
         std::string in, out;
         for (size_t d = 0; d < rank; ++d) {
           in += (d ? ", a" : "a") + std::to_string(d);
           out += (d ? ", a" : "a") + std::to_string(rank - 1 - d);
         }
         return reason(s.transform_layout(b, 0, "lambda " + in + ": (" + out + ",)"));
       }},
      {"pad_einsum",
       [](Schedule& s, const Roles& r) {
         // Every iterator to a multiple of 3 (one loop per iterator before any scheduling).
         return reason(s.pad_einsum(block(s, r.reduction),
                                    std::vector<int64_t>(loops(s, r.reduction).size(), 3)));
       }},
      {"decompose_reduction",
       [](Schedule& s, const Roles& r) {
         return reason(s.decompose_reduction(block(s, r.reduction), loops(s, r.reduction)[0]));
       }},
      {"rfactor",
       [](Schedule& s, const Roles& r) {
         return reason(s.rfactor(loops(s, r.reduction).back(), 0));
       }},
      {"blockize", [](Schedule& s,
                      const Roles& r) { return reason(s.blockize(loops(s, r.reduction).back())); }},
      {"tensorize",
       [](Schedule& s, const Roles& r) {
         return reason(s.tensorize(loops(s, r.reduction).back(), "dot_4x4x4_f32"));
       }},
  };
  return kSteps;
}

void run_all(const std::string& preset, const Roles& roles, const std::string& golden) {
  auto w = testing::small(preset);
  std::string text;
  for (const auto& [name, step] : steps()) {
    Schedule sch(w.func, true);
    std::optional<std::string> refused = step(sch, roles);
    text += "### " + name + "\n";
    if (refused) {
      text += "refused: " + *refused + "\n";
      EXPECT_EQ(ir::to_string(sch.func()), ir::to_string(w.func))
          << name << " refused but changed the program";
      continue;
    }
    text += ir::to_string(sch.func());
    EXPECT_TRUE(testing::computes_reference(w, sch.func())) << preset << " " << name;
  }
  testing::expect_golden(golden, text);
}

TEST(PerPrimitiveGolden, GMM) {
  run_all("GMM-1", {"Z", "", ""}, "per_primitive_gmm");
}
TEST(PerPrimitiveGolden, C2D) {
  run_all("C2D-1", {"conv2d", "pad", "conv2d"}, "per_primitive_c2d");
}
TEST(PerPrimitiveGolden, SFM) {
  run_all("SFM-1", {"row_sum", "row_exp", "softmax"}, "per_primitive_sfm");
}
// The same primitives around the max reduction and its single consumer.
TEST(PerPrimitiveGolden, SFMRowMax) {
  run_all("SFM-1", {"row_max", "", "row_exp"}, "per_primitive_sfm_row_max");
}

}  // namespace
}  // namespace tyche::schedule
