// Private to src/codegen/: static libraries (ar archives) read and written with LLVM's object
// library, for tyche export (export.cc; llvm_unavailable.cc refuses them without LLVM).
#pragma once

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace tyche::codegen {

// The archive at `path` with `members` added; its other members (kernels exported earlier) are
// kept. `symbols`, which the first member defines, must not be defined by another member.
std::string archive_with(const std::filesystem::path& path,
                         const std::vector<std::pair<std::string, std::string>>& members,
                         const std::vector<std::string>& symbols);

}  // namespace tyche::codegen
