// The tensor sweep's passes: rotate, fake-quantize, rotate back, measure.
#include <omp.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "dist/bytes.hpp"
#include "dist/comm.hpp"
#include "lowp/accuracy/tensor_sweep.hpp"
#include "lowp/formats/registry.hpp"
#include "lowp/hadamard/rotation.hpp"
#include "lowp/numerics/error.hpp"
#include "lowp/quant/quantize.hpp"

namespace lowp::accuracy {
namespace {

constexpr SweepRotation kRotations[] = {SweepRotation::none, SweepRotation::hadamard, SweepRotation::block32};
constexpr std::size_t kRotationBlock = 32;
// The sweep holds five copies of the tensor (data, three rotations, work): 32M values is 640 MB.
constexpr std::size_t kMaxValues = max_tensor_sweep_values;

std::string granularity_text(const quant::QuantSpec& s) {
  switch (s.granularity) {
    case quant::Granularity::tensor: return "tensor";
    case quant::Granularity::row: return "row";
    case quant::Granularity::column: return "col";
    // (append, not "b" + to_string: GCC 12 warns falsely on the latter, -Wrestrict)
    case quant::Granularity::block: return std::string("b").append(std::to_string(s.block));
    case quant::Granularity::tile: return std::string("t").append(std::to_string(s.block));
  }
  return "?";
}

// The rule names of the spec syntax (quantize.hpp).
std::string scale_text(quant::ScaleRule r) { return std::string(quant::rule_name(r)); }

hadamard::Rotation make_rotation(SweepRotation r, std::size_t cols, std::uint64_t seed) {
  hadamard::Rotation rot;
  rot.size = cols;
  switch (r) {
    case SweepRotation::none: rot.kind = hadamard::RotationKind::none; break;
    case SweepRotation::hadamard:
      rot.kind = hadamard::RotationKind::randomized;
      rot.seed = seed;
      break;
    case SweepRotation::block32:
      rot.kind = hadamard::RotationKind::block_diagonal;
      rot.block = kRotationBlock;
      break;
  }
  return rot;
}

struct Pass {
  std::string text;
  quant::QuantSpec spec;
};

// Errors of y against x, in double.
void measure(const std::vector<float>& x, const std::vector<float>& y, TensorSweepRow& row) {
  double signal = 0, noise = 0, max_err = 0;
  std::size_t counted = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (!std::isfinite(y[i])) {
      ++row.nonfinite;
      continue;
    }
    const double xi = x[i], e = static_cast<double>(y[i]) - xi;
    signal += xi * xi;
    noise += e * e;
    max_err = std::max(max_err, std::fabs(e));
    ++counted;
  }
  row.sqnr_db = 10.0 * std::log10(signal / noise);  // +inf for an exact pass
  row.mse = counted ? noise / static_cast<double>(counted) : std::nan("");
  row.max_abs_error = counted ? max_err : std::nan("");
}

}  // namespace

std::span<const SweepRotation> all_sweep_rotations() { return kRotations; }

std::string_view rotation_name(SweepRotation r) {
  switch (r) {
    case SweepRotation::none: return "none";
    case SweepRotation::hadamard: return "hadamard";
    case SweepRotation::block32: return "block32";
  }
  return "?";
}

SweepRotation parse_sweep_rotation(std::string_view name) {
  std::string names;
  for (auto r : kRotations) {
    if (rotation_name(r) == name) return r;
    names += (names.empty() ? "" : ", ") + std::string(rotation_name(r));
  }
  throw Error("unknown rotation '" + std::string(name) + "'; valid names: " + names);
}

std::vector<std::string> default_tensor_sweep_specs() {
  return {
      // FP8: per-tensor and per-row amax (torchao), DeepSeek's 1 x 128, a float32 scale per 32
      // against MX's E8M0 one, and NVFP4-sized blocks.
      "e4m3:tensor", "e4m3:row", "e4m3:b128", "e4m3:b32", "mxfp8", "e4m3:b16",
      "e5m2:tensor", "e5m2:row", "e5m2:b32:mx",
      "e4m3fnuz:tensor", "e4m3fnuz:row", "e5m2fnuz:tensor", "e5m2fnuz:row",
      // FP6 (MX element types).
      "e2m3:tensor", "e2m3:row", "mxfp6", "e3m2:tensor", "e3m2:row", "e3m2:b32:mx",
      // FP4: MXFP4 (E8M0 per 32) and NVFP4 (UE4M3 per 16 + float32) against float32 scales.
      "e2m1:tensor", "e2m1:row", "e2m1:b32", "mxfp4", "e2m1:b16", "nvfp4",
      // Integers with absmax scales (LLM.int8(), SwitchBack).
      "int8:tensor", "int8:row", "int8:b32", "int4:tensor", "int4:row", "int4:b32", "int4:b16",
      // 16-bit casts, unscaled ("fp16" alone would scale amax onto 65504).
      "bf16", "fp16:none",
  };
}

