// For harnesses whose reader takes a path: a scratch folder of this process, and the input
// split at its first NUL byte into the files a reader finds side by side.
#pragma once
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace lowp::fuzz {

// /tmp/lowp_fuzz_<tag>_<pid>/, created on first use and removed when the process exits.
inline const std::filesystem::path& scratch_dir(const char* tag) {
  struct Dir {
    std::filesystem::path path;
    ~Dir() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  };
  static const Dir d{[&] {
    auto p = std::filesystem::temp_directory_path() / ("lowp_fuzz_" + std::string(tag) + "_" + std::to_string(::getpid()));
    std::filesystem::create_directories(p);
    return p;
  }()};
  return d.path;
}

inline void write_file(const std::filesystem::path& p, std::string_view bytes) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// "first\0second": {"first", "second", true}; without a NUL: {input, "", false}.
struct Split {
  std::string_view first, second;
  bool has_second;
};
inline Split split_at_nul(std::string_view in) {
  const auto nul = in.find('\0');
  if (nul == std::string_view::npos) return {in, {}, false};
  return {in.substr(0, nul), in.substr(nul + 1), true};
}

}  // namespace lowp::fuzz
