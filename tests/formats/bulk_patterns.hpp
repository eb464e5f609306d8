// The SIMD encode kernels (AVX2 and the best ISA) against the scalar reference over a stream of
// float32 bit patterns: every 2^32 pattern (test_bulk_long.cpp, the `exhaustive` tier) or a
// deterministic sample of them (test_bulk_sample.cpp, every run).
#pragma once
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "lowp/formats/bulk.hpp"
#include "lowp/formats/registry.hpp"

namespace lowp::bulk_patterns {

struct Mismatch {
  std::uint64_t count = 0;
  std::uint32_t first_pattern = 0;
  std::uint32_t scalar = 0, simd = 0;
  Isa isa = Isa::scalar;
};

// Counts one mismatch in `mm`, keeping the lowest pattern's codes (called by one thread at a time).
inline void add_mismatch(Mismatch& mm, std::uint32_t pattern, std::uint32_t scalar, std::uint32_t simd, Isa isa) {
  if (mm.count == 0 || pattern < mm.first_pattern) mm = {mm.count, pattern, scalar, simd, isa};
  ++mm.count;
}

// The i-th stored code of `b`, read with the layout bulk.hpp documents.
inline std::uint32_t code_at(const std::vector<std::uint8_t>& b, std::size_t i, int sb) {
  switch (sb) {
    case 4: return (b[i / 2] >> (4 * (i % 2))) & 0xf;
    case 6: return ((b[i / 4 * 3] | b[i / 4 * 3 + 1] << 8 | b[i / 4 * 3 + 2] << 16) >> (6 * (i % 4))) & 0x3f;
    case 8: return b[i];
    case 16: return b[2 * i] | b[2 * i + 1] << 8;
    default: return b[4 * i] | b[4 * i + 1] << 8 | b[4 * i + 2] << 16 | static_cast<std::uint32_t>(b[4 * i + 3]) << 24;
  }
}

// The SIMD ISAs to check: AVX2 and the best one when it is another.
inline std::vector<Isa> kernels() {
  std::vector<Isa> isas;
  if (isa_available(Isa::avx2)) isas.push_back(Isa::avx2);
  if (best_isa() != Isa::avx2 && best_isa() != Isa::scalar) isas.push_back(best_isa());
  return isas;
}

// Casts patterns pattern(0), ..., pattern(count - 1) (count a multiple of 2^20) with the scalar
// reference and each SIMD ISA; element i of the stream has stream offset i (stochastic rounding
// draws random_bits(key, i)). Chunks run in parallel with OpenMP.
template <class PatternOf>
Mismatch compare(const Format& f, const CastOptions& cast, std::uint64_t count, PatternOf pattern) {
  const std::vector<Isa> isas = kernels();
  Mismatch mm;
  if (isas.empty()) return mm;
  constexpr std::size_t kChunk = std::size_t{1} << 20;
  const long chunks = static_cast<long>(count / kChunk);
  const std::size_t bytes = encoded_bytes(f, kChunk);
  const int sb = storage_bits(f);
#pragma omp parallel
  {
    std::vector<float> in(kChunk);
    std::vector<std::uint32_t> pat(kChunk);
    std::vector<std::uint8_t> ref(bytes), got(bytes);
#pragma omp for schedule(dynamic)
    for (long c = 0; c < chunks; ++c) {
      const std::uint64_t base = static_cast<std::uint64_t>(c) * kChunk;
      for (std::size_t i = 0; i < kChunk; ++i) {
        pat[i] = pattern(base + i);
        std::memcpy(&in[i], &pat[i], 4);
      }
      BulkOptions o;
      o.cast = cast;
      o.seed = 0x5eed;
      o.offset = base;
      o.isa = Isa::scalar;
      encode_f32(f, in, ref, o);
      for (Isa isa : isas) {
        o.isa = isa;
        encode_f32(f, in, got, o);
        if (got == ref) continue;
        for (std::size_t i = 0; i < kChunk; ++i) {
          if (code_at(ref, i, sb) == code_at(got, i, sb)) continue;
#pragma omp critical
          add_mismatch(mm, pat[i], code_at(ref, i, sb), code_at(got, i, sb), isa);
        }
      }
    }
  }
  return mm;
}

// Every one of the 2^32 float32 patterns, in order, through each SIMD ISA, each result equal to
// the scalar reference's. For a deterministic rounding the scalar reference is monotone on each
// sign's finite inputs (every rounding mode is; test_codec checks it against the Boost oracle at
// every boundary and tie), and gives different finite values different codes. So a run of
// consecutive patterns that one ISA encodes to the same code equals the reference everywhere
// when the reference gives that code at the run's two ends; a SIMD error anywhere, a wrong code
// or a moved boundary, leaves a run with a wrong end. Runs with a wrong end, the inf/NaN patterns
// and stochastic rounding (not monotone: random bits per place) are compared pattern by pattern.
// That takes the scalar codec, the slow side, out of all but a few thousand patterns.
inline Mismatch compare_every_pattern(const Format& f, const CastOptions& cast) {
  const std::vector<Isa> isas = kernels();
  Mismatch mm;
  if (isas.empty()) return mm;
  constexpr std::size_t kChunk = std::size_t{1} << 16;  // 256 kB of input: stays in L2
  constexpr long kChunks = long{1} << 16;
  const std::size_t bytes = encoded_bytes(f, kChunk);
  const int sb = storage_bits(f);
  if (sb > 8) throw std::invalid_argument("compare_every_pattern: formats of at most 8 bits");
#pragma omp parallel
  {
    std::vector<float> in(kChunk);
    std::vector<std::uint8_t> got(bytes), ref(bytes), codes(kChunk), one(4);
#pragma omp for schedule(dynamic)
    for (long c = 0; c < kChunks; ++c) {
      const std::uint32_t base = static_cast<std::uint32_t>(c) << 16;
      for (std::uint32_t i = 0; i < kChunk; ++i) {  // 32-bit counter: vectorizes
        const std::uint32_t p = base | i;
        std::memcpy(&in[i], &p, 4);
      }
      BulkOptions o;
      o.cast = cast;
      o.seed = 0x5eed;
      // The reference's code for element i of this chunk (offset: the place in the stream).
      auto scalar_at = [&](std::size_t i) {
        BulkOptions s = o;
        s.isa = Isa::scalar;
        s.offset = base + i;
        encode_f32(f, std::span<const float>(&in[i], 1), one, s);
        return code_at(one, 0, sb);
      };
      // A chunk is 2^16 aligned patterns: one sign, and either all finite or all with exponent 255.
      const bool every = cast.round == Round::stochastic || (base & 0x7f800000u) == 0x7f800000u;
      for (Isa isa : isas) {
        o.isa = isa;
        o.offset = base;
        encode_f32(f, in, got, o);
        auto check = [&](std::size_t i) {
          const std::uint32_t want = scalar_at(i), have = code_at(got, i, sb);
          if (want == have) return;
#pragma omp critical
          add_mismatch(mm, static_cast<std::uint32_t>(base + i), want, have, isa);
        };
        if (every) {
          BulkOptions s = o;
          s.isa = Isa::scalar;
          encode_f32(f, in, ref, s);
          if (ref != got)
            for (std::size_t i = 0; i < kChunk; ++i)
              if (code_at(ref, i, sb) != code_at(got, i, sb)) check(i);
          continue;
        }
        // One code per byte (every case here has at most 8 bits), scanned 8 at a time: the scan,
        // not the kernel, would otherwise be most of the test's time.
        if (sb != 8)
          for (std::size_t i = 0; i < kChunk; ++i) codes[i] = static_cast<std::uint8_t>(code_at(got, i, sb));
        const std::uint8_t* k = sb == 8 ? got.data() : codes.data();
        for (std::size_t a = 0; a < kChunk;) {
          const std::uint8_t code = k[a];
          const std::uint64_t eight = 0x0101010101010101ull * code;
          std::size_t b = a;
          for (std::uint64_t w; b + 9 <= kChunk && (std::memcpy(&w, k + b + 1, 8), w == eight);) b += 8;
          while (b + 1 < kChunk && k[b + 1] == code) ++b;
          if (scalar_at(a) != code || scalar_at(b) != code)
            for (std::size_t i = a; i <= b; ++i) check(i);
          a = b + 1;
        }
      }
    }
  }
  return mm;
}

// The formats and modes checked. The exhaustive tier runs the `exhaustive_default` cases
// (nearest-even on one 8-bit preset of each kind of special-value and range rule, and
// stochastic E4M3FN); LOWP_EXHAUSTIVE_ALL=1 runs every case there. The sampled test
// runs every case.
struct Case {
  const char* format;
  Round round;
  bool saturate;
  bool exhaustive_default;
};

inline std::vector<Case> cases() {
  std::vector<Case> v;
  for (const char* f : {"float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e8m0fnu", "float8_ue4m3",
                        "binary8p1", "binary8p4"})
    v.push_back({f, Round::nearest_even, false, true});
  for (const char* f : {"float8_e3m4", "float8_e5m2fnuz", "float8_e4m3", "binary8p2", "binary8p3", "binary8p5",
                        "binary8p6", "binary8p7", "float8_e8m0fnu_rne", "p3109_k8p3ue", "p3109_k8p1ue",
                        "p3109_k6p3sf"})
    v.push_back({f, Round::nearest_even, false, false});
  for (const char* f : {"float8_e4m3fn", "float8_e5m2"}) {
    v.push_back({f, Round::stochastic, false, f == std::string("float8_e4m3fn")});
    v.push_back({f, Round::toward_neg, false, false});
    v.push_back({f, Round::odd, false, false});
    for (Round r : {Round::nearest_away, Round::toward_zero, Round::toward_pos}) v.push_back({f, r, false, false});
  }
  v.push_back({"float8_e4m3fn", Round::nearest_even, true, false});
  v.push_back({"float8_e5m2", Round::nearest_even, true, false});
  return v;
}

inline std::string describe(const Format& f, const CastOptions& o, const Mismatch& m) {
  char b[200];
  std::snprintf(b, sizeof b, "%s %s%s: %llu mismatches, first input 0x%08x: scalar 0x%02x, %s 0x%02x",
                format_name(f).c_str(), std::string(round_name(o.round)).c_str(), o.saturate ? " sat" : "",
                static_cast<unsigned long long>(m.count), m.first_pattern, m.scalar,
                std::string(isa_name(m.isa)).c_str(), m.simd);
  return b;
}

inline std::string case_name(const Case& c) {
  return std::string(c.format) + "_" + std::string(round_name(c.round)) + (c.saturate ? "_saturate" : "");
}

// GoogleTest prints a case by this name (found next to Case).
inline void PrintTo(const Case& c, std::ostream* os) { *os << case_name(c); }

}  // namespace lowp::bulk_patterns
