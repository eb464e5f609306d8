// half_runs.hpp: each ISA's runs against half.hpp's scalar conversions, bitwise (a scalar
// reference beside each SIMD kernel). Widening: every one of the 65536 codes of each type, read
// from an odd address in runs of 1 .. 23 elements (SIMD bodies and scalar tails, every
// alignment). Narrowing: the float32 neighbours of every float16 value and midpoint (ties
// either way), 2^20 random bit patterns, and NaNs of every payload shape (signalling, quiet,
// payloads only below the kept bits), written to an odd address. Mutants they fail on: the
// F16C widen without its signalling-NaN fix-up; the F16C narrowing without its NaN fix-up.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "lowp/numerics/half.hpp"
#include "lowp/numerics/half_runs.hpp"
#include "support/test_support.hpp"

namespace lowp {
namespace {

constexpr Isa kIsas[] = {Isa::scalar, Isa::avx2, Isa::avx512};

// f(isa, its runs) for each ISA this CPU runs; a note for the others.
template <class F>
void for_each_isa(const F& f) {
  for (const Isa isa : kIsas) {
    if (isa_available(isa))
      f(isa, half_runs(isa));
    else
      std::printf("[   NOTE   ] %s runs not checked: not available on this CPU\n", std::string(isa_name(isa)).c_str());
  }
}

// Runs of 1 .. 23 elements over [0, n): f(at, run).
template <class F>
void in_runs(std::size_t n, const F& f) {
  for (std::size_t at = 0, run = 1; at < n; at += run, run = run % 23 + 1) f(at, std::min(run, n - at));
}

std::vector<float> narrowing_inputs() {
  std::vector<float> v;
  for (std::uint32_t c = 0; c < 0x10000; ++c) {
    // Each float16 value's float32 bits and their neighbours, and the same around the
    // midpoint to the next code (a tie, and one ulp either side).
    const std::uint32_t u = std::bit_cast<std::uint32_t>(f16_to_f32(static_cast<std::uint16_t>(c)));
    for (const std::uint32_t d : {0u, 1u, 0xfffu, 0x1000u, 0x1001u, 0x1fffu, 0xffffu, 0x8000u, 0x7fffu, 0x8001u})
      v.push_back(std::bit_cast<float>(u + d));
  }
  test::SplitMix rng{7};
  for (int i = 0; i < (1 << 20); ++i) v.push_back(std::bit_cast<float>(static_cast<std::uint32_t>(rng.next())));
  for (const std::uint32_t sign : {0u, 0x80000000u})
    for (const std::uint32_t payload : {0x1u, 0xfffu, 0x1000u, 0x2000u, 0x1fffffu, 0x200000u, 0x3fffffu, 0x400000u,
                                        0x400001u, 0x7fffffu, 0x7fe000u, 0x10000u, 0xffffu})
      v.push_back(std::bit_cast<float>(sign | 0x7f800000u | payload));
  return v;
}

TEST(HalfRuns, EveryIsaWidensEveryCodeAsTheScalarDecoders) {
  std::vector<unsigned char> bytes(2 * 0x10000 + 1);
  std::vector<float> out(0x10000);
  for (std::uint32_t c = 0; c < 0x10000; ++c) {
    const auto h = static_cast<std::uint16_t>(c);
    std::memcpy(bytes.data() + 1 + 2 * c, &h, 2);
  }
  for_each_isa([&](Isa isa, const HalfRuns& k) {
    for (const bool bf16 : {false, true}) {
      std::fill(out.begin(), out.end(), 0.0f);
      in_runs(0x10000, [&](std::size_t at, std::size_t run) {
        (bf16 ? k.bf16_to_f32 : k.f16_to_f32)(bytes.data() + 1 + 2 * at, out.data() + at, run);
      });
      std::size_t differ = 0;
      for (std::uint32_t c = 0; c < 0x10000; ++c) {
        const auto h = static_cast<std::uint16_t>(c);
        differ += std::bit_cast<std::uint32_t>(out[c]) != std::bit_cast<std::uint32_t>(bf16 ? bf16_to_f32(h) : f16_to_f32(h));
      }
      EXPECT_EQ(differ, 0u) << isa_name(isa) << (bf16 ? " bf16" : " f16");
    }
  });
}

TEST(HalfRuns, EveryIsaNarrowsAsTheScalarEncoders) {
  const std::vector<float> in = narrowing_inputs();
  std::vector<unsigned char> bytes(2 * in.size() + 1);
  for_each_isa([&](Isa isa, const HalfRuns& k) {
    for (const bool bf16 : {false, true}) {
      std::fill(bytes.begin(), bytes.end(), 0);
      in_runs(in.size(), [&](std::size_t at, std::size_t run) {
        (bf16 ? k.f32_to_bf16 : k.f32_to_f16)(in.data() + at, bytes.data() + 1 + 2 * at, run);
      });
      std::size_t differ = 0;
      for (std::size_t i = 0; i < in.size(); ++i) {
        std::uint16_t h;
        std::memcpy(&h, bytes.data() + 1 + 2 * i, 2);
        const std::uint16_t want = bf16 ? f32_to_bf16(in[i]) : f32_to_f16(in[i]);
        if (h != want && ++differ <= 3)
          ADD_FAILURE() << isa_name(isa) << (bf16 ? " bf16" : " f16") << ": float bits 0x" << std::hex
                        << std::bit_cast<std::uint32_t>(in[i]) << " gave 0x" << h << ", want 0x" << want;
      }
      EXPECT_EQ(differ, 0u) << isa_name(isa) << (bf16 ? " bf16" : " f16");
    }
  });
}

TEST(HalfRuns, AnIsaThisCpuLacksIsAnError) {
  for (const Isa isa : kIsas) {
    if (!isa_available(isa)) {
      EXPECT_THROW(half_runs(isa), Error);
    }
  }
  EXPECT_EQ(&half_runs(), &half_runs(best_isa()));
}

}  // namespace
}  // namespace lowp
