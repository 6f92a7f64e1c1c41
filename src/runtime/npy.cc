#include "runtime/npy.h"

#include <fmt/format.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "support/error.h"
#include "support/tensor_size.h"

namespace tyche::runtime {

namespace {

struct Descr {
  const char* text;
  DataType dtype;
};

const Descr kDescrs[] = {{"<f4", kFloat32},
                         {"<f8", kFloat64},
                         {"<f2", DataType::Float(16)},
                         {"<i8", kInt64},
                         {"<i4", kInt32},
                         {"<i2", DataType::Int(16)},
                         {"|i1", DataType::Int(8)},
                         {"<u8", DataType::UInt(64)},
                         {"<u4", DataType::UInt(32)},
                         {"<u2", DataType::UInt(16)},
                         {"|u1", DataType::UInt(8)},
                         {"|b1", kBool}};

}  // namespace

NDArray load_npy(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec))
    throw_input_error("'{}' is not a regular file", path);  // /dev/zero, a FIFO: never read forever
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_input_error("cannot open '{}'", path);
  char magic[8];
  if (!in.read(magic, 8) || std::memcmp(magic, "\x93NUMPY", 6) != 0)
    throw_input_error("'{}' is not a .npy file", path);
  uint32_t header_len = 0;
  if (magic[6] == 1) {
    unsigned char b[2];
    if (!in.read(reinterpret_cast<char*>(b), 2)) throw_input_error("'{}' is truncated", path);
    header_len = b[0] | (b[1] << 8);
  } else if (magic[6] == 2 || magic[6] == 3) {
    unsigned char b[4];
    if (!in.read(reinterpret_cast<char*>(b), 4)) throw_input_error("'{}' is truncated", path);
    header_len = b[0] | (b[1] << 8) | (b[2] << 16) | (static_cast<uint32_t>(b[3]) << 24);
  } else {
    throw_input_error("'{}': unsupported .npy version {}", path, static_cast<int>(magic[6]));
  }
  if (header_len > (1u << 20)) throw_input_error("'{}': header too long", path);
  std::string header(header_len, '\0');
  if (!in.read(header.data(), header_len)) throw_input_error("'{}' is truncated", path);
  std::smatch m;
  if (!std::regex_search(header, m, std::regex("'descr':\\s*'([^']*)'")))
    throw_input_error("'{}': no dtype in the header", path);
  std::string descr = m[1];
  const Descr* found = nullptr;
  for (const Descr& d : kDescrs)
    if (descr == d.text) found = &d;
  if (!found)
    throw_input_error(
        "'{}': unsupported dtype '{}' (float16/32/64, int8/16/32/64, uint8/16/32/64, bool, "
        "little-endian)",
        path, descr);
  if (std::regex_search(header, std::regex("'fortran_order':\\s*True")))
    throw_input_error("'{}' is in Fortran order: save it C-ordered (np.ascontiguousarray)", path);
  if (!std::regex_search(header, m, std::regex("'shape':\\s*\\(([^)]*)\\)")))
    throw_input_error("'{}': no shape in the header", path);
  std::vector<int64_t> shape;
  std::stringstream dims(m[1].str());
  std::string part;
  while (std::getline(dims, part, ',')) {
    part.erase(0, part.find_first_not_of(" \t"));
    part.erase(part.find_last_not_of(" \tL") + 1);
    if (part.empty()) continue;
    char* end = nullptr;
    long long v = std::strtoll(part.c_str(), &end, 10);
    if (*end != '\0' || v < 0) throw_input_error("'{}': bad shape '{}'", path, m[1].str());
    shape.push_back(v);
  }
  // The size is checked, and the file seen to hold it, before the array is allocated: a header
  // of shape (4, 2**62) wraps to a few bytes unchecked.
  TensorSize size = tensor_size(fmt::format("'{}'", path), shape, found->dtype);
  std::streampos start = in.tellg();
  in.seekg(0, std::ios::end);
  std::streampos end = in.tellg();
  if (start < 0 || end < start || static_cast<uint64_t>(end - start) < size.bytes)
    throw_input_error("'{}' is truncated: its shape {} needs {} bytes of data", path,
                      shape_string(shape), size.bytes);
  in.seekg(start);
  NDArray a(shape, found->dtype);
  if (found->dtype.is_bool()) {
    std::string data(size.bytes, '\0');
    if (!in.read(data.data(), static_cast<std::streamsize>(size.bytes)))
      throw_input_error("'{}' is truncated", path);
    for (int64_t i = 0; i < a.numel(); ++i) a.set_flat_int(i, data[static_cast<size_t>(i)] != 0);
  } else if (size.bytes &&
             !in.read(static_cast<char*>(a.data()), static_cast<std::streamsize>(size.bytes))) {
    throw_input_error("'{}' is truncated", path);
  }
  return a;
}

void save_npy(const std::string& path, const NDArray& array) {
  const Descr* found = nullptr;
  for (const Descr& d : kDescrs)
    if (array.dtype() == d.dtype) found = &d;
  if (!found) throw_error("cannot save a {} array as .npy", array.dtype().str());
  std::string shape;
  for (int64_t d : array.shape()) shape += fmt::format("{}, ", d);
  if (array.ndim() > 1)
    shape.resize(shape.size() - 2);
  else if (array.ndim() == 1)
    shape.resize(shape.size() - 1);
  std::string header =
      fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}), }}", found->text, shape);
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  out.write("\x93NUMPY\x01\x00", 8);
  unsigned char len[2] = {static_cast<unsigned char>(header.size() & 0xFF),
                          static_cast<unsigned char>(header.size() >> 8)};
  out.write(reinterpret_cast<const char*>(len), 2);
  out << header;
  if (array.dtype().is_bool()) {
    for (int64_t i = 0; i < array.numel(); ++i)
      out.put(static_cast<char>(array.get_flat_int(i) != 0));
  } else {
    out.write(static_cast<const char*>(array.data()), static_cast<std::streamsize>(array.nbytes()));
  }
  if (!out) throw_error("cannot write '{}'", path);
}

}  // namespace tyche::runtime
