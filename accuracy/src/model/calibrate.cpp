// weights.calibrate: the activations entering every linear, captured by a float32 forward over
// the calibration text, reduced per input (q/k/v and gate/up share theirs) to what the method
// needs, then lowp::quant's importance-weighted search, GPTQ or AWQ on each weight (the cache
// of the results is model/calibration_cache.cpp).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <optional>

#include "model/llama.hpp"
#include "model/tensors.hpp"
#include "lowp/numerics/error.hpp"
#include "lowp/quant/calibrate.hpp"
#include "lowp/quant/calibrate_imatrix.hpp"
#include "lowp/quant/gemm.hpp"

namespace lowp::accuracy {

std::string gguf_linear_name(int layer, std::size_t kind) {
  if (kind >= static_cast<std::size_t>(LinearKind::classifier))
    throw Error("gguf_linear_name: no GGUF name for linear " + std::to_string(kind));
  return detail::gguf_name(detail::linear_tensor(static_cast<LinearKind>(kind)), static_cast<std::size_t>(layer));
}

namespace detail {
namespace {

constexpr std::size_t kLayerKinds = 7;  // the linears inside a layer (not the classifier)

// The input each linear reads (the table's Feed): q/k/v the attn_norm output, o the attention
// output, gate/up the ffn_norm output, down silu(gate) * up.
enum Site : std::size_t { attn_in, o_in, ffn_in, down_in, site_count };
Site site_of(std::size_t kind) {
  switch (linear_tensor(static_cast<LinearKind>(kind)).feed) {
    case Feed::attn_in: return attn_in;
    case Feed::o_in: return o_in;
    case Feed::ffn_in: return ffn_in;
    case Feed::down_in: return down_in;
    default: throw Error("calibration: linear " + std::to_string(kind) + " reads no layer activation");
  }
}

struct SiteStats {
  std::size_t k = 0, rows = 0;
  std::vector<double> sq, abs, gram;  // sum x_j^2, sum |x_j|, sum X^T X (as the method needs)
};

quant::StoredMatrix weight_of(const LlamaModel& m, std::size_t l, std::size_t kind) {
  const TensorSpec& t = linear_tensor(static_cast<LinearKind>(kind));
  return tensor_of(m, t, l).matrix(extent(m.config, t.rows), extent(m.config, t.cols));
}

std::vector<float> widened(const quant::StoredMatrix& w) {
  std::vector<float> out(w.rows * w.cols);
  quant::widen_rows(w, 0, w.rows, out.data());
  return out;
}

// The statistics of every site some quantized linear reads, from a float32 forward over the
// calibration windows. Window order and gemm_f32 make them the same bits at any thread count.
std::vector<SiteStats> capture(const LlamaModel& model, const CalibrationText& text, std::size_t ctx,
                               const std::vector<bool>& want, bool need_sq, bool need_abs, bool need_gram,
                               int threads) {
  const auto nl = model.layers.size();
  std::vector<SiteStats> st(nl * site_count);
  Recipe fp32;
  fp32.name = "fp32";
  const std::size_t T = calibration_window(model, text, ctx);
  PreparedModel pm = prepare(model, fp32, T);
  std::vector<float> tmp;
  pm.capture = [&](int l, const LinearGroup& g, const float* x, std::size_t rows) {
    if (l < 0) return;  // the classifier: not calibrated
    const std::string& p = g[0].act_points[0];
    std::size_t kind = 0;  // the group's first linear, by its act point "x.<kind>"
    while (kind < kLayerKinds && p != "x." + std::string(linear_kind_name(static_cast<LinearKind>(kind)))) ++kind;
    const Site s = site_of(kind);
    const std::size_t si = static_cast<std::size_t>(l) * site_count + s;
    if (!want[si]) return;
    SiteStats& S = st[si];
    const std::size_t k = g[0].k;
    if (S.k == 0) {
      S.k = k;
      if (need_sq) S.sq.assign(k, 0.0);
      if (need_abs) S.abs.assign(k, 0.0);
      if (need_gram) S.gram.assign(k * k, 0.0);
    }
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t j = 0; j < k; ++j) {
        const double v = x[r * k + j];
        if (need_sq) S.sq[j] += v * v;
        if (need_abs) S.abs[j] += std::fabs(v);
      }
    if (need_gram) {
      tmp.resize(k * k);
      quant::gemm_f32(x, quant::Layout::transposed, x, quant::Layout::transposed, tmp.data(), k, k, rows, false,
                      threads);
      for (std::size_t i = 0; i < k * k; ++i) S.gram[i] += tmp[i];
    }
    S.rows += rows;
  };
  run_calibration_windows(pm, text, T, threads);
  return st;
}

}  // namespace

std::size_t calibration_window(const LlamaModel& model, const CalibrationText& text, std::size_t ctx) {
  if (text.tokens.empty()) throw Error("calibration: the calibration text has no tokens");
  for (std::size_t i = 0; i < text.tokens.size(); ++i)
    if (text.tokens[i] < 0 || text.tokens[i] >= model.config.vocab_size)
      throw Error("calibration: token " + std::to_string(i) + " is id " + std::to_string(text.tokens[i]) +
                  ", outside the model's vocabulary");
  const std::size_t T = std::min(text.tokens.size(), ctx);
  if (T < 1) throw Error("calibration: windows of 0 tokens");
  return T;
}

void run_calibration_windows(const PreparedModel& pm, const CalibrationText& text, std::size_t T, int threads,
                             bool all_rows) {
  const std::size_t n = text.tokens.size();
  std::vector<float> logits(T * static_cast<std::size_t>(pm.cfg.vocab_size));
  std::vector<int> window;
  for (std::size_t start = 0; start < n; start += T) {
    const std::size_t len = std::min(T, n - start);
    window.assign(text.tokens.begin() + static_cast<std::ptrdiff_t>(start),
                  text.tokens.begin() + static_cast<std::ptrdiff_t>(start + len));
    if (text.bos >= 0) window[0] = text.bos;
    ErrorLog log;
    forward_window(pm, window, logits.data(), log, threads, all_rows ? 0 : len - 1);
  }
}

namespace {

// ---- the methods ----

struct Job {
  const LlamaModel& model;
  const Recipe& recipe;
  std::vector<SiteStats> stats;
  const quant::ImatrixFile* file = nullptr;
  CalibratedWeights out;

