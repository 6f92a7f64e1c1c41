// One baseline implementation of one workload: built once on caller-owned buffers, then run.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace tyche::bench {

class Driver {
 public:
  virtual ~Driver() = default;
  virtual void run() = 0;
  // Which of the library's implementations runs (oneDNN's "jit:avx2", "ref:any", ...).
  virtual std::string describe() const = 0;
};

struct DriverError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Each returns nullptr when the library has no implementation of the family; throws DriverError
// on bad parameters or buffer counts.
std::unique_ptr<Driver> make_onednn_driver(const std::string& family,
                                           const std::vector<int64_t>& params,
                                           const std::vector<float*>& buffers);
std::unique_ptr<Driver> make_openblas_driver(const std::string& family,
                                             const std::vector<int64_t>& params,
                                             const std::vector<float*>& buffers);

// The parameter tuple must have `count` entries and `buffers` must be `num_buffers` long.
void expect_shape(const std::string& family, const std::vector<int64_t>& params, size_t count,
                  const std::vector<float*>& buffers, size_t num_buffers);

}  // namespace tyche::bench
