// A module: named kernels with the packed calling convention (one data pointer per parameter),
// looked up by name as in TVM's runtime.Module.get_function. Whatever owns a kernel's code (a JIT,
// a loaded library) is kept alive by the module.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tyche::runtime {

using PackedFunc = void (*)(void* const* args);

class Module {
 public:
  // Adds `fn` under `name`; `owner` keeps its code alive. Replacing a name is an error.
  void add(const std::string& name, PackedFunc fn, std::shared_ptr<const void> owner = nullptr);
  bool has(const std::string& name) const { return funcs_.count(name) > 0; }
  // Throws tyche::Error naming the module's functions when `name` is not one of them.
  PackedFunc get_function(const std::string& name) const;
  std::vector<std::string> function_names() const;

 private:
  std::map<std::string, PackedFunc> funcs_;
  std::vector<std::shared_ptr<const void>> owners_;
};

}  // namespace tyche::runtime
