// Both the equality and the hash reduce a tree to one canonical stream: node kinds, types and
// constants in traversal order, with each variable and buffer replaced by the order in which it
// was first met. Two trees are equal modulo renaming exactly when their streams are equal, and
// the hash is the hash of the stream, so the two can never disagree.
#include "ir/structural.h"

#include <bit>
#include <cstring>
#include <functional>
#include <string>
#include <unordered_map>

#include "support/hash.h"

namespace tyche::ir {

namespace {

struct Stream {
  std::vector<uint64_t> words;
  std::vector<std::string> strings;  // compared exactly; only their hashes enter `words`
  bool operator==(const Stream&) const = default;
  uint64_t hash() const {
    uint64_t h = 0x51ab1e5eedULL;
    for (uint64_t w : words) h = hash_combine(h, w);
    return h;
  }
};

class Canonicalizer {
 public:
  Stream out;

  void expr(const Expr& e) {
    if (!e.defined()) return word(0xdead);
    word(static_cast<uint64_t>(e.kind()) + 100);
    dtype(e.dtype());
    switch (e.kind()) {
      case ExprKind::kIntImm:
        return word(static_cast<uint64_t>(e.as<IntImmNode>()->value));
      case ExprKind::kFloatImm:
        return word(std::bit_cast<uint64_t>(e.as<FloatImmNode>()->value));
      case ExprKind::kVar:
        return var(static_cast<const VarNode*>(e.get()));
      case ExprKind::kNot:
        return expr(e.as<NotNode>()->a);
      case ExprKind::kSelect: {
        auto* n = e.as<SelectNode>();
        expr(n->condition), expr(n->true_value), expr(n->false_value);
        return;
      }
      case ExprKind::kCast:
        return expr(e.as<CastNode>()->value);
      case ExprKind::kBufferLoad: {
        auto* n = e.as<BufferLoadNode>();
        buffer(n->buffer);
        return exprs(n->indices);
      }
      case ExprKind::kCall: {
        auto* n = e.as<CallNode>();
        word(static_cast<uint64_t>(n->op));
        return exprs(n->args);
      }
      case ExprKind::kRamp: {
        auto* n = e.as<RampNode>();
        expr(n->base), expr(n->stride);
        return word(static_cast<uint64_t>(n->lanes));
      }
      case ExprKind::kBroadcast:
        return expr(e.as<BroadcastNode>()->value);
      case ExprKind::kLet: {
        auto* n = e.as<LetNode>();
        var(n->var.get()), expr(n->value), expr(n->body);
        return;
      }
      default: {
        auto* n = static_cast<const BinaryNode*>(e.get());
        expr(n->a), expr(n->b);
        return;
      }
    }
  }

  void stmt(const Stmt& s) {
    if (!s.defined()) return word(0xdeadbeef);
    word(static_cast<uint64_t>(s.kind()) + 200);
    switch (s.kind()) {
      case StmtKind::kBufferStore: {
        auto* n = s.as<BufferStoreNode>();
        buffer(n->buffer), expr(n->value), exprs(n->indices);
        return;
      }
      case StmtKind::kSeqStmt: {
        auto* n = s.as<SeqStmtNode>();
        word(n->seq.size());
        for (const Stmt& c : n->seq) stmt(c);
        return;
      }
      case StmtKind::kIfThenElse: {
        auto* n = s.as<IfThenElseNode>();
        expr(n->condition), stmt(n->then_case), stmt(n->else_case);
        return;
      }
      case StmtKind::kEvaluate:
        return expr(s.as<EvaluateNode>()->value);
      case StmtKind::kFor: {
        auto* n = s.as<ForNode>();
        var(n->loop_var.get()), expr(n->min), expr(n->extent);
        word(static_cast<uint64_t>(n->for_kind));
        string(n->thread_tag);
        annotations(n->annotations);
        return stmt(n->body);
      }
      case StmtKind::kBlock: {
        auto* n = s.as<BlockNode>();
        string(n->name);
        word(n->iter_vars.size());
        for (const IterVar& iv : n->iter_vars) {
          var(iv.var.get()), expr(iv.dom.min), expr(iv.dom.extent);
          word(static_cast<uint64_t>(iv.kind));
        }
        word(n->alloc_buffers.size());
        for (const Buffer& b : n->alloc_buffers) buffer(b);
        regions(n->reads), regions(n->writes);
        annotations(n->annotations);
        stmt(n->init);
        return stmt(n->body);
      }
      case StmtKind::kBlockRealize: {
        auto* n = s.as<BlockRealizeNode>();
        exprs(n->iter_values), expr(n->predicate);
        return stmt(n->block);
      }
      case StmtKind::kAllocate: {
        auto* n = s.as<AllocateNode>();
        buffer(n->buffer);
        return stmt(n->body);
      }
    }
  }

