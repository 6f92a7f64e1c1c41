// MutateTileSize: moves a divisor f of one tile factor to another tile of the same
// sample_perfect_tile decision, so the product (the loop's extent) is unchanged.
#include <algorithm>

#include "tune/mutator/mutator.h"

namespace tyche::tune {

namespace {

using schedule::Value;

std::vector<int64_t> divisors_above_one(int64_t x) {
  std::vector<int64_t> out;
  for (int64_t d = 1; d * d <= x; ++d) {
    if (x % d != 0) continue;
    if (d > 1) out.push_back(d);
    if (d * d != x) out.push_back(x / d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

struct Tile {
  size_t index;
  std::vector<int64_t> factors;
  int64_t max_innermost;  // <= 0: unlimited
};

// Factors f > 1 of factors[x] that may move to position y: all of them unless y is innermost and
// the grown innermost would exceed the limit.
std::vector<int64_t> legal_moves(const Tile& t, size_t x, size_t y) {
  std::vector<int64_t> fs = divisors_above_one(t.factors[x]);
  if (y + 1 == t.factors.size() && t.max_innermost > 0)
    std::erase_if(fs, [&](int64_t f) { return t.factors[y] * f > t.max_innermost; });
  return fs;
}

// Positions x that can give a factor away, each with the positions y that can take one.
std::vector<std::pair<size_t, std::vector<size_t>>> sources(const Tile& t) {
  std::vector<std::pair<size_t, std::vector<size_t>>> out;
  for (size_t x = 0; x < t.factors.size(); ++x) {
    if (t.factors[x] <= 1) continue;
    std::vector<size_t> ys;
    for (size_t y = 0; y < t.factors.size(); ++y)
      if (y != x && !legal_moves(t, x, y).empty()) ys.push_back(y);
    if (!ys.empty()) out.emplace_back(x, std::move(ys));
  }
  return out;
}

template <typename T>
const T& pick(const std::vector<T>& v, RandomEngine& rng) {
  return v[static_cast<size_t>(rng.uniform_int(0, static_cast<int64_t>(v.size())))];
}

class MutateTileSize : public Mutator {
 public:
  std::string name() const override { return "MutateTileSize"; }

  std::optional<schedule::Trace> mutate(const schedule::Trace& trace, RandomEngine& rng) override {
    std::vector<Tile> tiles;
    for (size_t i = 0; i < trace.size(); ++i) {
      const schedule::Instruction& inst = trace.instructions()[i];
      auto d = trace.decisions().find(i);
      if (!inst.is(schedule::kind_sample_perfect_tile()) || d == trace.decisions().end()) continue;
      Tile t{i, {}, inst.arg("max_innermost_factor").i};
      for (const Value& v : d->second.list) t.factors.push_back(v.i);
      if (!sources(t).empty()) tiles.push_back(std::move(t));
    }
    if (tiles.empty()) return std::nullopt;
    // TVM's draw (tile, then x, then y, then f), restricted to legal choices so no retry is
    // needed: every draw yields a different, legal decision.
    Tile t = pick(tiles, rng);
    auto [x, ys] = pick(sources(t), rng);
    size_t y = pick(ys, rng);
    int64_t f = pick(legal_moves(t, x, y), rng);
    t.factors[x] /= f;
    t.factors[y] *= f;
    std::vector<Value> decision;
    for (int64_t v : t.factors) decision.push_back(Value::integer(v));
    return trace.with_decision(t.index, Value::of_list(std::move(decision)));
  }
};

}  // namespace

MutatorPtr mutate_tile_size() {
  return std::make_shared<MutateTileSize>();
}

}  // namespace tyche::tune
