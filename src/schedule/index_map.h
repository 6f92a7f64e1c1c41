// Layout maps for transform_layout: `lambda a, b: (b // 16, a, b % 16)`, in TVM's notation. Only
// maps that split dimensions by constant factors and permute the parts are accepted: each input
// appears once as itself, or once as `x // c` and once as `x % c` (c dividing its extent). Such
// a map is a bijection onto a buffer of the same size, so any access pattern stays exact.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "ir/expr.h"

namespace tyche::schedule {

class IndexMap {
 public:
  // The map, or a one-line reason it is malformed or not a split-and-permute.
  static std::variant<IndexMap, std::string> parse(std::string_view text);

  size_t input_rank() const { return inputs_.size(); }
  // Empty when the map fits a buffer of this constant shape, else why not.
  std::string check_shape(const std::vector<int64_t>& shape) const;

  std::vector<int64_t> map_shape(const std::vector<int64_t>& shape) const;
  std::vector<ir::Expr> map_indices(const std::vector<ir::Expr>& indices) const;
  // A region of the old buffer -> the smallest box of the new one that holds its image.
  std::vector<ir::Range> map_region(const std::vector<ir::Range>& region) const;
  // The canonical text: `lambda a, b: (b // 16, a, b % 16)`.
  std::string to_string() const;

 private:
  enum class Op { kSelf, kDiv, kMod };
  struct Output {
    size_t input;
    Op op;
    int64_t factor;  // kDiv, kMod
  };
  std::vector<std::string> inputs_;
  std::vector<Output> outputs_;
};

}  // namespace tyche::schedule
