#include "file/mapped_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <sstream>

namespace lowp::accuracy::detail {

namespace {
std::string errno_text() { return std::strerror(errno); }
}  // namespace

MappedFile::MappedFile(const std::string& path) : path_(path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(path + ": cannot open: " + errno_text());
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const std::string e = errno_text();
    ::close(fd);
    throw Error(path + ": cannot stat: " + e);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(path + ": not a regular file");
  }
  size_ = static_cast<std::size_t>(st.st_size);
  if (size_ > 0) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      const std::string e = errno_text();
      ::close(fd);
      throw Error(path + ": cannot map " + std::to_string(size_) + " bytes: " + e);
    }
    data_ = static_cast<const std::uint8_t*>(p);
  }
  ::close(fd);  // the mapping stays valid without the descriptor
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<std::uint8_t*>(data_), size_);
}

std::string file_label(const std::string& path) {
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  const auto slash = p.find_last_of('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

std::string show_string(std::string_view s) {
  std::string out = "'";
  std::size_t shown = 0;
  for (char c : s) {
    if (shown++ == 64) {
      out += "...";
      break;
    }
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f && c != '\\') {
      out += c;
    } else {
      static const char hex[] = "0123456789abcdef";
      out += "\\x";
      out += hex[u >> 4];
      out += hex[u & 15];
    }
  }
  return out + "'";
}

std::string read_text_file(const std::string& path) {
  MappedFile f(path);
  const Bytes b = f.bytes();
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

std::uint64_t checked_mul(std::uint64_t a, std::uint64_t b, const std::string& what) {
  std::uint64_t r;
  if (__builtin_mul_overflow(a, b, &r)) throw Error(what + " overflows 64 bits");
  return r;
}

std::uint64_t checked_add(std::uint64_t a, std::uint64_t b, const std::string& what) {
  std::uint64_t r;
  if (__builtin_add_overflow(a, b, &r)) throw Error(what + " overflows 64 bits");
  return r;
}

void ByteReader::need(std::uint64_t n, std::string_view field) const {
  if (n > remaining()) {
    std::ostringstream os;
    os << field << " [offset " << pos_ << ", " << n << " bytes] runs past the end of the file ("
       << data_.size() << " bytes)";
    fail(os.str());
  }
}

void ByteReader::seek(std::uint64_t pos, std::string_view field) {
  if (pos > data_.size()) {
    std::ostringstream os;
    os << field << " at offset " << pos << " lies past the end of the file (" << data_.size()
       << " bytes)";
    fail(os.str());
  }
  pos_ = pos;
}

std::string_view ByteReader::read_string64(std::string_view field) {
  const auto n = read<std::uint64_t>(field);
  const Bytes b = take(n, field);
  return {reinterpret_cast<const char*>(b.data()), b.size()};
}

}  // namespace lowp::accuracy::detail
