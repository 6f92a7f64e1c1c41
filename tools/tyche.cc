// The `tyche` command-line program. Every user error prints one line on stderr and exits 2.
// The commands live in classes of related commands (kernel_commands.h, tune_commands.h,
// model_commands.h), each registering its subcommands and options in its constructor.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <exception>
#include <string>

#include "flag_checks.h"
#include "kernel_commands.h"
#include "model_commands.h"
#include "support/error.h"
#include "tune_commands.h"

namespace {

constexpr int kExitUsage = 2;

}  // namespace

int main(int argc, char** argv) {
  using namespace tyche;
  CLI::App app{"Tyche: a tensor-program auto-scheduler"};
  app.require_subcommand(1);
  tools::KernelCommands kernel_commands(app);
  tools::TuneCommands tune_commands(app);
  tools::ModelCommands model_commands(app);

  if (argc > 1 && argv[1][0] != '-') {
    std::string cmd = argv[1];
    auto subs = app.get_subcommands([](CLI::App*) { return true; });
    if (std::none_of(subs.begin(), subs.end(), [&](CLI::App* s) { return s->get_name() == cmd; })) {
      fmt::print(stderr,
                 "tyche: error: unknown command '{}' (commands: workloads, show, check, run, "
                 "space, cpu, features, sample-measure, model, tune, export, import, tune-model, "
                 "run-model, export-model)\n",
                 cmd);
      return kExitUsage;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string msg = e.what();
    if (msg.empty()) msg = "invalid command line";
    fmt::print(stderr, "tyche: error: {} (see tyche --help)\n", msg);
    return kExitUsage;
  } catch (
      const tyche::Error& e) {  // a flag's value, refused by flag_checks.h: the message says it all
    fmt::print(stderr, "tyche: error: {}\n", e.what());
    return kExitUsage;
  }

  try {
    // Before the thread pool starts: it sizes itself by TYCHE_NUM_THREADS.
    tools::check_thread_environment();
    if (kernel_commands.parsed()) return kernel_commands.run();
    if (tune_commands.parsed()) return tune_commands.run();
    if (model_commands.parsed()) return model_commands.run();
  } catch (const tyche::Error& e) {
    fmt::print(stderr, "tyche: error: {}\n", e.what());
    return kExitUsage;
  } catch (const std::exception& e) {
    fmt::print(stderr, "tyche: error: {}\n", e.what());
    return kExitUsage;
  }
  return kExitUsage;
}
