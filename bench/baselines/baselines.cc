// The C interface of baselines.h: dispatch to the drivers, native timing, errors as text.
#include "bench/baselines/baselines.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "bench/baselines/driver.h"

namespace tyche::bench {

void expect_shape(const std::string& family, const std::vector<int64_t>& params, size_t count,
                  const std::vector<float*>& buffers, size_t num_buffers) {
  if (params.size() != count)
    throw DriverError(family + " takes " + std::to_string(count) + " parameters, got " +
                      std::to_string(params.size()));
  if (buffers.size() != num_buffers)
    throw DriverError(family + " takes " + std::to_string(num_buffers) +
                      " buffers (inputs, then the output), got " + std::to_string(buffers.size()));
  for (int64_t v : params)
    if (v < 0) throw DriverError(family + ": a negative parameter");
  for (float* b : buffers)
    if (!b) throw DriverError(family + ": a null buffer");
}

namespace {

std::unique_ptr<Driver> make_driver(const std::string& system, const std::string& family,
                                    const std::vector<int64_t>& params,
                                    const std::vector<float*>& buffers) {
  if (system == "onednn") return make_onednn_driver(family, params, buffers);
  if (system == "openblas") return make_openblas_driver(family, params, buffers);
  throw DriverError("unknown baseline system '" + system + "' (onednn, openblas)");
}

void write_text(char* out, int size, const std::string& text) {
  if (out && size > 0) std::snprintf(out, static_cast<size_t>(size), "%s", text.c_str());
}

}  // namespace
}  // namespace tyche::bench

using tyche::bench::Driver;

extern "C" {

int tyche_baseline_supports(const char* system, const char* family) {
  // Asking with no buffers: a driver that exists refuses the buffer count, one that does not is
  // null.
  try {
    return tyche::bench::make_driver(system, family, {}, {}) != nullptr;
  } catch (const tyche::bench::DriverError& e) {
    return std::string(e.what()).rfind("unknown baseline system", 0) == 0 ? 0 : 1;
  }
}

void* tyche_baseline_create(const char* system, const char* family, const int64_t* params,
                            int num_params, float* const* buffers, int num_buffers, char* error,
                            int error_size) {
  try {
    std::vector<int64_t> p(params, params + std::max(num_params, 0));
    std::vector<float*> b(buffers, buffers + std::max(num_buffers, 0));
    std::unique_ptr<Driver> d = tyche::bench::make_driver(system, family, p, b);
    if (!d)
      throw tyche::bench::DriverError(std::string(system) + " has no implementation of " + family);
    return d.release();
  } catch (const std::exception& e) {
    tyche::bench::write_text(error, error_size, e.what());
    return nullptr;
  }
}

double tyche_baseline_window(void* baseline, int64_t calls, char* error, int error_size) {
  try {
    auto* d = static_cast<Driver*>(baseline);
    auto t0 = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < calls; ++i) d->run();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() /
           static_cast<double>(std::max<int64_t>(calls, 1));
  } catch (const std::exception& e) {
    tyche::bench::write_text(error, error_size, e.what());
    return -1.0;
  }
}

void tyche_baseline_describe(void* baseline, char* text, int text_size) {
  tyche::bench::write_text(text, text_size, static_cast<Driver*>(baseline)->describe());
}

void tyche_baseline_destroy(void* baseline) {
  delete static_cast<Driver*>(baseline);
}
}
