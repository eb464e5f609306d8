// The calibrated-weights cache (eval/calibration_cache.hpp).
#include "model/calibration_cache.hpp"

#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include <unistd.h>

#include "file/atomic_file.hpp"
#include "lowp/numerics/error.hpp"

namespace lowp::accuracy::detail {
namespace {

constexpr std::size_t kLayerKinds = 7;  // the linears inside a layer (not the classifier)

std::uint64_t fnv1a(const void* data, std::size_t n, std::uint64_t h = 1469598103934665603ull) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

std::string hex(std::uint64_t v) {
  char b[17];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(v));
  return b;
}


// ---- the cache file: magic, key, entries, FNV-1a of everything before it ----

constexpr char kMagic[8] = {'l', 'o', 'w', 'p', 'c', 'a', 'l', '1'};

template <class T>
void put(std::string& b, const T& v) {
  b.append(reinterpret_cast<const char*>(&v), sizeof v);
}

void put_vec(std::string& b, const std::vector<float>& v) {
  put(b, static_cast<std::uint64_t>(v.size()));
  b.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

std::string serialize(const std::string& key, const CalibratedWeights& cw) {
  std::string b(kMagic, sizeof kMagic);
  put(b, static_cast<std::uint64_t>(key.size()));
  b += key;
  put(b, static_cast<std::uint64_t>(cw.linears.size()));
  for (const auto& [id, e] : cw.linears) {
    put(b, static_cast<std::int32_t>(id.first));
    put(b, static_cast<std::int32_t>(id.second));
    put(b, e.error.signal);
    put(b, e.error.noise);
    put(b, static_cast<std::uint64_t>(e.error.count));
    put(b, static_cast<std::uint64_t>(e.error.nonfinite));
    put_vec(b, e.w);
  }
  for (const auto* m : {&cw.attn_norm, &cw.ffn_norm, &cw.bv}) {
    put(b, static_cast<std::uint64_t>(m->size()));
    for (const auto& [l, v] : *m) {
      put(b, static_cast<std::int32_t>(l));
      put_vec(b, v);
    }
  }
  // Static scales, only when there are some: a weights-only file is as before them.
  if (!cw.static_amax.empty()) put(b, static_cast<std::uint64_t>(cw.static_amax.size()));
  for (const auto& [id, amax] : cw.static_amax) {
    put(b, static_cast<std::int32_t>(id.first));
    put(b, static_cast<std::uint64_t>(id.second.size()));
    b.append(id.second.data(), id.second.size());
    put(b, amax);
  }
  put(b, fnv1a(b.data(), b.size()));
  return b;
}

class Reader {
 public:
  explicit Reader(const std::string& b) : b_(b) {}
  template <class T>
  T get() {
    T v{};
    need(sizeof v);
    std::memcpy(&v, b_.data() + at_, sizeof v);
    at_ += sizeof v;
    return v;
  }
  std::vector<float> vec() {
    const auto n = get<std::uint64_t>();
    if (n > (b_.size() - at_) / sizeof(float)) throw Error("truncated");
    std::vector<float> v(n);
    std::memcpy(v.data(), b_.data() + at_, n * sizeof(float));
    at_ += n * sizeof(float);
    return v;
  }
  std::string str(std::size_t n) {
    need(n);
    std::string s = b_.substr(at_, n);
    at_ += n;
    return s;
  }
  bool done() const { return at_ == b_.size(); }

 private:
  void need(std::size_t n) const {
    if (n > b_.size() - at_) throw Error("truncated");
  }
  const std::string& b_;
  std::size_t at_ = 0;
};

// The cached weights of `key`, or why not (a mismatch of the key is a collision: not used).
bool deserialize(const std::string& b, const std::string& key, CalibratedWeights& cw, std::string& why) {
  try {
    if (b.size() < sizeof kMagic + 8 || std::memcmp(b.data(), kMagic, sizeof kMagic) != 0) throw Error("not a lowp calibration cache file");
    std::uint64_t sum = 0;
    std::memcpy(&sum, b.data() + b.size() - 8, 8);
    if (fnv1a(b.data(), b.size() - 8) != sum) throw Error("checksum mismatch");
    const std::string body = b.substr(sizeof kMagic, b.size() - 8 - sizeof kMagic);
    Reader r(body);
    if (r.str(static_cast<std::size_t>(r.get<std::uint64_t>())) != key) throw Error("written for another key");
    const auto n = r.get<std::uint64_t>();
    for (std::uint64_t i = 0; i < n; ++i) {
      const int l = r.get<std::int32_t>();
      const auto kind = r.get<std::int32_t>();
      if (kind < 0 || kind >= static_cast<std::int32_t>(kLayerKinds)) throw Error("bad linear kind");
      CalibratedWeight e;
      e.error.layer = l;
      e.error.point = std::string(linear_kind_name(static_cast<LinearKind>(kind)));
      e.error.signal = r.get<double>();
      e.error.noise = r.get<double>();
      e.error.count = static_cast<std::size_t>(r.get<std::uint64_t>());
      e.error.nonfinite = static_cast<std::size_t>(r.get<std::uint64_t>());
      e.w = r.vec();
      cw.linears[{l, static_cast<LinearKind>(kind)}] = std::move(e);
    }
    for (auto* m : {&cw.attn_norm, &cw.ffn_norm, &cw.bv}) {
      const auto c = r.get<std::uint64_t>();
      for (std::uint64_t i = 0; i < c; ++i) {
        const int l = r.get<std::int32_t>();
        (*m)[l] = r.vec();
      }
    }
    if (!r.done()) {
      const auto c = r.get<std::uint64_t>();
      for (std::uint64_t i = 0; i < c; ++i) {
        const int l = r.get<std::int32_t>();
        std::string point = r.str(static_cast<std::size_t>(r.get<std::uint64_t>()));
        cw.static_amax[{l, std::move(point)}] = r.get<float>();
      }
    }
    if (!r.done()) throw Error("trailing bytes");
  } catch (const Error& e) {
    why = e.what();
    cw = {};
    return false;
  }
  return true;
}


// Everything that decides the result, as text.
std::string cache_key(const LlamaModel& model, const Recipe& r, const CalibrationText& t, std::size_t ctx,
                      const std::string& imatrix_bytes) {
  std::ostringstream k;
  const CalibrateOptions& c = r.calibrate;
  k << "model " << t.model_id << "\n";
  k << "tokens " << t.tokens.size() << " fnv " << hex(fnv1a(t.tokens.data(), t.tokens.size() * sizeof(int)))
    << " bos " << t.bos << " ctx " << ctx << "\n";
  k << "method " << calib_method_name(c.method);
  if (c.method == CalibMethod::gptq)
    k << " damp " << hex(std::bit_cast<std::uint64_t>(c.damp)) << " act_order " << c.act_order << " scales "
      << (c.imatrix_scales ? "imatrix" : "rule");
  if (c.method == CalibMethod::awq) k << " grid " << c.grid;
  if (c.method == CalibMethod::imatrix && !t.imatrix_file.empty())
    k << " file " << hex(fnv1a(imatrix_bytes.data(), imatrix_bytes.size()));
  k << "\n";
  for (std::size_t l = 0; l < model.layers.size(); ++l) {
    const LayerSpecs s = r.specs_at(static_cast<int>(l));
    for (std::size_t kind = 0; kind < kLayerKinds; ++kind)
      if (s.weights[kind]) k << l << "." << linear_kind_name(static_cast<LinearKind>(kind)) << " " << quant::describe(*s.weights[kind]) << (r.pad ? " pad" : "") << "\n";
  }
  if (r.static_scales()) {  // every point before a static one decides what it sees: the whole recipe
    Recipe bare = r;
    bare.name.clear();
    bare.note.clear();
    k << "static scales, windows of " << static_scale_ctx(model, t) << "\n" << to_text(bare);
  }
  return k.str();
}

std::string read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return {};
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}


}  // namespace

