#include "ir/layout_free.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "ir/annotation_keys.h"
#include "ir/op.h"
#include "support/error.h"

namespace tyche::ir {

std::vector<size_t> layout_free_params(const PrimFunc& func) {
  const auto* realize = func->body.as<BlockRealizeNode>();
  if (!realize) return {};  // no root block (loops already): nothing named
  const BlockNode* root = realize->block.get();
  auto it = root->annotations.find(ann::kLayoutFreeBuffers);
  if (it == root->annotations.end()) return {};
  const auto* text = std::get_if<std::string>(&it->second);
  TYCHE_CHECK(text != nullptr, "layout_free_buffers holds a list of parameter indices");
  std::vector<size_t> out;
  size_t pos = 0;
  while (pos < text->size()) {
    size_t end = text->find(',', pos);
    if (end == std::string::npos) end = text->size();
    size_t index = std::stoul(text->substr(pos, end - pos));
    TYCHE_CHECK(index < func->params.size(),
                "layout_free_buffers names a parameter the function does not have");
    out.push_back(index);
    pos = end + 1;
  }
  std::sort(out.begin(), out.end());
  return out;
}

PrimFunc with_layout_free_params(const PrimFunc& func, const std::vector<size_t>& params) {
  const auto* realize = func->body.as<BlockRealizeNode>();
  TYCHE_CHECK(realize != nullptr, "a PrimFunc's body is the realize of its root block");
  const BlockNode* root = realize->block.get();
  Annotations annotations = root->annotations;
  annotations.erase(ann::kLayoutFreeBuffers);
  if (!params.empty()) {
    std::vector<size_t> sorted = params;
    std::sort(sorted.begin(), sorted.end());
    for (size_t p : sorted)
      TYCHE_CHECK(p < func->params.size() - static_cast<size_t>(func->num_outputs),
                  "only inputs can be layout-free");
    annotations[ann::kLayoutFreeBuffers] = fmt::format("{}", fmt::join(sorted, ","));
  }
  Block block = make_block(root->name, root->iter_vars, root->reads, root->writes, root->init,
                           root->body, root->alloc_buffers, std::move(annotations));
  return func.with_body(block_realize(realize->iter_values, realize->predicate, std::move(block)));
}

}  // namespace tyche::ir
