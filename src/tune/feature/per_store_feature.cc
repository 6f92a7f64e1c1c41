// Extraction: lower the blocks (keeping GPU thread bindings), compact the intermediates, then walk
// the loops once; at each store, count its operations and measure each buffer it touches by
// interval arithmetic on the indices, loop level by loop level.
//
// Definitions (n loops around the store, loop 0 outermost; m accesses of a buffer):
//   bytes         m x (product of all extents) x element size;
//   unique bytes  the bounding box the accesses cover when every loop runs, x element size;
//   stride        how far (in elements) the access moves when the innermost loop that moves it
//                 steps once;
//   lines         cache lines fetched when consecutive steps of that loop share lines:
//                 m x (outer iterations) x ceil(extent x min(stride x size, 64) / 64);
//   unique lines  lines of the bounding box (rows x ceil(row bytes / 64));
//   footprint k   unique bytes with only the innermost k loops running;
//   reuse         "loop": the innermost loop whose variable no access uses re-reads the same
//                 data (count = its extent, distance = the iterations and the bytes of all
//                 buffers inside it); "serial": read and written by the same store
//                 (accumulation); else none.
#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <unordered_map>

#include "arith/linear.h"
#include "ir/annotation_keys.h"
#include "ir/functor.h"
#include "ir/op.h"
#include "ir/var_use.h"
#include "lower/lower.h"
#include "support/int_division.h"
#include "tune/feature/per_store_feature.h"

namespace tyche::tune {

namespace {

constexpr int64_t kCacheLine = 64;

float log_feature(double x) {
  return static_cast<float>(std::log2(1.0 + std::max(0.0, x)));
}

struct Interval {
  int64_t lo = 0, hi = 0;
};

// Intervals of the loop variables: relaxed ones over their range, the others at their minimum.
using VarIntervals = std::unordered_map<const ir::VarNode*, Interval>;

// The values an integer index expression takes; nullopt when it depends on data (a load) or
// on something interval arithmetic does not follow.
std::optional<Interval> bound(const ir::Expr& e, const VarIntervals& vars) {
  using ir::ExprKind;
  switch (e.kind()) {
    case ExprKind::kIntImm: {
      int64_t v = e.as<ir::IntImmNode>()->value;
      return Interval{v, v};
    }
    case ExprKind::kVar: {
      auto it = vars.find(e.as<ir::VarNode>());
      if (it == vars.end()) return Interval{0, 0};
      return it->second;
    }
    case ExprKind::kCast:
      return bound(e.as<ir::CastNode>()->value, vars);
    case ExprKind::kSelect: {
      auto* s = e.as<ir::SelectNode>();
      auto a = bound(s->true_value, vars), b = bound(s->false_value, vars);
      if (!a || !b) return std::nullopt;
      return Interval{std::min(a->lo, b->lo), std::max(a->hi, b->hi)};
    }
    default:
      break;
  }
  const ir::BinaryNode* bin = e.as_binary();
  if (!bin) return std::nullopt;
  auto a = bound(bin->a, vars), b = bound(bin->b, vars);
  if (!a || !b) return std::nullopt;
  switch (e.kind()) {
    case ExprKind::kAdd:
      return Interval{a->lo + b->lo, a->hi + b->hi};
    case ExprKind::kSub:
      return Interval{a->lo - b->hi, a->hi - b->lo};
    case ExprKind::kMul: {
      std::array<int64_t, 4> c = {a->lo * b->lo, a->lo * b->hi, a->hi * b->lo, a->hi * b->hi};
      return Interval{*std::min_element(c.begin(), c.end()), *std::max_element(c.begin(), c.end())};
    }
    case ExprKind::kMin:
      return Interval{std::min(a->lo, b->lo), std::min(a->hi, b->hi)};
    case ExprKind::kMax:
      return Interval{std::max(a->lo, b->lo), std::max(a->hi, b->hi)};
    case ExprKind::kFloorDiv:
    case ExprKind::kDiv:
      if (b->lo != b->hi || b->lo <= 0) return std::nullopt;
      return Interval{floordiv(a->lo, b->lo), floordiv(a->hi, b->lo)};
    case ExprKind::kFloorMod: {
      if (b->lo != b->hi || b->lo <= 0) return std::nullopt;
      int64_t c = b->lo;
      if (floordiv(a->lo, c) == floordiv(a->hi, c))
        return Interval{tyche::floormod(a->lo, c), tyche::floormod(a->hi, c)};
      return Interval{0, c - 1};
    }
    default:
      return std::nullopt;
  }
}

struct Loop {
  const ir::VarNode* var;
  int64_t min, extent;
  ir::ForKind kind;
  std::string tag;
  int64_t auto_unroll = -1;  // pragma_auto_unroll_max_step on this loop
};

struct Allocation {
  const ir::BufferNode* buffer;
  double outer_prod;  // iterations of the loops around the allocation
};

// Operation counts of one execution of a store, by feature position in the arith group.
enum Arith {
  kFAddSub,
  kFMul,
  kFMad,
  kFDivMod,
  kFCmp,
  kFMath,
  kFMinMax,
  kIAddSub,
  kIMul,
  kIDivMod,
  kICmp,
  kIMinMax,
  kBool,
  kSelect,
  kCast,
  kNumArith
};

class OpCounter : public ir::StmtExprVisitor {
 public:
  std::array<double, kNumArith> counts{};