CalibratedWeights calibrate_weights(const LlamaModel& model, const Recipe& recipe, const CalibrationText& text,
                                    std::size_t positions, int threads) {
  if (text.cache_dir.empty() || text.model_id.empty()) return compute_calibrated_weights(model, recipe, text, positions, threads);
  const std::size_t ctx = text.ctx > 0 ? static_cast<std::size_t>(text.ctx) : positions;
  const std::string imatrix_bytes = text.imatrix_file.empty() ? std::string() : read_all(text.imatrix_file);
  const std::string key = cache_key(model, recipe, text, ctx, imatrix_bytes);
  const std::string path = (std::filesystem::path(text.cache_dir) / (hex(fnv1a(key.data(), key.size())) + ".lowpcal")).string();
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) {
    CalibratedWeights cw;
    std::string why;
    if (deserialize(read_all(path), key, cw, why)) return cw;
    if (text.warn) text.warn("calibration cache " + path + " ignored (" + why + "): recomputing");
  }
  CalibratedWeights cw = compute_calibrated_weights(model, recipe, text, positions, threads);
  std::filesystem::create_directories(text.cache_dir, ec);
  try {  // atomic, and safe against another process writing the same entry (a sweep's MPI ranks)
    const std::string own = path + "." + std::to_string(::getpid());
    write_file_atomic(own, serialize(key, cw));
    std::filesystem::rename(own, path, ec);
    if (ec) throw Error("cannot rename " + own + " to " + path + ": " + ec.message());
  } catch (const Error& e) {
    if (text.warn) text.warn(std::string("calibration cache not written: ") + e.what());
  }
  return cw;
}

}  // namespace lowp::accuracy::detail
