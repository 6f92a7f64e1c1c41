// Immutable, reference-counted IR nodes and the typed handles that point at them.
// A handle compares by identity (same_as); structural comparison lives in structural.h.
#pragma once

#include <memory>
#include <type_traits>

#include "support/error.h"

namespace tyche::ir {

// Base of all handles: a shared pointer to an immutable node of type NodeT.
template <typename NodeT>
class NodeRef {
 public:
  using Node = NodeT;
  NodeRef() = default;
  explicit NodeRef(std::shared_ptr<const NodeT> n) : node_(std::move(n)) {}

  bool defined() const { return node_ != nullptr; }
  const NodeT* get() const { return node_.get(); }
  const NodeT* operator->() const {
    TYCHE_CHECK(node_ != nullptr, "dereferencing an undefined IR handle");
    return node_.get();
  }
  const NodeT& operator*() const { return *operator->(); }
  template <typename Other>
  bool same_as(const NodeRef<Other>& other) const {
    return static_cast<const void*>(get()) == static_cast<const void*>(other.get());
  }
  const std::shared_ptr<const NodeT>& ptr() const { return node_; }

 protected:
  std::shared_ptr<const NodeT> node_;
};

// Identity hash/equal for handles used as map keys (Var, Buffer, ...).
struct RefHash {
  template <typename R>
  size_t operator()(const R& r) const {
    return std::hash<const void*>()(r.get());
  }
};
struct RefEqual {
  template <typename R>
  bool operator()(const R& a, const R& b) const {
    return a.same_as(b);
  }
};

}  // namespace tyche::ir
