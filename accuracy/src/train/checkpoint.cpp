// state.bin encoding, checking and atomic writing (train/checkpoint.hpp).
#include "train/checkpoint.hpp"

#include <zlib.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <thread>

#include "file/atomic_file.hpp"
#include "lowp/numerics/error.hpp"

namespace lowp::accuracy::train {
namespace {

constexpr char kMagic[8] = {'L', 'O', 'W', 'P', 'T', 'R', 'N', '3'};
constexpr std::size_t kHeader = 8 + 8 + 4;

std::uint32_t crc32_of(std::span<const std::uint8_t> b) {
  uLong crc = crc32(0L, Z_NULL, 0);
  std::size_t at = 0;
  while (at < b.size()) {  // zlib takes a uInt length
    const std::size_t n = std::min<std::size_t>(b.size() - at, 1u << 30);
    crc = crc32(crc, b.data() + at, static_cast<uInt>(n));
    at += n;
  }
  return static_cast<std::uint32_t>(crc);
}

void put(std::vector<std::uint8_t>& b, const void* p, std::size_t n) {
  const std::size_t at = b.size();
  b.resize(at + n);
  if (n) std::memcpy(b.data() + at, p, n);
}
void put_u64(std::vector<std::uint8_t>& b, std::uint64_t v) { put(b, &v, sizeof v); }

}  // namespace

std::vector<std::uint8_t> encode_state(std::span<const std::span<const float>> tensors,
                                        std::span<const std::uint8_t> optimizer, std::span<const std::uint8_t> linears) {
  std::size_t total = kHeader + 8 + 16;
  for (const auto& t : tensors) total += 8 + t.size_bytes();
  std::vector<std::uint8_t> b;
  b.reserve(total + optimizer.size() + linears.size());
  b.resize(kHeader);  // magic; the payload's length and checksum are filled in below
  std::memcpy(b.data(), kMagic, 8);
  put_u64(b, tensors.size());
  for (const auto& t : tensors) {
    put_u64(b, t.size());
    put(b, t.data(), t.size_bytes());
  }
  for (const auto& part : {optimizer, linears}) {
    put_u64(b, part.size());
    put(b, part.data(), part.size());
  }
  const std::uint64_t n = b.size() - kHeader;
  const std::uint32_t crc = crc32_of(std::span(b).subspan(kHeader));
  std::memcpy(b.data() + 8, &n, 8);
  std::memcpy(b.data() + 16, &crc, 4);
  return b;
}

TrainState decode_state(std::span<const std::uint8_t> b, const std::string& name) {
  const auto fail = [&](const std::string& what) { return Error(name + ": " + what); };
  if (b.empty()) throw fail("empty (0 bytes): not a training checkpoint");
  if (b.size() < 8 || std::memcmp(b.data(), kMagic, 7) != 0)
    throw fail("not a lowp training checkpoint (no LOWPTRN header)");
  if (b[7] != static_cast<std::uint8_t>(kMagic[7]))
    throw fail("a training checkpoint of another format version ('" + std::string(1, static_cast<char>(b[7])) +
               "', this lowp reads '3')");
  if (b.size() < kHeader) throw fail("truncated: " + std::to_string(b.size()) + " bytes, shorter than its header");
  std::uint64_t n = 0;
  std::uint32_t crc = 0;
  std::memcpy(&n, b.data() + 8, 8);
  std::memcpy(&crc, b.data() + 16, 4);
  const std::uint64_t have = b.size() - kHeader;
  if (n != have)
    throw fail((n > have ? "truncated: payload of " : "payload of ") + std::to_string(n) + " bytes, the file holds " +
               std::to_string(have) + (n > have ? " (torn write?)" : " (trailing bytes)"));
  const auto payload = b.subspan(kHeader);
  if (crc32_of(payload) != crc) throw fail("checksum mismatch (the file is corrupted)");

  // A payload that passes the checksum was written by encode_state: a structural mismatch
  // here means a file forged or written by a defective lowp, still refused with one line.
  std::size_t at = 0;
  const auto u64 = [&] {
    if (payload.size() - at < 8) throw fail("malformed payload (ends inside a length at byte " + std::to_string(kHeader + at) + ")");
    std::uint64_t v;
    std::memcpy(&v, payload.data() + at, 8);
    at += 8;
    return v;
  };
  const auto bytes = [&](std::uint64_t len, const char* what) {
    if (len > payload.size() - at)
      throw fail(std::string("malformed payload (") + what + " of " + std::to_string(len) + " bytes past the end)");
    const auto s = payload.subspan(at, static_cast<std::size_t>(len));
    at += static_cast<std::size_t>(len);
    return s;
  };
  const std::uint64_t n_tensors = u64();
  if (n_tensors > (payload.size() - at) / 8) throw fail("malformed payload (" + std::to_string(n_tensors) + " tensors)");
  std::vector<std::span<const std::uint8_t>> parts;
  for (std::uint64_t i = 0; i < n_tensors; ++i) {
    const std::uint64_t count = u64();
    if (count > (payload.size() - at) / 4)
      throw fail("malformed payload (tensor " + std::to_string(i) + " of " + std::to_string(count) + " values past the end)");
    parts.push_back(bytes(count * 4, "a tensor"));
  }
  TrainState s;
  s.tensors.reserve(parts.size());
  for (const auto& p : parts) {
    std::vector<float> t(p.size() / 4);
    if (!p.empty()) std::memcpy(t.data(), p.data(), p.size());  // an empty vector's data() may be null
    s.tensors.push_back(std::move(t));
  }
  const auto opt = bytes(u64(), "the optimizer state");
  const auto lin = bytes(u64(), "the linear state");
  s.optimizer.assign(opt.begin(), opt.end());
  s.linears.assign(lin.begin(), lin.end());
  if (at != payload.size()) throw fail("malformed payload (" + std::to_string(payload.size() - at) + " bytes after the linear state)");
  return s;
}

void write_state_file(const std::string& path, std::span<const std::uint8_t> bytes) {
  accuracy::detail::write_file_atomic(path, bytes, [] {
    if (const char* ms = std::getenv("LOWP_TRAIN_SAVE_PAUSE_MS"))
      std::this_thread::sleep_for(std::chrono::milliseconds(std::atoi(ms)));
  });
}

std::vector<std::uint8_t> read_state_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error("cannot open " + path);
  std::vector<std::uint8_t> b((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (f.bad()) throw Error("cannot read " + path);
  return b;
}

}  // namespace lowp::accuracy::train
