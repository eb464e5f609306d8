// BM_decode_step_<type>/threads:<n>: one lowp::accuracy::Decoder step (the fp32 recipe, the
// model's weights read as stored; float32 ones as the decoder re-lays them, InterleavedRows) on the 85M shape (dim 768, 12 layers, hidden 2048, 12
// heads, vocab 32000, untied classifier; random weights) at positions 8..71, with the 2-D
// weights stored as <type>: f32 and f16 / bf16 (the f32 model's values rounded), and GGUF's
// Q8_0, Q4_K and Q6_K (random blocks with a small scale), read in place as `lowp generate`
// reads a mapped GGUF. BM_decode_step_mxfp4: the f32 model under the mxfp4 recipe, whose layer
// weights the step reads packed (two E2M1 codes a byte and a float32 per 32, PackedWeight),
// its classifier as float32; its memcpy copies the same number of bytes as one buffer.
// Counters (steps timed on the wall clock, the decoder's threads = n):
//   tokens_per_s          decode steps per second
//   cpu_ms_per_step       the process's CPU time per step, every thread's (the steps alone)
//   weight_bytes_per_s    the stored bytes of every linear weight (classifier included) per second
//   memcpy_bytes_per_s    the same bytes, every tensor split across n OpenMP threads in one
//                         region, copied by memcpy in this process (the best of 3) into a
//                         buffer that stays in L2: the machine's physical limit on reading them
//   over_memcpy           weight_bytes_per_s / memcpy_bytes_per_s (target >= 0.7 at 2 threads)
// BM_decode_step_<type>_ggml_act: the same GGUF blocks under the ggml-act recipe (llama.cpp's
// Q8_K / Q8_0 activations and integer block dots, quant::gemm_act).
// BM_decode_gemv_<type>/threads:<n> (below): the step's one-row kernel alone, its weights in
// cache, on each of n threads; BM_decode_floor_<type>/threads:<n>: that kernel's column
// arithmetic alone (a bound under it); BM_decode_floor_l2_<type>/threads:<n>: the same with its
// bytes read from L2, as the gemv's are.
// BM_decode_window_<type>/threads:<n> (at the end): a prompt's window over an interleaved copy.
#include <benchmark/benchmark.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <map>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "../../accuracy/src/io/ggml/ggml_types.hpp"
#include "../../accuracy/src/io/ggml_weights.hpp"
#include "../eval/synthetic_llama.hpp"
#include "decode_floor.hpp"
#include "lowp/accuracy/decoder.hpp"
#include "lowp/accuracy/eval.hpp"
#include "lowp/numerics/cpu.hpp"
#include "lowp/numerics/half.hpp"
#include "lowp/quant/gemm.hpp"
#include "lowp/quant/interleaved_rows.hpp"
#include "lowp/quant/packed_weight.hpp"
#include "lowp/quant/quantize.hpp"

namespace lowp::bench {

const std::uint8_t* floor_planes(int count) {
  struct Ring {
    std::unique_ptr<std::uint8_t[], decltype(&std::free)> bytes{nullptr, &std::free};
    int count = 0;
  };
  static thread_local Ring ring;
  if (ring.count != count) {
    const auto n = static_cast<std::size_t>(count) * kFloorPlaneBytes;
    ring.bytes.reset(static_cast<std::uint8_t*>(std::aligned_alloc(64, n)));
    for (std::size_t i = 0; i < n; ++i)  // byte i of group g: (i * 7 + g) mod 16
      ring.bytes[i] = static_cast<std::uint8_t>((i % 512 * 7 + i / 512 / count) % 16);
    ring.count = count;
  }
  return ring.bytes.get();
}

}  // namespace lowp::bench

