// External data of an ONNX tensor, read as the ONNX spec allows and no further: a model is
// untrusted input, and its `location` must not reach any file but the model's own data. The
// location is relative, has no `..` component, resolves (symlinks followed) to a regular file
// inside the model's folder, and offset + length lie within that file; all of it is checked
// before a byte is read or a buffer allocated. Each refusal is one InputError line naming the
// tensor and the location.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tyche::graph {

// The bytes of external data described by `entries` (the TensorProto's external_data key-value
// pairs: location, offset, length, checksum), read from below `dir` (the model's folder; empty
// for a model given as bytes, which then may not name external data). `bytes` is what the
// tensor's shape and type need, already checked against the tensor limit. `what` names the
// tensor in messages ("model.onnx: tensor 'W'").
std::string read_external_data(const std::vector<std::pair<std::string, std::string>>& entries,
                               const std::string& dir, uint64_t bytes, const std::string& what);

}  // namespace tyche::graph
