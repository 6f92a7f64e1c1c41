// Internal to tune/cost_model: the envelope of a saved model file, and the XGBoost model's loader.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "tune/cost_model/cost_model.h"

namespace tyche::tune::detail {

inline constexpr int kModelFileVersion = 1;

// {"format": "tyche.cost_model", "version": 1, "kind": ..., "feature_layout": {...}} plus `body`.
nlohmann::json model_envelope(const std::string& kind);
void write_model_file(const std::string& path, const nlohmann::json& model);
// Throws tyche::Error when the feature layout differs from this build's.
void check_feature_layout(const nlohmann::json& model, const std::string& path);

std::unique_ptr<CostModel> load_xgboost_model(const nlohmann::json& model, const std::string& path,
                                              const XGBoostOptions& options);

}  // namespace tyche::tune::detail
