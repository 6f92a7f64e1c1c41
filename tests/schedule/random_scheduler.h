// A random scheduler over every primitive, and tiny shapes of every op family: shared by the
// schedule property test and the lowering/codegen property test.
#pragma once

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "schedule/schedule.h"

namespace tyche::schedule::testing {

// Shapes small enough that interpreting one candidate costs tens of microseconds.
inline const std::vector<std::pair<std::string, std::vector<int64_t>>>& tiny_workloads() {
  static const std::vector<std::pair<std::string, std::vector<int64_t>>> w = {
      {"GMM", {1, 8, 8, 8}},
      {"C1D", {1, 8, 4, 4, 3, 2, 1}},
      {"C2D", {1, 6, 6, 2, 4, 3, 2, 1}},
      {"C3D", {1, 4, 4, 4, 2, 2, 3, 2, 1}},
      {"GRP", {1, 6, 6, 4, 4, 3, 2, 1}},
      {"DIL", {1, 7, 7, 2, 4, 3, 1, 1}},
      {"DEP", {1, 6, 6, 4, 3, 1, 1}},
      {"T2D", {1, 2, 2, 2, 2, 4, 2, 1}},
      {"CAP", {1, 3, 3, 1, 2, 3, 2, 1}},
      {"NRM", {1, 8, 8}},
      {"SFM", {6, 8}},
      {"CBR", {1, 6, 6, 2, 4, 3, 2, 1}},
      {"TBG", {1, 6, 2, 4}},
      {"DENSE_RELU", {6, 8, 8}},
  };
  return w;
}

class RandomScheduler {
 public:
  RandomScheduler(Schedule& sch, std::mt19937_64& rng) : sch_(sch), rng_(rng) {}

  // Accepted count per primitive choice, to show every primitive is really exercised.
  std::map<int, int>* accepted_by_choice = nullptr;

  // One random primitive on a random block/loop; returns whether it was accepted.
  bool step() {
    int choice = -1;
    bool ok = step_impl(choice);
    if (ok && accepted_by_choice) ++(*accepted_by_choice)[choice];
    return ok;
  }