  void visit_expr(const ir::Expr& e) override {
    if (const ir::BinaryNode* b = e.as_binary()) {
      bool f = b->a.dtype().is_float();
      switch (e.kind()) {
        case ir::ExprKind::kAdd:
        case ir::ExprKind::kSub: {
          // a * b + c is one multiply-add
          const ir::BinaryNode* mul = nullptr;
          if (f) {
            for (const ir::Expr* side : {&b->a, &b->b})
              if (!mul && side->kind() == ir::ExprKind::kMul) mul = side->as_binary();
          }
          if (mul) {
            ++counts[kFMad];
            visit_expr(mul->a);
            visit_expr(mul->b);
            visit_expr(mul == b->a.as_binary() ? b->b : b->a);
            return;
          }
          ++counts[f ? kFAddSub : kIAddSub];
          break;
        }
        case ir::ExprKind::kMul:
          ++counts[f ? kFMul : kIMul];
          break;
        case ir::ExprKind::kDiv:
        case ir::ExprKind::kFloorDiv:
        case ir::ExprKind::kFloorMod:
          ++counts[f ? kFDivMod : kIDivMod];
          break;
        case ir::ExprKind::kMin:
        case ir::ExprKind::kMax:
          ++counts[f ? kFMinMax : kIMinMax];
          break;
        case ir::ExprKind::kAnd:
        case ir::ExprKind::kOr:
          ++counts[kBool];
          break;
        default:
          ++counts[f ? kFCmp : kICmp];
          break;  // comparisons
      }
    } else if (e.kind() == ir::ExprKind::kNot) {
      ++counts[kBool];
    } else if (e.kind() == ir::ExprKind::kSelect) {
      ++counts[kSelect];
    } else if (e.kind() == ir::ExprKind::kCast) {
      ++counts[kCast];
    } else if (auto* c = e.as<ir::CallNode>()) {
      ++counts[c->op == ir::CallOp::kIfThenElse ? kSelect : kFMath];
    }
    StmtExprVisitor::visit_expr(e);
  }
};

// The loads of an expression, loads inside indices included.
class LoadCollector : public ir::StmtExprVisitor {
 public:
  std::vector<const ir::BufferLoadNode*> loads;

 protected:
  void visit_buffer_load(const ir::BufferLoadNode* n) override {
    loads.push_back(n);
    StmtExprVisitor::visit_buffer_load(n);
  }
};

struct Access {
  const std::vector<ir::Expr>* indices;
};

struct BufferUse {
  const ir::BufferNode* buffer;
  bool read = false, written = false;
  std::vector<Access> accesses;
};

// What one buffer contributes to a store's features (before the log transform).
struct BufferStats {
  bool read = false, written = false;
  double bytes = 0, unique_bytes = 0, lines = 0, unique_lines = 0;
  int reuse_type = 2;  // 0 loop, 1 serial, 2 none
  double reuse_iters = 0, reuse_bytes = 0, reuse_count = 0;
  double stride = 0;
  std::array<double, 4> footprint{};  // bytes the innermost 1..4 loops touch
  std::vector<float> encoded;         // the kBufferFieldCount entries
};

class Extractor : public ir::StmtExprVisitor {
 public:
  explicit Extractor(const FeatureOptions& options) : options_(options), width_(feature_count()) {}
  FeatureRows rows;