  void func(const PrimFunc& f) {
    word(f->params.size());
    word(static_cast<uint64_t>(f->num_outputs));
    for (const Buffer& b : f->params) buffer(b);
    stmt(f->body);
  }

 private:
  std::unordered_map<const void*, uint64_t> vars_, buffers_;

  void word(uint64_t w) { out.words.push_back(w); }
  void string(const std::string& s) {
    out.strings.push_back(s);
    word(hash_string(s));
  }
  void dtype(DataType t) {
    word((static_cast<uint64_t>(t.code()) << 32) | (static_cast<uint64_t>(t.bits()) << 16) |
         static_cast<uint64_t>(t.lanes()));
  }
  void exprs(const std::vector<Expr>& es) {
    word(es.size());
    for (const Expr& e : es) expr(e);
  }
  void var(const VarNode* v) {
    auto [it, fresh] = vars_.emplace(v, vars_.size());
    word(it->second);
    if (fresh) dtype(v->dtype);
  }
  void buffer(const Buffer& b) {
    auto [it, fresh] = buffers_.emplace(b.get(), buffers_.size());
    word(it->second);
    if (!fresh) return;
    dtype(b->dtype);
    exprs(b->shape);
    exprs(b->strides);
    string(b->scope);
    word(static_cast<uint64_t>(b->alignment));
  }
  void regions(const std::vector<BufferRegion>& rs) {
    word(rs.size());
    for (const BufferRegion& r : rs) {
      buffer(r.buffer);
      word(r.region.size());
      for (const Range& rg : r.region) expr(rg.min), expr(rg.extent);
    }
  }
  void annotations(const Annotations& anns) {
    word(anns.size());
    for (const auto& [key, value] : anns) {
      string(key);
      word(value.index());
      if (auto* i = std::get_if<int64_t>(&value))
        word(static_cast<uint64_t>(*i));
      else if (auto* d = std::get_if<double>(&value))
        word(std::bit_cast<uint64_t>(*d));
      else
        string(std::get<std::string>(value));
    }
  }
};

template <typename T, void (Canonicalizer::*F)(const T&)>
Stream canonical(const T& x) {
  Canonicalizer c;
  (c.*F)(x);
  return std::move(c.out);
}

}  // namespace

bool structural_equal(const Expr& a, const Expr& b) {
  return canonical<Expr, &Canonicalizer::expr>(a) == canonical<Expr, &Canonicalizer::expr>(b);
}
bool structural_equal(const Stmt& a, const Stmt& b) {
  return canonical<Stmt, &Canonicalizer::stmt>(a) == canonical<Stmt, &Canonicalizer::stmt>(b);
}
bool structural_equal(const PrimFunc& a, const PrimFunc& b) {
  return canonical<PrimFunc, &Canonicalizer::func>(a) ==
         canonical<PrimFunc, &Canonicalizer::func>(b);
}
uint64_t structural_hash(const Expr& e) {
  return canonical<Expr, &Canonicalizer::expr>(e).hash();
}
uint64_t structural_hash(const Stmt& s) {
  return canonical<Stmt, &Canonicalizer::stmt>(s).hash();
}
uint64_t structural_hash(const PrimFunc& f) {
  return canonical<PrimFunc, &Canonicalizer::func>(f).hash();
}

}  // namespace tyche::ir