namespace {

using namespace lowp::accuracy;
using lowp::quant::StoredMatrix;
using lowp::quant::StoredType;
using lowp::quant::stored_bytes;

constexpr std::size_t kPrefix = 8, kPositions = 72;

const LlamaModel& f32_model() {
  static const LlamaModel m = lowp::bench::synthetic_llama(768, 2048, 12, 12, 32000, 1024, 85);
  return m;
}

// The model with each 2-D weight stored as ggml type `type`, held by `owner`'s buffers.
struct StoredModel {
  LlamaModel model;
  std::vector<StoredMatrix> weights;  // every linear weight, for the byte count and the memcpy
};

StoredModel make_model(std::uint32_t type) {
  const LlamaModel& f = f32_model();
  StoredModel out;
  if (type == ggml::f32) {
    out.model = f;
    out.model.classifier = f.token_embedding;  // untied, like the GGUFs llama.cpp writes
    for (const auto& L : out.model.layers)
      for (const auto* w : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down})
        out.weights.push_back({StoredType::f32, w->data(), w->size() / 768, 768});
    out.weights.push_back({StoredType::f32, out.model.classifier.data(), 32000, 768});
    return out;
  }
  auto store = std::make_shared<std::vector<std::vector<std::uint8_t>>>();
  std::mt19937 gen(7);
  // A weight of rows x cols: f16 / bf16 of the f32 values, or random blocks whose f16 scales
  // are set to a small value (the rest of the block is any bytes).
  const auto convert = [&](const std::vector<float>& w, std::size_t rows, std::size_t cols) {
    const std::size_t bytes = ggml::bytes_for(type, rows * cols);
    auto& buf = store->emplace_back(bytes);
    if (type == ggml::f16 || type == ggml::bf16) {
      for (std::size_t i = 0; i < rows * cols; ++i) {
        const std::uint16_t h = type == ggml::f16 ? lowp::f32_to_f16(w[i]) : lowp::f32_to_bf16(w[i]);
        std::memcpy(&buf[2 * i], &h, 2);
      }
    } else {
      for (auto& b : buf) b = static_cast<std::uint8_t>(gen());
      const std::size_t bb = ggml::block_bytes(type);
      const std::uint16_t scale = lowp::f32_to_f16(1.0f / 4096.0f);
      std::vector<std::size_t> at;  // offsets of the block's f16 scales
      if (type == ggml::q8_0) at = {0};
      if (type == ggml::q4_k || type == ggml::q5_k) at = {0, 2};
      if (type == ggml::q6_k) at = {208};
      for (std::size_t b = 0; b < bytes / bb; ++b)
        for (std::size_t o : at) std::memcpy(&buf[b * bb + o], &scale, 2);
    }
    return detail::ggml_matrix(type, buf.data(), rows, cols);
  };
  out.model.config = f.config;
  out.model.final_norm = f.final_norm;
  out.model.token_embedding.stored = {StoredType::f32, f.token_embedding.data(), 32000, 768};
  for (const auto& L : f.layers) {
    LayerWeights lw;
    lw.attn_norm = L.attn_norm;
    lw.ffn_norm = L.ffn_norm;
    lw.wq.stored = convert(L.wq, 768, 768);
    lw.wk.stored = convert(L.wk, 768, 768);
    lw.wv.stored = convert(L.wv, 768, 768);
    lw.wo.stored = convert(L.wo, 768, 768);
    lw.w_gate.stored = convert(L.w_gate, 2048, 768);
    lw.w_up.stored = convert(L.w_up, 2048, 768);
    lw.w_down.stored = convert(L.w_down, 768, 2048);
    for (const auto* w : {&lw.wq, &lw.wk, &lw.wv, &lw.wo, &lw.w_gate, &lw.w_up, &lw.w_down}) out.weights.push_back(w->stored);
    out.model.layers.push_back(std::move(lw));
  }
  out.model.classifier.stored = convert(f.token_embedding, 32000, 768);
  out.weights.push_back(out.model.classifier.stored);
  out.model.mapped = store;
  return out;
}

