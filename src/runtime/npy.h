// NumPy's .npy files (format versions 1 to 3, C order) to and from NDArrays: the way a model's
// inputs and outputs cross the command line. Types: float16/32/64, int8/16/32/64, uint8/16/32/64,
// bool.
#pragma once

#include <string>

#include "runtime/ndarray.h"

namespace tyche::runtime {

// Throws tyche::InputError (one line, naming the file) when it cannot be read or is not an .npy
// file of a supported type.
NDArray load_npy(const std::string& path);
// Throws tyche::Error when the file cannot be written.
void save_npy(const std::string& path, const NDArray& array);

}  // namespace tyche::runtime
