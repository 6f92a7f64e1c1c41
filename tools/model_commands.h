// The model commands of `tyche`: import, tune-model, run-model, export-model.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace tyche::tools {

class ModelCommands {
 public:
  explicit ModelCommands(CLI::App& app);
  // Whether the command given is one of these.
  bool parsed() const;
  int run();

 private:
  int cmd_import();
  int cmd_run_model();
  int cmd_tune_model();
  int cmd_export_model();

  CLI::App* import_ = nullptr;
  CLI::App* run_model_ = nullptr;
  CLI::App* tune_model_ = nullptr;
  CLI::App* export_model_ = nullptr;
  std::string model_;
  std::vector<std::string> input_shapes_;
  std::vector<std::string> binds_;  // --bind NAME=FILE.npy
  std::vector<std::string> inputs_;
  std::string json_file_, db_, save_outputs_, compare_, cpu_, name_, output_;
  std::string dtype_ = "float32";
  int repeat_ = 10;
  int trials_ = 0;
  int64_t seed_ = 0;
  int population_ = 0;  // 0: the search's default
  int generations_ = 0;
  int threads_ = 0;
  bool profile_ = false;
  std::string timing_ = "auto";
};

}  // namespace tyche::tools
