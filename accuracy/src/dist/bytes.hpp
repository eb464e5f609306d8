// Flat byte buffers for results sent between ranks (gather_to_root): values in native byte
// order, as every rank of a job runs the same build. Reading past the end or a length that
// does not fit throws lowp::Error with the caller's message.
#pragma once
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "lowp/numerics/error.hpp"

namespace lowp::accuracy::dist {

class ByteWriter {
 public:
  template <class T>
  void pod(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    const auto* p = reinterpret_cast<const std::uint8_t*>(&v);
    out.insert(out.end(), p, p + sizeof v);
  }
  template <class T>
  void vec(const std::vector<T>& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    pod<std::uint64_t>(v.size());
    const auto* p = reinterpret_cast<const std::uint8_t*>(v.data());
    out.insert(out.end(), p, p + v.size() * sizeof(T));
  }
  void str(const std::string& s) {
    pod<std::uint64_t>(s.size());
    out.insert(out.end(), s.begin(), s.end());
  }
  std::vector<std::uint8_t> out;
};

class ByteReader {
 public:
  ByteReader(std::span<const std::uint8_t> bytes, std::string what) : b_(bytes), what_(std::move(what)) {}
  template <class T>
  T pod() {
    T v;
    std::memcpy(&v, take(sizeof v), sizeof v);
    return v;
  }
  template <class T>
  std::vector<T> vec() {
    const auto n = pod<std::uint64_t>();
    if (n > (b_.size() - at_) / sizeof(T)) bad();
    std::vector<T> v(static_cast<std::size_t>(n));
    if (n) std::memcpy(v.data(), take(v.size() * sizeof(T)), v.size() * sizeof(T));
    return v;
  }
  std::string str() {
    const auto n = pod<std::uint64_t>();
    if (n > b_.size() - at_) bad();
    const auto* p = take(static_cast<std::size_t>(n));
    return std::string(reinterpret_cast<const char*>(p), static_cast<std::size_t>(n));
  }
  bool done() const { return at_ == b_.size(); }
  [[noreturn]] void bad() const { throw Error(what_); }

 private:
  const std::uint8_t* take(std::size_t n) {
    if (n > b_.size() - at_) bad();
    const std::uint8_t* p = b_.data() + at_;
    at_ += n;
    return p;
  }
  std::span<const std::uint8_t> b_;
  std::string what_;
  std::size_t at_ = 0;
};

}  // namespace lowp::accuracy::dist
