#include "tune/space/target.h"

#include <fmt/format.h>

#include <sstream>
#include <thread>
#include <vector>

#include "support/error.h"

namespace tyche::tune {

Target Target::host() {
  Target t;
  t.num_cores = std::max(1u, std::thread::hardware_concurrency());
  return t;
}

Target Target::parse(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  if (words.empty()) throw InputError("target: empty description (expected 'llvm' or 'cuda')");
  Target t;
  if (words[0] == "llvm") {
    t = host();
  } else if (words[0] == "cuda") {
    t.kind = "cuda";
    t.num_cores = 1;
    t.max_shared_memory_per_block = 49152;  // the default dynamic limit without opt-in
  } else {
    throw InputError(fmt::format("target: unknown kind '{}' (expected 'llvm' or 'cuda')", words[0]));
  }
  for (size_t i = 1; i < words.size(); i += 2) {
    const std::string& key = words[i];
    if (i + 1 >= words.size()) throw InputError(fmt::format("target: option '{}' has no value", key));
    bool known = t.is_gpu() ? key == "-max-threads-per-block" || key == "-max-shared-memory-per-block"
                            : key == "-num-cores" || key == "-mcpu";
    if (!known) throw InputError(fmt::format("target: unknown option '{}' for {}", key, t.kind));
    if (key == "-mcpu") {
      t.cpu = words[i + 1];
      continue;
    }
    int64_t value = 0;
    try {
      size_t used = 0;
      value = std::stoll(words[i + 1], &used);
      if (used != words[i + 1].size() || value <= 0) throw std::invalid_argument("");
    } catch (const std::exception&) {
      throw InputError(fmt::format("target: option '{}' needs a positive integer, got '{}'", key, words[i + 1]));
    }
    if (key == "-num-cores") {
      if (value > 4096) throw InputError(fmt::format("target: -num-cores {} is more than 4096", value));
      t.num_cores = static_cast<int>(value);
    } else if (key == "-max-threads-per-block") {
      t.max_threads_per_block = value;
    } else {
      t.max_shared_memory_per_block = value;
    }
  }
  return t;
}

std::string Target::str() const {
  if (!is_gpu()) return fmt::format("llvm -num-cores {}{}", num_cores, cpu.empty() ? "" : " -mcpu " + cpu);
  return fmt::format("cuda -max-threads-per-block {} -max-shared-memory-per-block {}", max_threads_per_block,
                     max_shared_memory_per_block);
}

}  // namespace tyche::tune