  std::optional<quant::QuantSpec> spec(std::size_t l, std::size_t kind) const {
    auto s = recipe.specs_at(static_cast<int>(l)).weights[kind];
    if (s && recipe.pad) s->pad = true;
    return s;
  }

  const SiteStats& site(std::size_t l, std::size_t kind) const {
    const SiteStats& s = stats[l * site_count + site_of(kind)];
    if (s.rows == 0) throw Error("recipe '" + recipe.name + "': no calibration activations reached " +
                                 gguf_linear_name(static_cast<int>(l), kind));
    return s;
  }

  void keep(std::size_t l, std::size_t kind, const std::vector<float>& ref, const quant::QuantizedTensor& q) {
    CalibratedWeight e;
    e.w.resize(ref.size());
    quant::dequantize(q, e.w.data());
    keep(l, kind, ref, std::move(e.w));
  }
  void keep(std::size_t l, std::size_t kind, const std::vector<float>& ref, std::vector<float> w) {
    CalibratedWeight e;
    e.w = std::move(w);
    const std::string point(linear_kind_name(static_cast<LinearKind>(kind)));
    ErrorLog log;
    log.add(static_cast<int>(l), point, ref.data(), e.w.data(), e.w.size());
    e.error = log.entries()[0];
    out.linears[{static_cast<int>(l), static_cast<LinearKind>(kind)}] = std::move(e);
  }

  void imatrix(std::size_t l, std::size_t kind, const quant::QuantSpec& s, const quant::StoredMatrix& m) {
    std::vector<float> imp;
    if (file) {
      const std::string name = gguf_linear_name(static_cast<int>(l), kind);
      const quant::ImatrixEntry* e = file->find(name);
      if (!e) throw Error("recipe '" + recipe.name + "': the imatrix file has no entry " + name);
      imp = e->importance();
      if (imp.size() != m.cols)
        throw Error("recipe '" + recipe.name + "': the imatrix entry " + name + " has " + std::to_string(imp.size()) +
                    " values for " + std::to_string(m.cols) + " input columns");
    } else {
      const SiteStats& S = site(l, kind);
      imp.resize(S.k);
      for (std::size_t j = 0; j < S.k; ++j) imp[j] = static_cast<float>(S.sq[j] / static_cast<double>(S.rows));
    }
    const std::vector<float> w = widened(m);
    keep(l, kind, w, quant::quantize_weighted(s, w.data(), m.rows, m.cols, imp));
  }

  void gptq(std::size_t l, std::size_t kind, const quant::QuantSpec& s, const quant::StoredMatrix& m) {
    const SiteStats& S = site(l, kind);
    std::vector<float> h(S.k * S.k);  // 2 X^T X / n, as quant::gptq_hessian
    const double f = 2.0 / static_cast<double>(S.rows);
    for (std::size_t i = 0; i < h.size(); ++i) h[i] = static_cast<float>(S.gram[i] * f);
    quant::GptqOptions o;
    o.damp = recipe.calibrate.damp;
    o.act_order = recipe.calibrate.act_order;
    o.weighted_scales = recipe.calibrate.imatrix_scales;
    const std::vector<float> w = widened(m);
    keep(l, kind, w, quant::gptq_from_hessian(s, w.data(), m.rows, m.cols, h, o));
  }