std::vector<TensorSweepRow> run_tensor_sweep(const TensorSweepOptions& opt) {
  const std::size_t rows = opt.rows, cols = opt.cols;
  if (rows == 0 || cols == 0)
    throw Error("tensor sweep: empty shape " + std::to_string(rows) + " x " + std::to_string(cols));
  if (rows > kMaxValues / cols)
    throw Error("tensor sweep: shape " + std::to_string(rows) + " x " + std::to_string(cols) + " exceeds the limit of " +
                std::to_string(kMaxValues) + " values");
  const auto spec_texts = opt.specs.empty() ? default_tensor_sweep_specs() : opt.specs;
  const std::vector<Distribution> dists =
      opt.distributions.empty() ? std::vector<Distribution>(all_distributions().begin(), all_distributions().end())
                                : opt.distributions;
  const std::vector<SweepRotation> rots = opt.rotations.empty()
                                              ? std::vector<SweepRotation>(std::begin(kRotations), std::end(kRotations))
                                              : opt.rotations;

  if (opt.threads < 0) throw Error("tensor sweep: threads must be >= 0, not " + std::to_string(opt.threads));
  // The kernels' OpenMP teams follow nthreads-var: bounded for this sweep, restored after.
  struct Threads {
    int saved = omp_get_max_threads();
    explicit Threads(int n) {
      if (n > 0) omp_set_num_threads(n);
    }
    ~Threads() { omp_set_num_threads(saved); }
  } threads(opt.threads);

  // Everything that can be refused is refused before the first pass.
  std::vector<Pass> passes;
  for (const auto& t : spec_texts) {
    Pass p{t, quant::parse_quant_spec(t)};
    quant::check_shape(p.spec, rows, cols);
    passes.push_back(std::move(p));
  }
  std::vector<hadamard::Rotation> rotations;
  for (auto r : rots) {
    rotations.push_back(make_rotation(r, cols, opt.seed));
    try {
      rotations.back().validate();
    } catch (const Error& e) {
      throw Error("tensor sweep: rotation " + std::string(rotation_name(r)) + " on rows of " + std::to_string(cols) +
                  ": " + e.what());
    }
  }

  // Under mpirun the (distribution, spec) pairs, each with every rotation, are split across the
  // ranks in contiguous shares; rank 0 appends the shares in rank order, which is this order.
  const std::size_t units = dists.size() * passes.size();
  const dist::Range share = dist::share(units, dist::rank(), dist::size());
  const std::size_t total = (share.end - share.begin) * rots.size();
  std::vector<TensorSweepRow> out;
  out.reserve(total);
  std::vector<float> y(rows * cols);
  std::vector<float> x;
  std::vector<std::vector<float>> rotated;  // the rotated data once per rotation, shared by every spec
  std::size_t have = dists.size();          // the distribution x and rotated hold
  for (std::size_t u = share.begin; u < share.end; ++u) {
    const std::size_t di = u / passes.size();
    const Distribution d = dists[di];
    if (di != have) {
      x = generate_distribution(d, rows, cols, opt.seed);
      rotated.clear();
      for (const auto& rot : rotations) {
        rotated.push_back(x);
        rot.apply(rotated.back().data(), rows, cols);
      }
      have = di;
    }
    const Pass& p = passes[u % passes.size()];
    const double bits = quant::bits_per_element(p.spec, rows, cols);
    for (std::size_t k = 0; k < rots.size(); ++k) {
      y = rotated[k];
      quant::fake_quant(p.spec, y.data(), rows, cols);
      rotations[k].apply_inverse(y.data(), rows, cols);
      TensorSweepRow row;
      row.distribution = distribution_name(d);
      row.spec = p.text;
      row.format = format_name(p.spec.format);
      row.granularity = granularity_text(p.spec);
      row.scale = scale_text(p.spec.rule);
      row.rotation = rotation_name(rots[k]);
      row.bits_per_element = bits;
      measure(x, y, row);
      out.push_back(std::move(row));
      if (opt.progress) opt.progress(out.size(), total);
    }
  }
  if (dist::size() == 1) return out;

  dist::ByteWriter w;
  for (const auto& r : out) {
    for (const std::string* f : {&r.distribution, &r.spec, &r.format, &r.granularity, &r.scale, &r.rotation}) w.str(*f);
    for (const double v : {r.bits_per_element, r.sqnr_db, r.mse, r.max_abs_error}) w.pod(v);
    w.pod<std::uint64_t>(r.nonfinite);
  }
  const auto all = dist::gather_to_root(w.out);
  out.clear();
  for (const auto& bytes : all) {
    dist::ByteReader rd(bytes, "tensor sweep: a rank's results are malformed");
    while (!rd.done()) {
      TensorSweepRow r;
      for (std::string* f : {&r.distribution, &r.spec, &r.format, &r.granularity, &r.scale, &r.rotation}) *f = rd.str();
      for (double* v : {&r.bits_per_element, &r.sqnr_db, &r.mse, &r.max_abs_error}) *v = rd.pod<double>();
      r.nonfinite = static_cast<std::size_t>(rd.pod<std::uint64_t>());
      out.push_back(std::move(r));
    }
  }
  return out;
}

}  // namespace lowp::accuracy