// make_model(type), built once for every benchmark that reads it.
const StoredModel& stored_model(std::uint32_t type) {
  static std::map<std::uint32_t, StoredModel> models;
  if (!models.count(type)) models.emplace(type, make_model(type));
  return models.at(type);
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// CPU time of the whole process, every thread's (Google Benchmark's CPU timer counts only its
// own thread, and it would also count the decoder that run() rebuilds between steps).
double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// The best of 3 copies of every weight's bytes, each thread copying its share of every tensor
// into a buffer of its own, all in one region: the bandwidth limit, without the cost of waking
// the team once per tensor (under OMP_WAIT_POLICY=passive, tens of microseconds on a VM).
// Copied 256 KiB at a time into the same 256 KiB, so that the destination stays in L2 and the
// copy moves the bytes a GEMV moves: read from memory once. A destination as large as a
// tensor is written back to memory as well (the 85M shape's float32 classifier is 98 MB),
// which cost the two-thread baseline a third of its speed on the Zen 5.
// Each piece lands at its source's offset in a page: glibc's memcpy (rep movsb) on a Zen 3 ran
// at an eighth of its speed (2 against 15 GB/s) where the destination lay a few bytes past the
// source modulo 4 KiB, as a malloc'd buffer (16 past a page) does past a page-aligned tensor.
double memcpy_seconds(const std::vector<StoredMatrix>& weights, int threads) {
  constexpr std::size_t kPiece = 256 << 10, kPage = 4096;
  const auto share = [&](std::size_t n, int t) { return n * static_cast<std::size_t>(t) / static_cast<std::size_t>(threads); };
  std::vector<std::unique_ptr<std::uint8_t, decltype(&std::free)>> dst;
  for (int t = 0; t < threads; ++t) {
    dst.emplace_back(static_cast<std::uint8_t*>(std::aligned_alloc(kPage, kPiece + kPage)), &std::free);
    std::memset(dst.back().get(), 1, kPiece + kPage);
  }
  double best = 1e300;
  for (int rep = 0; rep < 3; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
#pragma omp parallel for num_threads(threads) schedule(static, 1)
    for (int t = 0; t < threads; ++t)
      for (const auto& w : weights) {
        const std::size_t n = stored_bytes(w);
        for (std::size_t o = share(n, t), e = share(n, t + 1); o < e; o += kPiece) {
          const std::uint8_t* from = static_cast<const std::uint8_t*>(w.data) + o;
          std::memcpy(dst[static_cast<std::size_t>(t)].get() + reinterpret_cast<std::uintptr_t>(from) % kPage, from,
                      std::min(kPiece, e - o));
        }
      }
    best = std::min(best, seconds_since(t0));
    for (const auto& d : dst) benchmark::DoNotOptimize(d.get());
  }
  return best;
}

// The best of 3 copies of `bytes` bytes as one buffer, split across `threads`.
double memcpy_seconds(double bytes, int threads) {
  const std::vector<std::uint8_t> src(static_cast<std::size_t>(bytes), 1);
  return memcpy_seconds({StoredMatrix{StoredType::custom, src.data(), 1, 1, nullptr, src.size()}}, threads);
}

// The stored bytes of every linear weight of the model.
double weight_bytes(const StoredModel& sm) {
  double bytes = 0;
  for (const auto& w : sm.weights) bytes += static_cast<double>(stored_bytes(w));
  return bytes;
}

// The counters every benchmark here reports: weight bytes read per second (`read`) against the
// memcpy's bytes per second (`copy`).
void report_rates(benchmark::State& state, double read, double copy) {
  state.counters["weight_bytes_per_s"] = read;
  state.counters["memcpy_bytes_per_s"] = copy;
  state.counters["over_memcpy"] = read / copy;
}

void run(benchmark::State& state, std::uint32_t type, const char* recipe = "fp32") {
  const StoredModel& sm = stored_model(type);
  const int threads = static_cast<int>(state.range(0));
  const Recipe r = find_recipe(recipe);
  std::mt19937 gen(21);
  std::vector<int> tokens(kPositions);
  for (int& t : tokens) t = static_cast<int>(gen() % 32000u);
  std::unique_ptr<Decoder> d;
  const auto fresh = [&] {
    d = std::make_unique<Decoder>(sm.model, r, kPositions, threads);
    for (std::size_t p = 0; p < kPrefix; ++p) d->feed(tokens[p]);
  };
  fresh();
  double busy = 0, cpu = 0;
  std::size_t steps = 0;
  for (auto _ : state) {
    if (d->position() == kPositions) fresh();
    const double c0 = process_cpu_seconds();
    const auto t0 = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(d->step(tokens[d->position()]).data());
    const double t = seconds_since(t0);
    cpu += process_cpu_seconds() - c0;
    state.SetIterationTime(t);
    busy += t;
    ++steps;
  }
  // fp32 and ggml-act read the model's tensors as stored; another recipe reads its own copies
  // (packed or not).
  const bool own_copies = !r.is_identity() && !r.act_ggml;
  const double bytes = own_copies ? d->step_weight_bytes() : weight_bytes(sm);
  const double copy = bytes / (own_copies ? memcpy_seconds(bytes, threads) : memcpy_seconds(sm.weights, threads));
  state.counters["tokens_per_s"] = static_cast<double>(steps) / busy;
  state.counters["cpu_ms_per_step"] = 1e3 * cpu / static_cast<double>(steps);
  report_rates(state, bytes * static_cast<double>(steps) / busy, copy);
}

#define LOWP_DECODE_BENCH(name, type)                                                          \
  void BM_decode_step_##name(benchmark::State& state) { run(state, type); }                    \
  BENCHMARK(BM_decode_step_##name)->ArgName("threads")->Arg(1)->Arg(2)->UseManualTime()->Unit( \
      benchmark::kMillisecond);

LOWP_DECODE_BENCH(f32, ggml::f32)
LOWP_DECODE_BENCH(bf16, ggml::bf16)
LOWP_DECODE_BENCH(f16, ggml::f16)
LOWP_DECODE_BENCH(q8_0, ggml::q8_0)
LOWP_DECODE_BENCH(q4_k, ggml::q4_k)
LOWP_DECODE_BENCH(q6_k, ggml::q6_k)

void BM_decode_step_mxfp4(benchmark::State& state) { run(state, ggml::f32, "mxfp4"); }
BENCHMARK(BM_decode_step_mxfp4)->ArgName("threads")->Arg(1)->Arg(2)->UseManualTime()->Unit(benchmark::kMillisecond);

// The block types under ggml-act: llama.cpp's quantized activations and integer dots (act.ggml),
// the same stored bytes read row by row.
#define LOWP_DECODE_GGML_BENCH(name, type)                                                                     \
  void BM_decode_step_##name##_ggml_act(benchmark::State& state) { run(state, type, "ggml-act"); }           \
  BENCHMARK(BM_decode_step_##name##_ggml_act)->ArgName("threads")->Arg(1)->Arg(2)->UseManualTime()->Unit( \
      benchmark::kMillisecond);

LOWP_DECODE_GGML_BENCH(q8_0, ggml::q8_0)
LOWP_DECODE_GGML_BENCH(q4_k, ggml::q4_k)
LOWP_DECODE_GGML_BENCH(q6_k, ggml::q6_k)

// BM_decode_gemv_<type>/threads:<n>: the step's kernel alone on weights held in cache, the one-row
// GEMV (gemm_f32, M = 1, one thread) over the first kGemvRows rows of layer 0's w_down (2048
// columns; mxfp4: those rows packed; interleaved where the step's prepared weights are; q5_k has
// no step benchmark, only this kernel's), run again and again. On n threads each thread runs its
// own product on its own copy (one team of n for a batch of products, not a team per product,
// whose start-up would dominate): the kernel's rate when every core decodes at once. Counters:
// us_per_product (each thread's), and its weight bytes per second against the step's memcpy at
// n threads (every weight, from memory): below 0.7, the kernel's arithmetic bounds the n-thread
// step under the target even if memory cost nothing.
constexpr std::size_t kGemvRows = 128;

void run_gemv(benchmark::State& state, std::uint32_t type, bool packed = false) {
  const StoredModel& sm = stored_model(type);
  const int threads = static_cast<int>(state.range(0));
  StoredMatrix m = sm.model.layers[0].w_down.stored;
  std::optional<lowp::quant::PackedWeight> pw;
  if (packed) {
    const std::vector<float>& w = f32_model().layers[0].w_down;
    const auto q = lowp::quant::quantize(lowp::quant::parse_quant_spec("mxfp4"), w.data(), kGemvRows, 2048);
    std::vector<float> values(kGemvRows * 2048);
    lowp::quant::dequantize(q, values.data());
    pw = lowp::quant::PackedWeight::pack(q, values.data());
    if (!pw) {
      state.SkipWithError("mxfp4 weight not packed");
      return;
    }
    m = pw->matrix();
  }
  m.rows = kGemvRows;
  std::optional<lowp::quant::InterleavedRows> il;
  // Interleaved where the step's prepared weights are (the f32 model's layers are plain floats).
  const StoredMatrix src = type == ggml::f32 && !packed
                               ? StoredMatrix{StoredType::f32, f32_model().layers[0].w_down.data(), kGemvRows, 2048}
                               : m;
  if (lowp::quant::InterleavedRows::fits(src)) {
    il.emplace(src);
    m = il->matrix();
  }
  std::vector<float> x(2048, 0.5f);
  // Each thread's own copy of the weights, in its own cache (a copy of the copy's bytes: the
  // same matrix at another address), and its own y.
  const std::size_t bytes = stored_bytes(m);
  // Page-aligned as the copy it repeats: InterleavedRows' float32 dot loads its groups aligned
  // (a std::vector's 16-byte alignment crashed AVX2's under random interleaving).
  std::vector<std::unique_ptr<void, decltype(&std::free)>> copies;
  std::vector<StoredMatrix> ms(static_cast<std::size_t>(threads), m);
  for (std::size_t t = 1; t < ms.size(); ++t) {
    copies.emplace_back(std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096), &std::free);
    if (!copies.back()) {
      state.SkipWithError("cannot allocate a thread's copy");
      return;
    }
    std::memcpy(copies.back().get(), m.data, bytes);
    ms[t].data = copies.back().get();
  }
  std::vector<std::vector<float>> ys(static_cast<std::size_t>(threads), std::vector<float>(kGemvRows));
  constexpr int kBatch = 64;  // products per thread per timing
  const auto batch = [&](int n) {
#pragma omp parallel num_threads(threads)
    {
      const auto t = static_cast<std::size_t>(omp_get_thread_num());
      for (int i = 0; i < n; ++i) {
        lowp::quant::gemm_f32(x.data(), ms[t], ys[t].data(), 1, false, 1);
        benchmark::DoNotOptimize(ys[t].data());
      }
    }
  };
  batch(1);  // into cache
  double busy = 0;
  std::size_t calls = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    batch(kBatch);
    const double t = seconds_since(t0);
    state.SetIterationTime(t);  // an iteration is a batch (the whole time: min_time holds)
    busy += t;
    calls += static_cast<std::size_t>(kBatch * threads);
  }
  state.counters["us_per_product"] = 1e6 * busy * threads / static_cast<double>(calls);  // each thread's
  report_rates(state, static_cast<double>(bytes) * static_cast<double>(calls) / busy,
               weight_bytes(sm) / memcpy_seconds(sm.weights, threads));
}