 protected:
  void visit_for(const ir::ForNode* n) override {
    Loop l{n->loop_var.get(), 0, 1, n->for_kind, n->thread_tag};
    if (auto m = ir::as_const_int(n->min)) l.min = *m;
    if (auto e = ir::as_const_int(n->extent)) l.extent = std::max<int64_t>(1, *e);
    auto it = n->annotations.find(ir::ann::kAutoUnrollMaxStep);
    if (it != n->annotations.end())
      if (const int64_t* v = std::get_if<int64_t>(&it->second)) l.auto_unroll = *v;
    loops_.push_back(l);
    visit_stmt(n->body);
    loops_.pop_back();
  }

  void visit_if(const ir::IfThenElseNode* n) override {
    conditions_.push_back(n->condition);
    visit_stmt(n->then_case);
    if (n->else_case.defined()) visit_stmt(n->else_case);
    conditions_.pop_back();
  }

  void visit_allocate(const ir::AllocateNode* n) override {
    allocations_.push_back({n->buffer.get(), outer_prod()});
    visit_stmt(n->body);
    allocations_.pop_back();
  }

  void visit_buffer_store(const ir::BufferStoreNode* n) override { add_row(n); }

 private:
  double outer_prod() const {
    double p = 1;
    for (const Loop& l : loops_) p *= static_cast<double>(l.extent);
    return p;
  }

  // One row: the store's features, group by group, in the order of feature_names().
  void add_row(const ir::BufferStoreNode* store) {
    size_t offset = rows.values.size();
    rows.values.resize(offset + static_cast<size_t>(width_), 0.0f);
    ++rows.rows;
    rows.stores.push_back(store->buffer->name);
    Row row{rows.values.data() + offset};
    const double outer = outer_prod();
    double ops_per_iter = add_arith(row, store, outer);
    add_loops(row);
    std::vector<BufferUse> uses = buffer_uses(store);
    std::vector<std::vector<double>> unique_by_level;  // [buffer][level 0..n]
    for (const BufferUse& u : uses) unique_by_level.push_back(unique_elements_by_level(u));
    add_buffers(row, uses, unique_by_level, outer);
    add_intensity(row, uses, unique_by_level, ops_per_iter);
    add_allocation(row, store, outer);
    int64_t unroll = 0;
    for (const Loop& l : loops_)
      if (l.auto_unroll >= 0) unroll = l.auto_unroll;
    row.put(log_feature(outer));
    row.put(log_feature(static_cast<double>(loops_.size())));
    row.put(log_feature(static_cast<double>(unroll)));
  }

  // The columns of a row being written.
  struct Row {
    float* out;
    int col = 0;
    void put(double v) { out[col++] = static_cast<float>(v); }
  };

  // arith.*: operations by kind times the iterations around the store; returns the operations
  // of one iteration.
  double add_arith(Row& row, const ir::BufferStoreNode* store, double outer) const {
    OpCounter ops;
    ops.visit_expr(store->value);
    for (const ir::Expr& i : store->indices) ops.visit_expr(i);
    for (const ir::Expr& c : conditions_) ops.visit_expr(c);
    double ops_per_iter = 0;
    for (double c : ops.counts) {
      row.put(log_feature(c * outer));
      ops_per_iter += c;
    }
    return ops_per_iter;
  }

  // loop.*: vectorized, unrolled and parallel loops around the store, GPU extents.
  void add_loops(Row& row) const {
    const int n = static_cast<int>(loops_.size());
    for (ir::ForKind kind :
         {ir::ForKind::kVectorized, ir::ForKind::kUnrolled, ir::ForKind::kParallel}) {
      double num = 0, prod = 1, len = 0;
      int innermost = -1;
      for (int i = 0; i < n; ++i) {
        if (loops_[i].kind != kind) continue;
        ++num;
        prod *= static_cast<double>(loops_[i].extent);
        len = static_cast<double>(loops_[i].extent);
        innermost = i;
      }
      row.put(log_feature(num));
      row.put(log_feature(num ? prod : 0));
      row.put(log_feature(len));
      int pos = innermost < 0 ? 0 : innermost == n - 1 ? 1 : innermost == 0 ? 3 : 2;
      for (int p = 0; p < 4; ++p) row.put(pos == p ? 1.0 : 0.0);
    }
    row.put(options_.is_gpu ? 1.0 : 0.0);
    for (const char* tag : {"blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x", "threadIdx.y",
                            "threadIdx.z", "vthread"}) {
      double e = 1;
      bool seen = false;
      for (const Loop& l : loops_)
        if (l.kind == ir::ForKind::kThreadBinding && l.tag.rfind(tag, 0) == 0) {
          e *= static_cast<double>(l.extent);
          seen = true;
        }
      row.put(log_feature(seen ? e : 0));
    }
  }

