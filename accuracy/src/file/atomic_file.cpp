// Whole-or-nothing file writes: PATH.tmp, then rename.
#include "file/atomic_file.hpp"

#include <filesystem>
#include <fstream>

#include "lowp/numerics/error.hpp"

namespace lowp::accuracy::detail {

void write_file_atomic(const std::string& path, const std::function<void(std::ostream&)>& write,
                       const std::function<void()>& before_rename) {
  const std::string tmp = path + ".tmp";
  const auto discard = [&] {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
  };
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    // Errors name the file asked for; the temporary beside it is an implementation detail.
    if (!f) throw Error("cannot open '" + path + "' for writing");
    try {
      write(f);
    } catch (...) {
      f.close();
      discard();
      throw;
    }
    f.flush();
    if (!f) {
      f.close();
      discard();
      throw Error("cannot write '" + path + "' (disk full?)");
    }
  }
  if (before_rename) before_rename();
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    discard();
    throw Error("cannot write '" + path + "': " + ec.message());
  }
}

void write_file_atomic(const std::string& path, std::span<const std::uint8_t> bytes,
                       const std::function<void()>& before_rename) {
  write_file_atomic(
      path,
      [&](std::ostream& f) {
        f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
      },
      before_rename);
}

void write_file_atomic(const std::string& path, const std::string& text) {
  write_file_atomic(path, std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(text.data()), text.size()));
}

}  // namespace lowp::accuracy::detail
