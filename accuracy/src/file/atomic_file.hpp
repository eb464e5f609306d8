// Writing a file whole or not at all (private): every file lowp writes goes to PATH.tmp beside
// the target and is renamed over it, so a reader never sees half a file, and a failed write
// leaves the old file (if any) in place and no temporary behind.
#pragma once
#include <cstdint>
#include <functional>
#include <ostream>
#include <span>
#include <string>

namespace lowp::accuracy::detail {

// `write` streams the contents into PATH.tmp; if it throws, or the stream fails, the temporary
// is removed and the error (lowp::Error naming `path`, not the temporary) propagates.
// `before_rename` runs between writing PATH.tmp and renaming it (tests pause there to kill).
void write_file_atomic(const std::string& path, const std::function<void(std::ostream&)>& write,
                       const std::function<void()>& before_rename = {});
void write_file_atomic(const std::string& path, std::span<const std::uint8_t> bytes,
                       const std::function<void()>& before_rename = {});
void write_file_atomic(const std::string& path, const std::string& text);

}  // namespace lowp::accuracy::detail
