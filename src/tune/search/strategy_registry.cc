// The explicit table of search strategies. Adding one: write it in a file of its own, ending with
// its factory (`SearchStrategyPtr make_<id>(const EvolutionaryOptions&)`), and add one line below.
#include <fmt/format.h>

#include "support/error.h"
#include "tune/search/search_strategy.h"

// X(id, "name"): the factory make_<id> and the name `--strategy` takes.
#define TYCHE_SEARCH_STRATEGIES(X) \
  X(evolutionary, "evolutionary")  \
  X(replay_trace, "replay-trace")  \
  X(local_search, "local-search")

namespace tyche::tune {

#define TYCHE_DECLARE_FACTORY(id, name) \
  SearchStrategyPtr make_##id(const EvolutionaryOptions& options);
TYCHE_SEARCH_STRATEGIES(TYCHE_DECLARE_FACTORY)
#undef TYCHE_DECLARE_FACTORY

namespace {

struct StrategyEntry {
  const char* name;
  SearchStrategyPtr (*make)(const EvolutionaryOptions&);
};

const std::vector<StrategyEntry>& strategies() {
#define TYCHE_STRATEGY_ENTRY(id, name) StrategyEntry{name, &make_##id},
  static const std::vector<StrategyEntry> table = {TYCHE_SEARCH_STRATEGIES(TYCHE_STRATEGY_ENTRY)};
#undef TYCHE_STRATEGY_ENTRY
  return table;
}

}  // namespace

std::vector<std::string> search_strategy_names() {
  std::vector<std::string> names;
  for (const StrategyEntry& e : strategies()) names.push_back(e.name);
  return names;
}

SearchStrategyPtr make_search_strategy(const std::string& name,
                                       const EvolutionaryOptions& options) {
  for (const StrategyEntry& e : strategies())
    if (name == e.name) return e.make(options);
  throw Error(fmt::format("unknown search strategy '{}' (expected {})", name,
                          fmt::join(search_strategy_names(), " or ")));
}

}  // namespace tyche::tune