#define LOWP_GEMV_BENCH(name, ...)                                                                      \
  void BM_decode_gemv_##name(benchmark::State& state) { run_gemv(state, __VA_ARGS__); }                 \
  BENCHMARK(BM_decode_gemv_##name)->ArgName("threads")->Arg(1)->Arg(2)->UseManualTime()->Unit(benchmark::kMicrosecond);

LOWP_GEMV_BENCH(f32, ggml::f32)
LOWP_GEMV_BENCH(bf16, ggml::bf16)
LOWP_GEMV_BENCH(q8_0, ggml::q8_0)
LOWP_GEMV_BENCH(q4_k, ggml::q4_k)
LOWP_GEMV_BENCH(q5_k, ggml::q5_k)
LOWP_GEMV_BENCH(q6_k, ggml::q6_k)
LOWP_GEMV_BENCH(mxfp4, ggml::f32, true)

// BM_decode_floor_<type>/threads:<n>: a bound under the kernel above. The lane dots' column
// arithmetic alone, of the ISA lowp runs, AVX-512 or AVX2 (decode_floor.hpp: per 16 or 8
// weights a widen, the type's float operations and the fma, on a plane in L1; no block read,
// transposed or unpacked), on each of
// n threads at once, as weight bytes per second at the type's stored bytes per weight, against
// the step's memcpy at n threads. Below 0.7, n threads read weights of the type slower than the
// target asks even if decoding the blocks and memory cost nothing (mxfp4's step also reads a
// float32 classifier).
//
// BM_decode_floor_l2_<type>/threads:<n>: the same arithmetic with its bytes read from L2, a ring
// of 256 KiB of planes a thread (one byte per weight of the gemv's 128 x 2048 weight), as the
// gemv above reads its weight: the gemv's speed over this one is what its block reading and
// decoding leave of the arithmetic's.
void run_floor(benchmark::State& state, lowp::bench::FloorOps ops, std::uint32_t type, double bytes_per_weight,
               int planes) {
  const lowp::Isa isa = lowp::best_isa();
  if (isa == lowp::Isa::scalar) {
    state.SkipWithError("the floor is of the AVX-512 or AVX2 lane dots: lowp runs neither here");
    return;
  }
  const auto floor_passes = isa == lowp::Isa::avx512 ? &lowp::bench::floor_passes_avx512 : &lowp::bench::floor_passes_avx2;
  constexpr long kPasses = 4096;  // of 32 columns x 64 rows: 8 M weights a thread a timing
  const int threads = static_cast<int>(state.range(0));
#pragma omp parallel num_threads(threads)
  lowp::bench::floor_planes(planes);  // each thread's planes made before the timings
  double busy = 0;
  std::size_t calls = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
#pragma omp parallel num_threads(threads)
    benchmark::DoNotOptimize(floor_passes(ops, kPasses, lowp::bench::floor_planes(planes), planes));
    const double t = seconds_since(t0);
    state.SetIterationTime(t);
    busy += t;
    calls += static_cast<std::size_t>(threads);
  }
  const StoredModel& sm = stored_model(type);
  const double weights = 2048.0 * kPasses * static_cast<double>(calls);
  state.counters["ns_per_16_weights"] = 1e9 * busy * threads / (weights / 16);  // one thread's
  report_rates(state, weights * bytes_per_weight / busy, weight_bytes(sm) / memcpy_seconds(sm.weights, threads));
}

