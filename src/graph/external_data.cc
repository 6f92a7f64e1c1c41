#include "graph/external_data.h"

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "support/error.h"
#include "support/tensor_size.h"

namespace tyche::graph {

namespace {

namespace fs = std::filesystem;

// A decimal number of at most 19 digits (int64): "abc", "-1" and a 23-digit length are refused.
uint64_t parse_number(const std::string& key, const std::string& text, const std::string& what,
                      const std::string& location) {
  bool digits = !text.empty() && text.size() <= 19 &&
                text.find_first_not_of("0123456789") == std::string::npos;
  if (!digits)
    throw_input_error("{}: external data '{}' has {}='{}', which is not a byte count", what,
                      location, key, text);
  return std::stoull(text);
}

// `child` lies in `base` (both canonical): every component of base starts child.
bool inside(const fs::path& base, const fs::path& child) {
  auto b = base.begin(), c = child.begin();
  for (; b != base.end(); ++b, ++c)
    if (c == child.end() || *b != *c) return false;
  return c != child.end();
}

// Closes a file descriptor on every path out.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::string read_external_data(const std::vector<std::pair<std::string, std::string>>& entries,
                               const std::string& dir, uint64_t bytes, const std::string& what) {
  std::string location, offset_text, length_text;
  bool has_location = false;
  for (const auto& [key, value] : entries) {
    if (key == "location")
      location = value, has_location = true;
    else if (key == "offset")
      offset_text = value;
    else if (key == "length")
      length_text = value;
  }
  if (!has_location || location.empty())
    throw_input_error("{}: external data without a location", what);
  if (location.find('\0') != std::string::npos)
    throw_input_error("{}: external data location has a NUL byte", what);
  uint64_t offset = offset_text.empty() ? 0 : parse_number("offset", offset_text, what, location);
  uint64_t length =
      length_text.empty() ? bytes : parse_number("length", length_text, what, location);
  if (dir.empty())
    throw_input_error(
        "{}: external data '{}' but the model was given as bytes: pass the folder it was saved in "
        "(base_dir)",
        what, location);
  fs::path rel(location);
  if (rel.is_absolute() || rel.has_root_name() || rel.has_root_directory())
    throw_input_error(
        "{}: external data location '{}' is absolute: ONNX allows only a path relative to the "
        "model's folder",
        what, location);
  for (const fs::path& part : rel)
    if (part == "..")
      throw_input_error("{}: external data location '{}' leaves the model's folder ('..')", what,
                        location);
  if (length != bytes)
    throw_input_error("{}: external data '{}' has length {}, the tensor's shape and type need {}",
                      what, location, length, bytes);
  std::error_code ec;
  fs::path base = fs::canonical(dir, ec);
  if (ec)
    throw_input_error("{}: cannot resolve the model's folder '{}' ({})", what, dir, ec.message());
  fs::path real = fs::canonical(base / rel, ec);
  if (ec)
    throw_input_error("{}: cannot open external data '{}' ({})", what, location, ec.message());
  if (!inside(base, real))
    throw_input_error("{}: external data '{}' resolves to '{}', outside the model's folder", what,
                      location, real.string());
  // Opened without blocking (a FIFO swapped in after the check must not hang) and checked again
  // on the descriptor, so what is read is the regular file that was checked.
  Fd f{::open(real.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW)};
  if (f.fd < 0)
    throw_input_error("{}: cannot open external data '{}' ({})", what, location,
                      std::strerror(errno));
  struct stat st {};
  if (::fstat(f.fd, &st) != 0 || !S_ISREG(st.st_mode))
    throw_input_error("{}: external data '{}' is not a regular file", what, location);
  uint64_t size = static_cast<uint64_t>(st.st_size);
  std::optional<uint64_t> end = checked_add(offset, length);
  if (!end || *end > size)
    throw_input_error("{}: external data '{}' is {} bytes; offset {} + length {} lies past its end",
                      what, location, size, offset, length);
  std::string data(length, '\0');
  uint64_t done = 0;
  while (done < length) {
    ssize_t n = ::pread(f.fd, data.data() + done, length - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      throw_input_error("{}: cannot read external data '{}' ({})", what, location,
                        n < 0 ? std::strerror(errno) : "too short");
    done += static_cast<uint64_t>(n);
  }
  return data;
}

}  // namespace tyche::graph
