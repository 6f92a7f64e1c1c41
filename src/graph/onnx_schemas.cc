#include "graph/onnx_schemas.h"

#include <algorithm>
#include <iterator>

namespace tyche::graph {

namespace {

// Sorted by op, then since_version.
constexpr OpSchemaVersion kSchemas[] = {
#include "graph/onnx_schemas.inc"
};

}  // namespace

int newest_known_opset() {
  return TYCHE_ONNX_NEWEST_OPSET;
}

bool OpSchemaVersion::has_attribute(std::string_view name) const {
  for (size_t at = 0; at < attributes.size();) {
    size_t end = std::min(attributes.find(' ', at), attributes.size());
    if (attributes.substr(at, end - at) == name) return true;
    at = end + 1;
  }
  return false;
}

const OpSchemaVersion* schema_at(std::string_view op, int opset) {
  auto first =
      std::lower_bound(std::begin(kSchemas), std::end(kSchemas), op,
                       [](const OpSchemaVersion& s, std::string_view o) { return s.op < o; });
  const OpSchemaVersion* found = nullptr;
  for (auto it = first; it != std::end(kSchemas) && it->op == op; ++it)
    if (it->since_version <= opset) found = &*it;
  return found && !found->deprecated ? found : nullptr;
}

}  // namespace tyche::graph