  // AWQ on one layer, as llm-awq's auto_scale + apply_scale for Llama: q/k/v scaled together
  // (1/s into attn_norm), o_proj (1/s into v_proj's output rows, only when v and o have the
  // same shape: llm-awq skips it under GQA), gate/up together (1/s into ffn_norm), down (1/s into
  // up_proj's rows). Every scale is searched on the unscaled weights, then all are applied and
  // each weight is rounded to nearest once, as llm-awq quantizes after apply_scale.
  void awq(std::size_t l) {
    const auto& c = model.config;
    std::array<std::vector<float>, kLayerKinds> w;
    std::array<std::optional<quant::QuantSpec>, kLayerKinds> sp;
    std::array<std::size_t, kLayerKinds> rows{}, cols{};
    for (std::size_t kind = 0; kind < kLayerKinds; ++kind) {
      const quant::StoredMatrix m = weight_of(model, l, kind);
      w[kind] = widened(m);
      rows[kind] = m.rows;
      cols[kind] = m.cols;
      sp[kind] = spec(l, kind);
    }
    quant::AwqOptions opt;
    opt.grid = recipe.calibrate.grid;
    // The scales of the linears `kinds` sharing one input (1 everywhere when none is quantized).
    const auto search = [&](std::initializer_list<std::size_t> kinds) -> std::vector<float> {
      std::optional<quant::QuantSpec> s;
      std::vector<quant::WeightRef> refs;
      for (std::size_t kind : kinds) {
        if (!sp[kind]) continue;
        if (s && quant::describe(*s) != quant::describe(*sp[kind]))
          throw Error("recipe '" + recipe.name + "': weights.calibrate = awq scales " +
                      gguf_linear_name(static_cast<int>(l), kind) +
                      " with the linears sharing its input: they need one weight spec, not " + quant::describe(*s) +
                      " and " + quant::describe(*sp[kind]));
        s = sp[kind];
        refs.push_back({w[kind].data(), rows[kind]});
      }
      const std::size_t k = cols[*kinds.begin()];
      if (!s) return std::vector<float>(k, 1.0f);
      const SiteStats& S = site(l, *kinds.begin());
      std::vector<double> mean(S.k);
      for (std::size_t j = 0; j < S.k; ++j) mean[j] = S.abs[j] / static_cast<double>(S.rows);
      return quant::awq_group_from_stats(*s, refs, k, mean, S.gram, opt).scales;
    };
    const std::vector<float> s_qkv = search({0, 1, 2}), s_gu = search({4, 5}), s_down = search({6});
    const bool o_scalable = c.kv_dim() == c.q_dim();
    const std::vector<float> s_o = o_scalable ? search({3}) : std::vector<float>(cols[3], 1.0f);
    const auto scale_cols = [&](std::size_t kind, const std::vector<float>& s) {
      for (std::size_t r = 0; r < rows[kind]; ++r)
        for (std::size_t j = 0; j < cols[kind]; ++j) w[kind][r * cols[kind] + j] *= s[j];
    };
    const auto divide_rows = [&](std::size_t kind, const std::vector<float>& s) {
      for (std::size_t r = 0; r < rows[kind]; ++r)
        for (std::size_t j = 0; j < cols[kind]; ++j) w[kind][r * cols[kind] + j] /= s[r];
    };
    for (std::size_t kind : {0, 1, 2}) scale_cols(kind, s_qkv);
    for (std::size_t kind : {4, 5}) scale_cols(kind, s_gu);
    scale_cols(3, s_o);
    scale_cols(6, s_down);
    divide_rows(2, s_o);
    divide_rows(5, s_down);
    const int li = static_cast<int>(l);
    const LayerWeights& L = model.layers[l];
    std::vector<float> an = L.attn_norm, fn = L.ffn_norm;
    for (std::size_t j = 0; j < an.size(); ++j) an[j] /= s_qkv[j];
    for (std::size_t j = 0; j < fn.size(); ++j) fn[j] /= s_gu[j];
    out.attn_norm[li] = std::move(an);
    out.ffn_norm[li] = std::move(fn);
    if (!L.bv.empty()) {
      std::vector<float> bv = L.bv;
      for (std::size_t j = 0; j < bv.size(); ++j) bv[j] /= s_o[j];
      out.bv[li] = std::move(bv);
    }
    // Every linear of the layer is replaced (a scaled float32 one when it is not quantized).
    for (std::size_t kind = 0; kind < kLayerKinds; ++kind) {
      if (sp[kind]) {
        keep(l, kind, w[kind], quant::quantize(*sp[kind], w[kind].data(), rows[kind], cols[kind]));
      } else {
        CalibratedWeight e;
        e.w = std::move(w[kind]);
        e.error.layer = li;
        e.error.point = "-";  // not a quantization point: prepare() records nothing for it
        out.linears[{li, static_cast<LinearKind>(kind)}] = std::move(e);
      }
    }
  }
};

// weights.calibrate's part of compute_calibrated_weights.
CalibratedWeights calibrate_weight_specs(const LlamaModel& model, const Recipe& recipe, const CalibrationText& text,
                                         std::size_t positions, int threads) {
  const CalibrateOptions& c = recipe.calibrate;
  const auto fail = [&](const std::string& why) { return Error("recipe '" + recipe.name + "': weights.calibrate = " + std::string(calib_method_name(c.method)) + ": " + why); };
  if (recipe.quarot) throw fail("QuaRot's rotations are not supported with calibration (the activations would have to be captured rotated)");
  if (!recipe.linear.empty()) throw fail("a linear preset ('" + recipe.linear + "') is not supported with calibration; use weights.* specs");
  if (!text.imatrix_file.empty() && c.method != CalibMethod::imatrix) throw fail("an imatrix file (--imatrix) is for weights.calibrate = imatrix");
  const std::size_t ctx = text.ctx > 0 ? static_cast<std::size_t>(text.ctx) : positions;
  const auto nl = model.layers.size();
  Job job{model, recipe, {}, nullptr, {}};
  std::vector<bool> want(nl * site_count, false);
  bool any = false;
  for (std::size_t l = 0; l < nl; ++l)
    for (std::size_t kind = 0; kind < kLayerKinds; ++kind)
      if (job.spec(l, kind)) any = want[l * site_count + site_of(kind)] = true;
  if (!any) return {};
  quant::ImatrixFile file;
  if (!text.imatrix_file.empty()) {
    file = quant::read_imatrix(text.imatrix_file);
    job.file = &file;
  } else {
    job.stats = capture(model, text, ctx, want, c.method == CalibMethod::imatrix, c.method == CalibMethod::awq,
                        c.method != CalibMethod::imatrix, threads);
  }
  try {
    for (std::size_t l = 0; l < nl; ++l) {
      if (c.method == CalibMethod::awq) {
        job.awq(l);
        continue;
      }
      for (std::size_t kind = 0; kind < kLayerKinds; ++kind) {
        const auto s = job.spec(l, kind);
        if (!s) continue;
        const quant::StoredMatrix m = weight_of(model, l, kind);
        if (c.method == CalibMethod::imatrix) job.imatrix(l, kind, *s, m);
        else job.gptq(l, kind, *s, m);
      }
    }
  } catch (const Error& e) {
    const std::string w = e.what();
    if (w.starts_with("recipe '")) throw;
    throw fail(w);
  }
  return std::move(job.out);
}

}  // namespace

CalibratedWeights compute_calibrated_weights(const LlamaModel& model, const Recipe& recipe, const CalibrationText& text,
                                             std::size_t positions, int threads) {
  CalibratedWeights cw;
  if (recipe.calibrate.method != CalibMethod::none) cw = calibrate_weight_specs(model, recipe, text, positions, threads);
  if (recipe.static_scales()) cw.static_amax = compute_static_amax(model, recipe, text, cw, threads);
  return cw;
}

}  // namespace detail

