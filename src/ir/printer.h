// A stable, readable text form of the IR in a TVMScript-like Python syntax. Golden tests compare
// it, so any change here is a deliberate format change.
#pragma once

#include <string>

#include "ir/function.h"

namespace tyche::ir {

struct PrintOptions {
  // A For or Block whose header line gets a "# <-- here" marker (error rendering).
  const StmtNode* highlight = nullptr;
};

std::string to_string(const Expr& e);
std::string to_string(const Stmt& s);
std::string to_string(const PrimFunc& f);
std::string to_string(const PrimFunc& f, const PrintOptions& options);
// Annotation values: 5, 0.5, "text".
std::string to_string(const AnnotationValue& v);

}  // namespace tyche::ir