  // bufN.*: the buffers the store touches, largest first.
  void add_buffers(Row& row, const std::vector<BufferUse>& uses,
                   const std::vector<std::vector<double>>& unique_by_level, double outer) const {
    const int n = static_cast<int>(loops_.size());
    std::vector<BufferStats> stats;
    for (size_t b = 0; b < uses.size(); ++b)
      stats.push_back(measure(uses[b], unique_by_level[b], outer));
    // Reuse distance in bytes: what every buffer of the store touches inside the reusing loop.
    for (size_t b = 0; b < uses.size(); ++b) {
      if (stats[b].reuse_type != 0) continue;
      int k = static_cast<int>(stats[b].reuse_iters);  // the reusing loop's level, set by measure()
      double inside = 0;
      for (size_t o = 0; o < uses.size(); ++o)
        inside += unique_by_level[o][static_cast<size_t>(k + 1)] * uses[o].buffer->dtype.bytes();
      double iters = 1;
      for (int i = k + 1; i < n; ++i) iters *= static_cast<double>(loops_[i].extent);
      stats[b].reuse_iters = iters;
      stats[b].reuse_bytes = inside;
    }
    for (BufferStats& s : stats) encode(s);
    std::sort(stats.begin(), stats.end(), [](const BufferStats& a, const BufferStats& b) {
      if (a.encoded[5] != b.encoded[5]) return a.encoded[5] > b.encoded[5];  // lines
      if (a.encoded[3] != b.encoded[3]) return a.encoded[3] > b.encoded[3];  // bytes
      return a.encoded > b.encoded;
    });
    for (int b = 0; b < kFeatureBuffers; ++b) {
      if (static_cast<size_t>(b) < stats.size())
        std::copy(stats[b].encoded.begin(), stats[b].encoded.end(), row.out + row.col);
      row.col += static_cast<int>(kBufferFieldCount);
    }
  }

  // intensity.*: operations per unique byte inside each loop level, innermost loop outward,
  // resampled to kIntensityPoints.
  void add_intensity(Row& row, const std::vector<BufferUse>& uses,
                     const std::vector<std::vector<double>>& unique_by_level,
                     double ops_per_iter) const {
    const int n = static_cast<int>(loops_.size());
    std::vector<double> curve;
    for (int k = n - 1; k >= 0; --k) {
      double iters = 1;
      for (int i = k; i < n; ++i) iters *= static_cast<double>(loops_[i].extent);
      double bytes = 0;
      for (size_t b = 0; b < uses.size(); ++b)
        bytes += unique_by_level[b][static_cast<size_t>(k)] * uses[b].buffer->dtype.bytes();
      curve.push_back(ops_per_iter * iters / std::max(bytes, 1.0));
    }
    for (int p = 0; p < kIntensityPoints; ++p) {
      double v = 0;
      if (curve.size() == 1) {
        v = curve[0];
      } else if (curve.size() > 1) {
        double x =
            static_cast<double>(p) * static_cast<double>(curve.size() - 1) / (kIntensityPoints - 1);
        size_t i = static_cast<size_t>(x);
        double t = x - static_cast<double>(i);
        v = i + 1 < curve.size() ? curve[i] * (1 - t) + curve[i + 1] * t : curve[i];
      }
      row.put(log_feature(v));
    }
  }

  // alloc.*: for a store into an intermediate, its size and how often it is allocated.
  void add_allocation(Row& row, const ir::BufferStoreNode* store, double outer) const {
    const ir::BufferNode* target = store->buffer.get();
    auto alloc = std::find_if(allocations_.rbegin(), allocations_.rend(),
                              [&](const Allocation& a) { return a.buffer == target; });
    if (alloc == allocations_.rend()) {
      row.col += 4;
      return;
    }
    double elems = 1;
    for (const ir::Expr& d : target->shape)
      elems *= static_cast<double>(ir::as_const_int(d).value_or(1));
    row.put(log_feature(elems * target->dtype.bytes()));
    row.put(log_feature(elems * alloc->outer_prod));
    row.put(log_feature(alloc->outer_prod));
    row.put(log_feature(outer / alloc->outer_prod));
  }

