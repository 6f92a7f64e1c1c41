// Overflow-checked tensor sizes. Every place that multiplies a shape (the ONNX importer, NDArray,
// the interpreter, .npy reading, te placeholders, the memory planner, export) asks here, so a
// shape whose bytes wrap modulo 2^64 or exceed the tensor limit is refused before anything is
// allocated, with the tensor's name, shape and size in one line.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "support/dtype.h"

namespace tyche {

// The product of `shape`; nullopt when a dimension is negative or the product exceeds int64.
std::optional<int64_t> checked_numel(std::span<const int64_t> shape);
// a * b for non-negative sizes; nullopt on overflow.
std::optional<uint64_t> checked_mul(uint64_t a, uint64_t b);
// a + b; nullopt on overflow.
std::optional<uint64_t> checked_add(uint64_t a, uint64_t b);

// Bytes one element of `dtype` takes in memory (bool: one byte; vector types: every lane).
uint64_t item_bytes(DataType dtype);

struct TensorSize {
  int64_t elements = 0;
  uint64_t bytes = 0;
};

// The elements and bytes of a tensor, checked: a negative dimension, an element count or byte
// size past 64 bits, or bytes over tensor_byte_limit() throw InputError naming `what` (the
// tensor: "tensor 'W'", "input 'x' of model.onnx").
TensorSize tensor_size(std::string_view what, std::span<const int64_t> shape, DataType dtype);

// The most bytes one tensor may take: TYCHE_MAX_TENSOR_BYTES (bytes, or with a K/M/G/T suffix)
// when set, else the machine's physical memory. Read once.
uint64_t tensor_byte_limit();
// Overrides the limit for this process (tests; 0 restores the default).
void set_tensor_byte_limit(uint64_t bytes);

// "[1024, 1024, 4]".
std::string shape_string(std::span<const int64_t> shape);
// "16.0 GiB", "512 bytes".
std::string bytes_string(uint64_t bytes);

// The most threads a pool may run: 4 x the CPUs this process may use (at least 4). A larger
// request is a mistake (2147483647 would spawn threads until the kernel refuses).
int max_threads();

}  // namespace tyche
