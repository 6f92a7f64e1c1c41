#include "lower/gpu/gpu_resources.h"

#include <fmt/format.h>

#include <algorithm>

#include "arith/const_int_bound.h"
#include "ir/functor.h"
#include "ir/op.h"
#include "support/error.h"

namespace tyche::lower {

namespace {

int64_t round_up(int64_t bytes, int64_t alignment) {
  return (bytes + alignment - 1) / alignment * alignment;
}

// The array one thread declares for a buffer allocated inside a kernel: a fragment of tiles is
// their registers (32-bit words), anything else its elements.
int64_t thread_array_bytes(const ir::Buffer& b, bool fragment_tiles) {
  int64_t bytes = gpu_array_bytes(b);
  if (!fragment_tiles || !ir::is_fragment_scope(b->scope)) return bytes;
  return arith::sat_mul(bytes / gpu_element_bytes(b->dtype),
                        int64_t{4} * fragment_tile_registers(b));
}

// The most bytes the arrays allocated under `s` hold at once: an allocation's body runs within
// its scope, statements in sequence (and an if's branches) one after another.
int64_t local_bytes(const ir::Stmt& s, bool fragment_tiles) {
  if (!s.defined()) return 0;
  switch (s.kind()) {
    case ir::StmtKind::kAllocate: {
      auto* a = s.as<ir::AllocateNode>();
      return arith::sat_add(thread_array_bytes(a->buffer, fragment_tiles),
                            local_bytes(a->body, fragment_tiles));
    }
    case ir::StmtKind::kSeqStmt: {
      int64_t most = 0;
      for (const ir::Stmt& c : s.as<ir::SeqStmtNode>()->seq)
        most = std::max(most, local_bytes(c, fragment_tiles));
      return most;
    }
    case ir::StmtKind::kIfThenElse: {
      auto* i = s.as<ir::IfThenElseNode>();
      return std::max(local_bytes(i->then_case, fragment_tiles),
                      local_bytes(i->else_case, fragment_tiles));
    }
    case ir::StmtKind::kFor:
      return local_bytes(s.as<ir::ForNode>()->body, fragment_tiles);
    default:
      return 0;
  }
}

// The widest vector a load or store moves.
class VectorWidth : public ir::StmtExprVisitor {
 public:
  int64_t bytes = 0;

 protected:
  void visit_buffer_load(const ir::BufferLoadNode* n) override {
    note(n->dtype.lanes(), n->buffer);
    StmtExprVisitor::visit_buffer_load(n);
  }
  void visit_buffer_store(const ir::BufferStoreNode* n) override {
    note(n->value.dtype().lanes(), n->buffer);
    StmtExprVisitor::visit_buffer_store(n);
  }

 private:
  void note(int lanes, const ir::Buffer& b) {
    if (lanes > 1) bytes = std::max(bytes, arith::sat_mul(lanes, gpu_element_bytes(b->dtype)));
  }
};

}  // namespace

int64_t gpu_element_bytes(DataType dtype) {
  return dtype.is_bool() ? 1 : dtype.bytes();
}

int64_t gpu_array_bytes(const ir::Buffer& b) {
  auto size = ir::as_const_int(b->shape.at(0));
  if (!size)
    throw Error(fmt::format("GPU lowering: {} buffer '{}' has a size that is not constant",
                            b->scope, b->name));
  return arith::sat_mul(*size, gpu_element_bytes(b->dtype));
}

int fragment_tile_registers(const ir::Buffer& fragment) {
  if (ir::fragment_role(fragment->scope) == "accumulator") return 8;
  return fragment->scope.starts_with("mma.") || fragment->dtype.is_bfloat16() ? 4 : 8;
}

GpuKernelResources kernel_resources(const GpuKernel& kernel) {
  GpuKernelResources r;
  r.threads = arith::sat_mul(arith::sat_mul(kernel.block[0], kernel.block[1]), kernel.block[2]);
  for (const ir::Buffer& b : kernel.shared)
    r.shared_bytes =
        arith::sat_add(round_up(r.shared_bytes, kSharedArrayAlignment), gpu_array_bytes(b));
  r.local_bytes = local_bytes(kernel.body, kernel.fragment_tiles);
  VectorWidth width;
  width.visit_stmt(kernel.body);
  r.vector_bytes = width.bytes;
  return r;
}

}  // namespace tyche::lower