  static constexpr size_t kBufferFieldCount = 22;

  std::vector<BufferUse> buffer_uses(const ir::BufferStoreNode* store) const {
    std::vector<BufferUse> uses;
    auto use_of = [&](const ir::BufferNode* b) -> BufferUse& {
      for (BufferUse& u : uses)
        if (u.buffer == b) return u;
      uses.push_back(BufferUse{b, false, false, {}});
      return uses.back();
    };
    LoadCollector loads;
    loads.visit_expr(store->value);
    for (const ir::Expr& i : store->indices) loads.visit_expr(i);
    for (const ir::BufferLoadNode* l : loads.loads) {
      BufferUse& u = use_of(l->buffer.get());
      u.read = true;
      u.accesses.push_back({&l->indices});
    }
    BufferUse& w = use_of(store->buffer.get());
    w.written = true;
    w.accesses.push_back({&store->indices});
    return uses;
  }

  VarIntervals intervals_from(int level) const {
    VarIntervals vars;
    for (int i = 0; i < static_cast<int>(loops_.size()); ++i) {
      const Loop& l = loops_[i];
      vars[l.var] = i >= level ? Interval{l.min, l.min + l.extent - 1} : Interval{l.min, l.min};
    }
    return vars;
  }

  // Per dimension, how many indices the accesses cover (their bounding box) with the loops from
  // `level` inward relaxed; the whole dimension where an index depends on data.
  std::vector<int64_t> spans(const BufferUse& u, int level) const {
    VarIntervals vars = intervals_from(level);
    const auto& shape = u.buffer->shape;
    std::vector<int64_t> out;
    for (size_t d = 0; d < shape.size(); ++d) {
      int64_t dim = ir::as_const_int(shape[d]).value_or(1);
      std::optional<Interval> box;
      for (const Access& a : u.accesses) {
        auto iv = bound((*a.indices)[d], vars);
        if (!iv) {
          box.reset();
          break;
        }
        box = box ? Interval{std::min(box->lo, iv->lo), std::max(box->hi, iv->hi)} : *iv;
      }
      out.push_back(box ? std::clamp<int64_t>(box->hi - box->lo + 1, 1, std::max<int64_t>(dim, 1))
                        : std::max<int64_t>(dim, 1));
    }
    return out;
  }

  // Elements covered for every level 0..n (n: no loop relaxed).
  std::vector<double> unique_elements_by_level(const BufferUse& u) const {
    std::vector<double> out;
    for (int level = 0; level <= static_cast<int>(loops_.size()); ++level) {
      double elems = 1;
      for (int64_t s : spans(u, level)) elems *= static_cast<double>(s);
      out.push_back(elems);
    }
    return out;
  }

  // The flat element offset of an access with every loop at its minimum except `moved` at min+1.
  int64_t address(const ir::BufferNode* buffer, const std::vector<ir::Expr>& indices,
                  int moved) const {
    VarIntervals vars;
    for (int i = 0; i < static_cast<int>(loops_.size()); ++i) {
      int64_t v = loops_[i].min + (i == moved ? 1 : 0);
      vars[loops_[i].var] = Interval{v, v};
    }
    int64_t addr = 0, row = 1;
    for (size_t d = indices.size(); d-- > 0;) {
      int64_t stride = row;
      if (!buffer->strides.empty()) stride = ir::as_const_int(buffer->strides[d]).value_or(row);
      auto iv = bound(indices[d], vars);
      addr += (iv ? iv->lo : 0) * stride;
      row *= ir::as_const_int(buffer->shape[d]).value_or(1);
    }
    return addr;
  }

