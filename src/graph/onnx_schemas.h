// ONNX's default-domain operator versions (onnx_schemas.inc, generated from the onnx package by
// scripts/gen_onnx_schemas.py), and which opsets a model may be stamped with. A node's schema is
// resolved per operator as onnxruntime resolves it: the op's newest since_version not above the
// model's opset. So a model stamped opset 28 whose ops last changed in opset 13 is read as it is.
#pragma once

#include <string>
#include <string_view>

namespace tyche::graph {

// Models older than this are upgraded to it on import by ONNX's own version converter.
inline constexpr int kUpgradeToOpset = 13;
// The converters read every schema version in force at opsets kUpgradeToOpset to this one; a
// newer version is read as this opset's when it sets nothing this one lacks (onnx_import.cc).
inline constexpr int kConvertersOpset = 21;

// The newest opset the table knows (the onnx package's when it was generated).
int newest_known_opset();

struct OpSchemaVersion {
  std::string_view op;
  int since_version;
  int max_inputs;               // -1: variadic
  std::string_view attributes;  // its attribute names, space separated
  bool deprecated;

  bool has_attribute(std::string_view name) const;
};

// The version of `op` in force at `opset`, or nullptr where the op does not exist at that opset
// (not yet, or never, in the default domain) or was deprecated by it.
const OpSchemaVersion* schema_at(std::string_view op, int opset);

}  // namespace tyche::graph
