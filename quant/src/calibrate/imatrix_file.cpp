// llama.cpp's legacy importance-matrix file (llama-imatrix's `.dat`), read with every count
// checked against the bytes that remain.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <set>
#include <string>

#include "lowp/numerics/error.hpp"
#include "lowp/quant/calibrate_imatrix.hpp"

namespace lowp::quant {
namespace {

class Reader {
 public:
  Reader(const std::string& path, std::string bytes) : path_(path), b_(std::move(bytes)) {}
  std::size_t left() const { return b_.size() - pos_; }
  [[noreturn]] void fail(const std::string& why) const {
    throw Error("imatrix file " + path_ + ": " + why + " (at byte " + std::to_string(pos_) + ")");
  }
  std::int32_t i32(const char* what) {
    if (left() < 4) fail(std::string("truncated: no room for ") + what);
    std::int32_t v;
    std::memcpy(&v, b_.data() + pos_, 4);  // little-endian, as written on x86 / ARM
    pos_ += 4;
    return v;
  }
  std::string text(std::size_t n) {
    std::string s = b_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  void floats(float* out, std::size_t n) {
    std::memcpy(out, b_.data() + pos_, n * 4);
    pos_ += n * 4;
  }

 private:
  std::string path_, b_;
  std::size_t pos_ = 0;
};

}  // namespace

std::vector<float> ImatrixEntry::importance() const {
  std::vector<float> v = values;
  if (ncall > 0)  // llama.cpp's loader divides only by a positive count
    for (float& x : v) x /= static_cast<float>(ncall);
  return v;
}

const ImatrixEntry* ImatrixFile::find(const std::string& name) const {
  for (const ImatrixEntry& e : entries)
    if (e.name == name) return &e;
  return nullptr;
}

ImatrixFile read_imatrix(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("imatrix file " + path + ": cannot open");
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw Error("imatrix file " + path + ": read error");
  Reader r(path, std::move(bytes));
  if (r.left() >= 4) {
    Reader probe = r;
    if (probe.text(4) == "GGUF") r.fail("a GGUF imatrix; only llama.cpp's legacy .dat layout is read");
  }
  ImatrixFile f;
  const std::int32_t n = r.i32("the entry count");
  // The smallest entry: name length, a 1-byte name, ncall, nval, one value.
  if (n < 1 || static_cast<std::size_t>(n) > r.left() / 17) r.fail("bad entry count " + std::to_string(n));
  std::set<std::string> names;
  for (std::int32_t i = 0; i < n; ++i) {
    ImatrixEntry e;
    const std::int32_t len = r.i32("a name length");
    if (len < 1 || static_cast<std::size_t>(len) > r.left())
      r.fail("entry " + std::to_string(i) + ": bad name length " + std::to_string(len));
    e.name = r.text(static_cast<std::size_t>(len));
    if (!names.insert(e.name).second) r.fail("entry " + e.name + " appears twice");
    e.ncall = r.i32("ncall");
    if (e.ncall < 0) r.fail("entry " + e.name + ": negative ncall " + std::to_string(e.ncall));
    const std::int32_t nval = r.i32("nval");
    if (nval < 1 || static_cast<std::size_t>(nval) > r.left() / 4)
      r.fail("entry " + e.name + ": bad value count " + std::to_string(nval) + " (" + std::to_string(r.left()) +
             " bytes left)");
    e.values.resize(static_cast<std::size_t>(nval));
    r.floats(e.values.data(), e.values.size());
    for (std::size_t j = 0; j < e.values.size(); ++j)
      if (!std::isfinite(e.values[j]) || e.values[j] < 0)
        r.fail("entry " + e.name + ": value " + std::to_string(j) + " is " + std::to_string(e.values[j]) +
               " (need finite and >= 0)");
    f.entries.push_back(std::move(e));
  }
  if (r.left() > 0) {  // optional: the last chunk count and the calibration file's name
    f.chunks = r.i32("the chunk count");
    if (f.chunks < 0) r.fail("negative chunk count " + std::to_string(f.chunks));
    const std::int32_t len = r.i32("the dataset name length");
    if (len < 0 || static_cast<std::size_t>(len) > r.left()) r.fail("bad dataset name length " + std::to_string(len));
    f.dataset = r.text(static_cast<std::size_t>(len));
    if (r.left() > 0) r.fail(std::to_string(r.left()) + " trailing bytes");
  }
  return f;
}

}  // namespace lowp::quant