#define LOWP_FLOOR_BENCH(name, type, bytes_per_weight)                                                          \
  void BM_decode_floor_##name(benchmark::State& state) {                                                       \
    run_floor(state, lowp::bench::FloorOps::name, type, bytes_per_weight, 1);                                 \
  }                                                                                                           \
  BENCHMARK(BM_decode_floor_##name)->ArgName("threads")->Arg(1)->Arg(2)->UseManualTime()->Unit(benchmark::kMicrosecond); \
  void BM_decode_floor_l2_##name(benchmark::State& state) {                                                    \
    run_floor(state, lowp::bench::FloorOps::name, type, bytes_per_weight, lowp::bench::kFloorL2Planes);       \
  }                                                                                                           \
  BENCHMARK(BM_decode_floor_l2_##name)->ArgName("threads")->Arg(1)->Arg(2)->UseManualTime()->Unit(benchmark::kMicrosecond);

LOWP_FLOOR_BENCH(q8_0, ggml::q8_0, 34.0 / 32)
LOWP_FLOOR_BENCH(q4_k, ggml::q4_k, 144.0 / 256)
LOWP_FLOOR_BENCH(q6_k, ggml::q6_k, 210.0 / 256)
LOWP_FLOOR_BENCH(mxfp4, ggml::f32, (16.0 + 4.0) / 32)  // PackedWeight: two codes a byte, a float32 per 32

// BM_decode_window_<type>/threads:<n>: a prompt's window as a decoder runs it, the product of 64
// tokens (gemm_f32, M = 64) with layer 0's w_down (768 x 2048) read from the interleaved copy
// the decoder makes of it (InterleavedRows), timed against the same product on the rows in
// place, in turn, in this process. Counter in_place_over_copy: the in-place time over the
// copy's (below 1: the copy slows windows down).
void run_window(benchmark::State& state, std::uint32_t type) {
  const StoredModel& sm = stored_model(type);
  const int threads = static_cast<int>(state.range(0));
  const StoredMatrix src = type == ggml::f32
                               ? StoredMatrix{StoredType::f32, f32_model().layers[0].w_down.data(), 768, 2048}
                               : sm.model.layers[0].w_down.stored;
  if (!lowp::quant::InterleavedRows::fits(src)) {
    state.SkipWithError("no interleaved copy of this type here");
    return;
  }
  const lowp::quant::InterleavedRows il(src);
  constexpr std::size_t M = 64;
  std::vector<float> x(M * src.cols), y(M * src.rows);
  std::mt19937 gen(5);
  std::normal_distribution<float> normal;
  for (float& v : x) v = normal(gen);
  lowp::quant::gemm_f32(x.data(), il.matrix(), y.data(), M, false, threads);  // warm both
  lowp::quant::gemm_f32(x.data(), src, y.data(), M, false, threads);
  double copy = 0, in_place = 0;
  for (auto _ : state) {
    auto t0 = std::chrono::steady_clock::now();
    lowp::quant::gemm_f32(x.data(), il.matrix(), y.data(), M, false, threads);
    benchmark::DoNotOptimize(y.data());
    const double t = seconds_since(t0);
    state.SetIterationTime(t);
    copy += t;
    t0 = std::chrono::steady_clock::now();
    lowp::quant::gemm_f32(x.data(), src, y.data(), M, false, threads);
    benchmark::DoNotOptimize(y.data());
    in_place += seconds_since(t0);
  }
  state.counters["in_place_over_copy"] = in_place / copy;
}

#define LOWP_WINDOW_BENCH(name, type)                                                         \
  void BM_decode_window_##name(benchmark::State& state) { run_window(state, type); }          \
  BENCHMARK(BM_decode_window_##name)->ArgName("threads")->Arg(1)->Arg(2)->UseManualTime()->Unit( \
      benchmark::kMillisecond);

LOWP_WINDOW_BENCH(f32, ggml::f32)
LOWP_WINDOW_BENCH(bf16, ggml::bf16)
LOWP_WINDOW_BENCH(f16, ggml::f16)
LOWP_WINDOW_BENCH(q8_0, ggml::q8_0)
LOWP_WINDOW_BENCH(q4_k, ggml::q4_k)

}  // namespace
