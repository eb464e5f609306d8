// Counter-based random bits for stochastic rounding.
//
// The bits for element i depend only on (seed, i): no generator state is carried from one
// element to the next, so results are the same at any thread count, chunking or SIMD width.
// Each step is 32-bit xor/shift/multiply, which vectorises directly.
#pragma once
#include <cstdint>

namespace lowp {

// A 32-bit integer hash with low bias (xor-shift-multiply, two rounds).
constexpr std::uint32_t mix32(std::uint32_t x) noexcept {
  x ^= x >> 16;
  x *= 0x7feb352dU;
  x ^= x >> 15;
  x *= 0x846ca68bU;
  x ^= x >> 16;
  return x;
}

struct RngKey {
  std::uint32_t k0 = 0, k1 = 0;
};

// Expands a 64-bit seed into the key (splitmix64 finaliser, so nearby seeds differ fully).
constexpr RngKey rng_key(std::uint64_t seed) noexcept {
  std::uint64_t z = seed + 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return {static_cast<std::uint32_t>(z), static_cast<std::uint32_t>(z >> 32)};
}

// 32 random bits for element `index` under `key`.
constexpr std::uint32_t random_bits(RngKey key, std::uint64_t index) noexcept {
  const auto lo = static_cast<std::uint32_t>(index);
  const auto hi = static_cast<std::uint32_t>(index >> 32);
  return mix32(mix32(lo ^ key.k0) ^ hi ^ key.k1);
}

}  // namespace lowp