std::map<std::string, std::vector<float>> importance_matrix(const LlamaModel& model, const CalibrationText& text,
                                                            int ctx, int threads) {
  validate(model);
  const auto nl = model.layers.size();
  const std::vector<bool> want(nl * detail::site_count, true);
  const std::size_t T = text.ctx > 0 ? static_cast<std::size_t>(text.ctx) : static_cast<std::size_t>(std::max(ctx, 1));
  const auto st = detail::capture(model, text, T, want, true, false, false, threads);
  std::map<std::string, std::vector<float>> out;
  for (std::size_t l = 0; l < nl; ++l)
    for (std::size_t kind = 0; kind < detail::kLayerKinds; ++kind) {
      const detail::SiteStats& S = st[l * detail::site_count + detail::site_of(kind)];
      std::vector<float> v(S.k);
      for (std::size_t j = 0; j < S.k; ++j) v[j] = static_cast<float>(S.sq[j] / static_cast<double>(S.rows));
      out[gguf_linear_name(static_cast<int>(l), kind)] = std::move(v);
    }
  return out;
}

std::string missing_calibration(const Recipe& r, const CalibrationText* text) {
  if (r.is_identity()) return {};
  if (r.calibrate.method != CalibMethod::none && !text)
    return "weights.calibrate = " + std::string(calib_method_name(r.calibrate.method));
  if (!r.static_scales() || (text && !text->tokens.empty())) return {};
  return r.act_scale.fixed ? "act.scale = " + scale_source_text(r.act_scale) : "attn.scale = " + scale_source_text(r.attn_scale);
}

}  // namespace lowp::accuracy
