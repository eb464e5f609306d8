// bench_quant's main(): runs the benchmarks with the reporter --benchmark_format asks for (so
// --benchmark_format=json still writes plain JSON to stdout), remembers each result, then
// prints the ratios the targets are stated in as a small table on stderr.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace {

struct Result {
  double seconds = 0;  // adjusted CPU time per iteration
  double items = 0;    // items_per_second (0: not reported)
  double bytes = 0;    // bytes_per_second (0: not reported)
};

// Forwards everything to the default display reporter and keeps a copy of each run (the
// median when repetitions produce aggregates).
class Recorder : public benchmark::BenchmarkReporter {
 public:
  Recorder() : inner_(benchmark::CreateDefaultDisplayReporter()) {}
  bool ReportContext(const Context& c) override { return inner_->ReportContext(c); }
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      if (r.error_occurred) continue;
      const bool aggregate = r.run_type == Run::RT_Aggregate;
      if (aggregate && r.aggregate_name != "median") continue;
      Result x;
      x.seconds = r.GetAdjustedCPUTime() / benchmark::GetTimeUnitMultiplier(r.time_unit);  // seconds
      if (auto it = r.counters.find("items_per_second"); it != r.counters.end())
        x.items = it->second;
      if (auto it = r.counters.find("bytes_per_second"); it != r.counters.end())
        x.bytes = it->second;
      const std::string name = r.run_name.str();
      if (aggregate || !results.count(name) || !medians_.count(name)) results[name] = x;
      if (aggregate) medians_[name] = true;
    }
    inner_->ReportRuns(runs);
  }
  void Finalize() override { inner_->Finalize(); }
  std::map<std::string, Result> results;

 private:
  std::unique_ptr<benchmark::BenchmarkReporter> inner_;
  std::map<std::string, bool> medians_;
};

bool starts_with(const std::string& s, const std::string& p) {
  return s.compare(0, p.size(), p) == 0;
}

// The rate a run reports: bytes/s if any, else items/s, else iterations/s.
double rate(const Result& r) {
  return r.bytes > 0 ? r.bytes : r.items > 0 ? r.items : 1.0 / r.seconds;
}

void print_ratios(const std::map<std::string, Result>& res) {
  std::vector<std::string> lines;
  char buf[256];
  // GEMMs: int8 / f32 and int8 / onednn s8s8, f32 / onednn f32, for each shape and thread count.
  const std::pair<const char*, std::vector<const char*>> pairs[] = {
      {"BM_gemm_int8/", {"BM_gemm_f32/", "BM_gemm_onednn_s8s8/"}},
      {"BM_gemm_f32/", {"BM_gemm_onednn_f32/"}},
      {"BM_gemm_f32_bf16_weights/", {"BM_gemm_f32/"}},
      // gemm_emulated's fast paths against its exact path (speed-up).
      {"BM_gemm_emulated_scalar/", {"BM_gemm_emulated_exact/"}},
      {"BM_gemm_emulated_avx2/", {"BM_gemm_emulated_exact/"}},
      {"BM_gemm_emulated/", {"BM_gemm_emulated_exact/"}}};
  for (const auto& [mine, others] : pairs)
  for (const auto& [name, ours] : res) {
    if (!starts_with(name, mine)) continue;
    const std::string args = name.substr(std::string(mine).size());
    for (const char* other : others) {
      const auto it = res.find(other + args);
      if (it == res.end() || it->second.items <= 0) continue;
      std::snprintf(buf, sizeof buf, "%-34s %8.1f G/s  vs %-34s %8.1f G/s  ratio %5.2f",
                    name.c_str(), ours.items * 1e-9, it->first.c_str(), it->second.items * 1e-9,
                    ours.items / it->second.items);
      lines.emplace_back(buf);
    }
  }
  // gemm_emulated against the float32 GEMM on the same operands (too small for "%5.2f").
  for (const auto& [name, r] : res) {
    if (!starts_with(name, "BM_gemm_emulated")) continue;
    const auto it = res.find("BM_gemm_f32_emushape" + name.substr(name.find('/')));
    if (it == res.end() || it->second.items <= 0 || r.items <= 0) continue;
    std::snprintf(buf, sizeof buf, "%-34s %8.3f G/s  vs %-34s %8.1f G/s  ratio %.5f (1/%.0f)",
                  name.c_str(), r.items * 1e-9, it->first.c_str(), it->second.items * 1e-9,
                  r.items / it->second.items, it->second.items / r.items);
    lines.emplace_back(buf);
  }
  // Linear-layer steps: speed-up over the fp32 step (time_fp32 / time).
  for (const auto& [name, r] : res) {
    if (!starts_with(name, "BM_linear_step_") || starts_with(name, "BM_linear_step_fp32")) continue;
    const std::string args =
        name.substr(name.find('/') == std::string::npos ? name.size() : name.find('/'));
    auto it = res.find("BM_linear_step_fp32" + args);
    if (it == res.end()) continue;
    std::snprintf(buf, sizeof buf, "%-34s %8.1f ms    vs %-34s %8.1f ms    speed-up %5.2f",
                  name.c_str(), r.seconds * 1e3, it->first.c_str(), it->second.seconds * 1e3,
                  it->second.seconds / r.seconds);
    lines.emplace_back(buf);
  }
  // Quantize / dequantize against memcpy of the same size (same arguments, else the only one).
  for (const auto& [name, r] : res) {
    if (!starts_with(name, "BM_quantize_") && !starts_with(name, "BM_dequantize_")) continue;
    const auto slash = name.find('/');
    const std::string args = slash == std::string::npos ? "" : name.substr(slash);
    auto it = res.find("BM_memcpy_f32" + args);
    if (it == res.end()) {
      it = res.end();
      for (auto j = res.begin(); j != res.end(); ++j)
        if (starts_with(j->first, "BM_memcpy_f32")) it = j;
    }
    if (it == res.end()) continue;
    std::snprintf(buf, sizeof buf, "%-34s %8.2f G/s  vs %-34s %8.2f G/s  ratio %5.2f", name.c_str(),
                  rate(r) * 1e-9, it->first.c_str(), rate(it->second) * 1e-9,
                  rate(r) / rate(it->second));
    lines.emplace_back(buf);
  }
  if (lines.empty()) return;
  std::fprintf(
      stderr,
      "\nRatios (items/s of the benchmark thread's CPU time; quantize: bytes/s if reported)\n");
  for (const auto& l : lines) std::fprintf(stderr, "%s\n", l.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  Recorder recorder;
  benchmark::RunSpecifiedBenchmarks(&recorder);
  benchmark::Shutdown();
  print_ratios(recorder.results);
  return 0;
}
