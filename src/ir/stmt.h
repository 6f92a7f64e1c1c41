// Statements of the tensor IR (docs/architecture.md, "The IR"): loops, blocks and stores.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "ir/buffer.h"
#include "ir/expr.h"

namespace tyche::ir {

enum class StmtKind : uint8_t {
  kBufferStore,
  kSeqStmt,
  kIfThenElse,
  kEvaluate,
  kFor,
  kBlock,
  kBlockRealize,
  kAllocate,
};

struct StmtNode {
  const StmtKind kind;
  virtual ~StmtNode() = default;

 protected:
  explicit StmtNode(StmtKind k) : kind(k) {}
};

class Stmt : public NodeRef<StmtNode> {
 public:
  Stmt() = default;
  explicit Stmt(std::shared_ptr<const StmtNode> n) : NodeRef(std::move(n)) {}
  StmtKind kind() const { return (*this)->kind; }
  template <typename T>
  const T* as() const {
    return get() && get()->kind == T::kKind ? static_cast<const T*>(get()) : nullptr;
  }
};

// Annotation values on loops and blocks (ordered by key so printing is stable).
using AnnotationValue = std::variant<int64_t, double, std::string>;
using Annotations = std::map<std::string, AnnotationValue>;

struct BufferStoreNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::kBufferStore;
  const Buffer buffer;
  const Expr value;
  const std::vector<Expr> indices;
  BufferStoreNode(Buffer b, Expr v, std::vector<Expr> idx)
      : StmtNode(kKind), buffer(std::move(b)), value(std::move(v)), indices(std::move(idx)) {}
};

struct SeqStmtNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::kSeqStmt;
  const std::vector<Stmt> seq;
  explicit SeqStmtNode(std::vector<Stmt> s) : StmtNode(kKind), seq(std::move(s)) {}
};

struct IfThenElseNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::kIfThenElse;
  const Expr condition;
  const Stmt then_case;
  const Stmt else_case;  // may be undefined
  IfThenElseNode(Expr c, Stmt t, Stmt e)
      : StmtNode(kKind),
        condition(std::move(c)),
        then_case(std::move(t)),
        else_case(std::move(e)) {}
};

struct EvaluateNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::kEvaluate;
  const Expr value;
  explicit EvaluateNode(Expr v) : StmtNode(kKind), value(std::move(v)) {}
};

enum class ForKind : uint8_t { kSerial, kParallel, kVectorized, kUnrolled, kThreadBinding };
const char* for_kind_name(ForKind k);

struct ForNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::kFor;
  const Var loop_var;
  const Expr min, extent;
  const ForKind for_kind;
  const std::string thread_tag;  // for kThreadBinding: "blockIdx.x", "threadIdx.y", ...
  const Stmt body;
  const Annotations annotations;
  ForNode(Var v, Expr mn, Expr ext, ForKind k, Stmt b, std::string tag = {}, Annotations ann = {})
      : StmtNode(kKind),
        loop_var(std::move(v)),
        min(std::move(mn)),
        extent(std::move(ext)),
        for_kind(k),
        thread_tag(std::move(tag)),
        body(std::move(b)),
        annotations(std::move(ann)) {}
};

enum class IterKind : uint8_t { kSpatial, kReduce, kOpaque };
const char* iter_kind_name(IterKind k);

struct IterVar {
  Var var;
  Range dom;
  IterKind kind = IterKind::kSpatial;
};

struct BlockNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::kBlock;
  const std::string name;
  const std::vector<IterVar> iter_vars;
  const std::vector<BufferRegion> reads, writes;
  const Stmt init;  // may be undefined; runs when all reduce iters are at their minimum
  const Stmt body;
  const std::vector<Buffer> alloc_buffers;
  const Annotations annotations;
  BlockNode(std::string n, std::vector<IterVar> iv, std::vector<BufferRegion> r,
            std::vector<BufferRegion> w, Stmt i, Stmt b, std::vector<Buffer> alloc = {},
            Annotations ann = {})
      : StmtNode(kKind),
        name(std::move(n)),
        iter_vars(std::move(iv)),
        reads(std::move(r)),
        writes(std::move(w)),
        init(std::move(i)),
        body(std::move(b)),
        alloc_buffers(std::move(alloc)),
        annotations(std::move(ann)) {}
};

// A block is a statement; this typed handle is what BlockRealize holds.
class Block : public Stmt {
 public:
  Block() = default;
  explicit Block(std::shared_ptr<const BlockNode> n) : Stmt(std::move(n)) {}
  const BlockNode* get() const { return static_cast<const BlockNode*>(Stmt::get()); }
  const BlockNode* operator->() const { return static_cast<const BlockNode*>(Stmt::operator->()); }
  const BlockNode& operator*() const { return *operator->(); }
};

// Executes `block` with its iter vars bound to `iter_values` when `predicate` holds.
struct BlockRealizeNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::kBlockRealize;
  const std::vector<Expr> iter_values;
  const Expr predicate;
  const Block block;
  BlockRealizeNode(std::vector<Expr> v, Expr p, Block b)
      : StmtNode(kKind), iter_values(std::move(v)), predicate(std::move(p)), block(std::move(b)) {}
};

// Storage for `buffer` over `body`; appears only after lowering.
struct AllocateNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::kAllocate;
  const Buffer buffer;
  const Stmt body;
  AllocateNode(Buffer b, Stmt s) : StmtNode(kKind), buffer(std::move(b)), body(std::move(s)) {}
};

}  // namespace tyche::ir
