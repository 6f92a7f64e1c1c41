// PrimFunc: a tensor program with its parameter buffers. Its body is the realize of a "root"
// block that owns the intermediate buffers (as in TensorIR), so schedules always start at a block.
#pragma once

#include <string>
#include <vector>

#include "ir/stmt.h"

namespace tyche::ir {

struct PrimFuncNode {
  std::string name;
  std::vector<Buffer> params;  // inputs first, then outputs
  int num_outputs = 1;         // the last num_outputs params are written
  Stmt body;
};

class PrimFunc : public NodeRef<PrimFuncNode> {
 public:
  PrimFunc() = default;
  explicit PrimFunc(std::shared_ptr<const PrimFuncNode> n) : NodeRef(std::move(n)) {}
  PrimFunc(std::string name, std::vector<Buffer> params, int num_outputs, Stmt body);
  PrimFunc with_body(Stmt body) const;
  std::vector<Buffer> inputs() const;
  std::vector<Buffer> outputs() const;
};

}  // namespace tyche::ir
