#include "lowp/accuracy/memory.hpp"

#include <unistd.h>

#include <atomic>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "lowp/numerics/error.hpp"

namespace lowp::accuracy {
namespace {

std::atomic<std::uint64_t> budget{0};  // 0: the default

}  // namespace

std::uint64_t physical_memory() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return 0;
  return static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page);
}

std::uint64_t default_max_memory() {
  const std::uint64_t phys = physical_memory();
  return phys ? phys / 2 : std::uint64_t{8} << 30;
}

std::uint64_t max_memory() {
  const std::uint64_t b = budget.load(std::memory_order_relaxed);
  return b ? b : default_max_memory();
}

void set_max_memory(std::uint64_t bytes) { budget.store(bytes, std::memory_order_relaxed); }

std::uint64_t parse_memory_size(std::string_view text) {
  const auto bad = [&] {
    return Error("memory size '" + std::string(text.substr(0, 40)) +
                 "' is not a byte count or a number with K, M, G or T (e.g. 512M, 1.5G)");
  };
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || !std::isfinite(v) || v <= 0) throw bad();
  std::string_view unit(end, static_cast<std::size_t>(text.data() + text.size() - end));
  if (!unit.empty() && (unit.back() == 'B' || unit.back() == 'b')) unit.remove_suffix(1);
  if (unit.size() == 2 && (unit[1] == 'i' || unit[1] == 'I')) unit.remove_suffix(1);  // GiB
  double scale = 1;
  if (unit.size() == 1) {
    switch (unit[0]) {
      case 'k': case 'K': scale = 0x1p10; break;
      case 'm': case 'M': scale = 0x1p20; break;
      case 'g': case 'G': scale = 0x1p30; break;
      case 't': case 'T': scale = 0x1p40; break;
      default: throw bad();
    }
  } else if (!unit.empty()) {
    throw bad();
  }
  const double bytes = std::floor(v * scale);
  if (bytes < 1 || bytes >= 0x1p63) throw bad();
  return static_cast<std::uint64_t>(bytes);
}

std::string format_memory_size(double bytes) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  while (bytes >= 1024 && u < 6) {
    bytes /= 1024;
    ++u;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", bytes, units[u]);
  return buf;
}

double weight_bytes(const LlamaConfig& c) {
  // In double: three factors below 2^31 overflow 64 bits, and a budget needs no exact count.
  const double dim = c.dim, hidden = c.hidden_dim, kv = static_cast<double>(c.kv_dim()), vocab = c.vocab_size;
  const double per_layer = 2 * dim + 2 * dim * dim + 2 * dim * kv + 3 * dim * hidden;
  return 4 * (2 * vocab * dim + c.n_layers * per_layer + dim);
}

void check_memory(double bytes, const std::string& what) {
  const auto limit = static_cast<double>(max_memory());
  if (bytes > limit)
    throw Error(what + " need " + format_memory_size(bytes) + ", above the memory budget of " +
                format_memory_size(limit) + " (--max-memory)");
}

}  // namespace lowp::accuracy