  BufferStats measure(const BufferUse& u, const std::vector<double>& unique, double outer) const {
    BufferStats s;
    s.read = u.read;
    s.written = u.written;
    const int n = static_cast<int>(loops_.size());
    const double elem = u.buffer->dtype.bytes();
    const double m = static_cast<double>(u.accesses.size());
    s.bytes = m * outer * elem;
    s.unique_bytes = unique[0] * elem;
    for (int k = 1; k <= 4; ++k)
      s.footprint[static_cast<size_t>(k - 1)] =
          unique[static_cast<size_t>(std::max(0, n - k))] * elem;
    // unique lines: rows of the bounding box times the lines of a row
    std::vector<int64_t> box = spans(u, 0);
    double rows = 1;
    for (size_t d = 0; d + 1 < box.size(); ++d) rows *= static_cast<double>(box[d]);
    s.unique_lines =
        rows * std::ceil((box.empty() ? 1.0 : static_cast<double>(box.back())) * elem / kCacheLine);
    // stride and lines: the innermost loop that moves any access
    int moving = -1;
    int64_t stride = 0;
    for (int i = n - 1; i >= 0 && moving < 0; --i) {
      for (const Access& a : u.accesses) {
        int64_t delta =
            std::abs(address(u.buffer, *a.indices, i) - address(u.buffer, *a.indices, -1));
        if (delta != 0 && (stride == 0 || delta < stride)) stride = delta;
      }
      if (stride != 0) moving = i;
    }
    s.stride = static_cast<double>(stride);
    if (moving < 0) {
      s.lines = m;
    } else {
      double outside = 1;
      for (int i = 0; i < moving; ++i) outside *= static_cast<double>(loops_[i].extent);
      double step = std::min<double>(static_cast<double>(stride) * elem, kCacheLine);
      s.lines =
          m * outside * std::ceil(static_cast<double>(loops_[moving].extent) * step / kCacheLine);
    }
    // reuse: the innermost loop no access depends on (distance filled in by the caller)
    for (int i = n - 1; i >= 0; --i) {
      const ir::VarNode* v = loops_[i].var;
      bool used = std::any_of(u.accesses.begin(), u.accesses.end(), [&](const Access& a) {
        return std::any_of(a.indices->begin(), a.indices->end(),
                           [&](const ir::Expr& e) { return ir::uses_var(e, v); });
      });
      if (!used && loops_[i].extent > 1) {
        s.reuse_type = 0;
        s.reuse_count = static_cast<double>(loops_[i].extent);
        s.reuse_iters = i;  // the level, for now
        return s;
      }
    }
    if (u.read && u.written) {
      s.reuse_type = 1;
      s.reuse_iters = 1;
      s.reuse_bytes = elem;
      s.reuse_count = 1;
    }
    return s;
  }

  static void encode(BufferStats& s) {
    double per = s.reuse_count > 0 ? s.reuse_count : 1;
    s.encoded = {s.read && !s.written ? 1.0f : 0.0f, s.written && !s.read ? 1.0f : 0.0f,
                 s.read && s.written ? 1.0f : 0.0f,  log_feature(s.bytes),
                 log_feature(s.unique_bytes),        log_feature(s.lines),
                 log_feature(s.unique_lines),        s.reuse_type == 0 ? 1.0f : 0.0f,
                 s.reuse_type == 1 ? 1.0f : 0.0f,    s.reuse_type == 2 ? 1.0f : 0.0f,
                 log_feature(s.reuse_iters),         log_feature(s.reuse_bytes),
                 log_feature(s.reuse_count),         log_feature(s.bytes / per),
                 log_feature(s.unique_bytes / per),  log_feature(s.lines / per),
                 log_feature(s.unique_lines / per),  log_feature(s.stride),
                 log_feature(s.footprint[0]),        log_feature(s.footprint[1]),
                 log_feature(s.footprint[2]),        log_feature(s.footprint[3])};
  }

  FeatureOptions options_;
  int width_;
  std::vector<Loop> loops_;
  std::vector<ir::Expr> conditions_;
  std::vector<Allocation> allocations_;
};

}  // namespace

FeatureRows features_of_loops(const ir::PrimFunc& loops, const FeatureOptions& options) {
  Extractor x(options);
  x.visit_stmt(loops->body);
  return std::move(x.rows);
}

FeatureRows per_store_features(const ir::PrimFunc& scheduled, const FeatureOptions& options) {
  return features_of_loops(lower::lower_loops(scheduled, {}, options.is_gpu).func, options);
}

LoweredProgram::LoweredProgram(ir::PrimFunc program, bool is_gpu)
    : program_(std::move(program)),
      split_(lower::split_layout_rewrites(program_)),
      is_gpu_(is_gpu) {}

const lower::Lowered& LoweredProgram::loops() const {
  // Layout rewrites run once at load, not in the kernel: neither timed nor featurized.
  std::call_once(loops_once_, [&] { loops_ = lower::lower_loops(split_.main, {}, is_gpu_); });
  return loops_;
}

const FeatureRows& LoweredProgram::features() const {
  std::call_once(features_once_,
                 [&] { features_ = features_of_loops(loops().func, {.is_gpu = is_gpu_}); });
  return features_;
}

}  // namespace tyche::tune
