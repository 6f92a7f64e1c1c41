#include <fmt/format.h>
#include <llvm/Object/Archive.h>
#include <llvm/Object/ArchiveWriter.h>
#include <llvm/Support/MemoryBuffer.h>

#include <algorithm>
#include <filesystem>

#include "codegen/export/export.h"
#include "codegen/llvm/llvm_archive.h"
#include "support/error.h"

namespace tyche::codegen {

namespace fs = std::filesystem;

std::string archive_with(const fs::path& path,
                         const std::vector<std::pair<std::string, std::string>>& members,
                         const std::vector<std::string>& symbols) {
  std::vector<std::pair<std::string, std::string>> all;
  std::error_code ec;
  if (fs::exists(path, ec)) {
    auto buffer = llvm::MemoryBuffer::getFile(path.string());
    if (!buffer)
      throw Error(
          fmt::format("export: cannot read '{}': {}", path.string(), buffer.getError().message()));
    std::string refused = fmt::format(
        "export: '{}' exists and is not a static library, or is damaged; it was left as it is",
        path.string());
    auto archive = llvm::object::Archive::create((*buffer)->getMemBufferRef());
    if (!archive) {
      llvm::consumeError(archive.takeError());
      throw Error(refused);
    }
    llvm::Error err = llvm::Error::success();
    bool damaged = false;
    for (const llvm::object::Archive::Child& child : (*archive)->children(err)) {
      auto name = child.getName();
      auto data = child.getBuffer();
      if (!name || !data) {
        if (!name) llvm::consumeError(name.takeError());
        if (!data) llvm::consumeError(data.takeError());
        damaged = true;
        break;
      }
      // LLVM checks a member's size against the file only when it steps to the next one.
      if (data->data() + data->size() > (*buffer)->getBufferEnd()) {
        damaged = true;
        break;
      }
      all.emplace_back(name->str(), data->str());
    }
    if (err) {
      llvm::consumeError(std::move(err));
      damaged = true;
    }
    if (damaged) throw Error(refused);
    for (const llvm::object::Archive::Symbol& symbol : (*archive)->symbols()) {
      if (std::find(symbols.begin(), symbols.end(), symbol.getName().str()) == symbols.end())
        continue;
      auto member = symbol.getMember();
      if (!member) {
        llvm::consumeError(member.takeError());
        throw Error(refused);
      }
      auto member_name = member->getName();
      if (!member_name) {
        llvm::consumeError(member_name.takeError());
        throw Error(refused);
      }
      if (member_name->str() != members.front().first)
        throw Error(
            fmt::format("export: '{}' is already defined by {} in '{}': choose another --name",
                        symbol.getName().str(), member_name->str(), path.string()));
    }
  }
  // As `ar r` does: a member of the same name is replaced where it stands, others are appended.
  for (const auto& m : members) {
    auto same =
        std::find_if(all.begin(), all.end(), [&](const auto& a) { return a.first == m.first; });
    if (same != all.end())
      same->second = m.second;
    else
      all.push_back(m);
  }
  return static_library(all);
}

std::string static_library(const std::vector<std::pair<std::string, std::string>>& all) {
  std::vector<llvm::NewArchiveMember> news;
  for (const auto& [name, data] : all) {
    llvm::NewArchiveMember m(llvm::MemoryBufferRef(data, name));
    m.MemberName = name;  // views `all`, alive until the archive is written
    news.push_back(std::move(m));
  }
  auto written = llvm::writeArchiveToBuffer(news, llvm::SymtabWritingMode::NormalSymtab,
                                            llvm::object::Archive::K_GNU,
                                            /*Deterministic=*/true, /*Thin=*/false);
  if (!written)
    throw Error(
        fmt::format("export: cannot make the library: {}", llvm::toString(written.takeError())));
  return (*written)->getBuffer().str();
}

}  // namespace tyche::codegen