 private:
  bool step_impl(int& choice) {
    std::vector<BlockRV> blocks = all_blocks();
    if (blocks.empty()) return false;
    BlockRV block = pick(blocks);
    std::vector<LoopRV> loops = sch_.get_loops(block).value();
    choice = uniform(0, 26);
    // Primitives that need one of the block's own loops fall back to those that do not.
    static constexpr int kNoLoopChoices[] = {9, 12, 13, 14, 15};
    if (loops.empty() && (choice < 9 || choice == 10 || choice == 11 ||
                          (choice >= 16 && choice <= 19) || choice >= 24))
      choice = kNoLoopChoices[uniform(0, 4)];
    switch (choice) {
      case 0:
      case 1: {
        LoopRV loop = pick(loops);
        int n = uniform(2, 3);
        std::vector<std::optional<ExprArg>> factors;
        int inferred = uniform(-1, n - 1);
        for (int i = 0; i < n; ++i)
          factors.push_back(i == inferred ? std::nullopt : std::optional<ExprArg>(uniform(1, 5)));
        return sch_.split(loop, factors).ok();
      }
      case 2: {
        size_t i = static_cast<size_t>(uniform(0, static_cast<int>(loops.size()) - 1));
        size_t j = std::min(loops.size() - 1, i + static_cast<size_t>(uniform(0, 2)));
        return sch_
            .fuse({loops.begin() + static_cast<long>(i), loops.begin() + static_cast<long>(j) + 1})
            .ok();
      }
      case 3:
      case 4: {
        std::vector<LoopRV> subset;
        for (const LoopRV& l : loops)
          if (uniform(0, 1)) subset.push_back(l);
        std::shuffle(subset.begin(), subset.end(), rng_);
        if (uniform(0, 9) == 0 && !subset.empty())
          subset.push_back(subset[0]);  // a duplicate: must refuse
        return sch_.reorder(subset).ok();
      }
      case 5:
        return sch_.parallel(pick(loops)).ok();
      case 6:
        return sch_.vectorize(pick(loops)).ok();
      case 7:
        return sch_.unroll(pick(loops)).ok();
      case 8:
        return sch_.annotate(pick(loops), "pragma_auto_unroll_max_step", int64_t{uniform(0, 64)})
            .ok();
      case 9:
        return sch_.add_unit_loop(block).ok();
      case 10: {
        // A loop from another block's nest: exercises the not-a-chain refusals.
        BlockRV other = pick(blocks);
        auto other_loops = sch_.get_loops(other).value();
        if (other_loops.empty()) return false;
        return sch_.reorder({pick(loops), pick(other_loops)}).ok();
      }
      case 11:
        return sch_.bind(pick(loops), uniform(0, 1) ? "threadIdx.x" : "blockIdx.y").ok();
      case 12:
      case 13: {
        // Target loops come mostly from other blocks' nests, where compute_at can be legal.
        auto other_loops = sch_.get_loops(pick(blocks)).value();
        if (other_loops.empty()) return false;
        return choice == 12 ? sch_.compute_at(block, pick(other_loops), uniform(0, 1)).ok()
                            : sch_.reverse_compute_at(block, pick(other_loops), uniform(0, 1)).ok();
      }
      case 14:
        return sch_.compute_inline(block).ok();
      case 15:
        return sch_.reverse_compute_inline(block).ok();
      case 16:
        return sch_.blockize(pick(loops)).ok();
      case 17:
        return sch_.tensorize(pick(loops), uniform(0, 1) ? "dot_4x4x4_f32" : "copy_4_f32").ok();
      case 20: {
        static const char* kScopes[] = {"shared", "local", "global", "bogus"};
        return sch_.cache_read(block, uniform(0, 2), kScopes[uniform(0, 3)]).ok();
      }
      case 21:
        return sch_.cache_write(block, uniform(0, 1), uniform(0, 1) ? "local" : "shared").ok();
      case 22:
        return sch_.set_scope(block, 0, uniform(0, 1) ? "local" : "shared").ok();
      case 23:
        return sch_.storage_align(block, 0, uniform(0, 3), uniform(1, 8), uniform(0, 3)).ok();
      case 24:
        return sch_.decompose_reduction(block, pick(loops)).ok();
      case 25:
        return sch_.rfactor(pick(loops), uniform(-2, 2)).ok();
      case 26: {
        // The written buffer's last dimension split by 1..4 and its outer part moved first.
        auto b = sch_.block_sref(block);
        if (!b.ok() || b.value()->as_block()->writes.empty()) return false;
        size_t rank = b.value()->as_block()->writes[0].buffer->shape.size();
        std::string in, out, last = "a" + std::to_string(rank - 1),
                             f = std::to_string(uniform(1, 4));
        for (size_t d = 0; d < rank; ++d) in += (d ? ", a" : "a") + std::to_string(d);
        for (size_t d = 0; d + 1 < rank; ++d) out += ", a" + std::to_string(d);
        return sch_
            .transform_layout(
                block, 0,
                "lambda " + in + ": (" + last + " // " + f + out + ", " + last + " % " + f + ")")
            .ok();
      }
      default: {
        // Tile by 4 so that tensorize and blockize sometimes find their patterns.
        LoopRV loop = pick(loops);
        return sch_.split(loop, {std::nullopt, 4}).ok();
      }
    }
  }

  std::vector<BlockRV> all_blocks() {
    std::vector<BlockRV> out;
    std::vector<BlockRV> stack = {sch_.get_block("root").value()};
    while (!stack.empty()) {
      BlockRV b = stack.back();
      stack.pop_back();
      for (const BlockRV& c : sch_.get_child_blocks(b).value()) {
        out.push_back(c);
        stack.push_back(c);
      }
    }
    return out;
  }
  int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  template <typename T>
  const T& pick(const std::vector<T>& v) {
    return v[static_cast<size_t>(uniform(0, static_cast<int>(v.size()) - 1))];
  }

  Schedule& sch_;
  std::mt19937_64& rng_;
};

}  // namespace tyche::schedule::testing
