// prepare(): the recipe's offline part. Rotations folded into the weights, each weight
// quantized once, and the linears grouped into as few GEMMs as their input quantization allows.
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

#include "model/layers.hpp"
#include "model/llama.hpp"
#include "model/tensors.hpp"
#include "lowp/accuracy/memory.hpp"
#include "lowp/formats/bulk.hpp"
#include "lowp/quant/interleaved_rows.hpp"
#include "lowp/numerics/error.hpp"

namespace lowp::accuracy::detail {
namespace {

using quant::QuantSpec;

struct Member {
  LinearKind kind;
  quant::StoredMatrix w;  // n x k, float32 in memory or mapped in its stored type
  std::size_t n;
};

quant::StoredMatrix f32_view(const std::vector<float>& v, std::size_t rows, std::size_t cols) {
  return {quant::StoredType::f32, v.data(), rows, cols};
}

std::vector<float> widened(const quant::StoredMatrix& w) {
  std::vector<float> out(w.rows * w.cols);
  quant::widen_rows(w, 0, w.rows, out.data());
  return out;
}

std::string spec_key(const std::optional<QuantSpec>& s) { return s ? quant::describe(*s) : "-"; }

std::string shape_text(std::size_t rows, std::size_t cols) {
  return std::to_string(rows) + "x" + std::to_string(cols);
}

class Preparer {
 public:
  Preparer(PreparedModel& pm, const quant::LinearRecipe* preset, const CalibratedWeights* calibrated, bool pack,
           bool interleave)
      : pm_(pm), preset_(preset), calibrated_(calibrated), pack_(pack), interleave_(interleave) {}

  // The linears of `members` (all reading the same T x k input), outputs concatenated. A
  // decoder's one-row products read interleaved copies (one stream per group, the same bits):
  // of a packed weight, which they read instead of the float32 one; of the model's own rows
  // (float32, and block-coded ones whose type has an interleaved dot), which its windows (the
  // prompt) read too, so that the model's rows are read once.
  LinearGroup group(std::span<const Member> members, std::size_t k, int layer) {
    LinearGroup g = linears(members, k, layer);
    for (Linear& L : g) {
      // The model's weight, as stored (act.ggml's integer dots read its rows as they are).
      const bool model_rows = !L.packed && L.own.empty() && !L.engine && !L.int_act;
      if (!interleave_ || !(L.packed || model_rows)) continue;
      const quant::StoredMatrix& m = L.packed ? L.packed->matrix() : L.weight;
      if (!quant::InterleavedRows::fits(m)) continue;
      L.interleaved = std::make_unique<const quant::InterleavedRows>(m);
      if (model_rows) L.weight = L.interleaved->matrix();
    }
    return g;
  }

 private:
  LinearGroup linears(std::span<const Member> members, std::size_t k, int layer) {
    const bool in_layer = members[0].kind != LinearKind::classifier;
    const quant::LinearRecipe* preset = in_layer ? preset_ : nullptr;
    LinearGroup g;
    if (preset && preset->engine == quant::LinearEngine::switchback_int8) return switchback(members, k, layer, *preset);
    hadamard::Rotation rot;
    if (preset && preset->fwd.rotation != hadamard::RotationKind::none)
      rot = {preset->fwd.rotation, k, preset->fwd.rotation_block, 0};
    if (rot.kind != hadamard::RotationKind::none) check(rot, "rotation", layer);

    const LayerSpecs specs = pm_.recipe.specs_at(layer);  // layer.<N>.* over the recipe-wide keys
    std::vector<Linear> parts;
    for (const Member& m : members) {
      const auto kind = static_cast<std::size_t>(m.kind);
      Linear L;
      L.act_points = {"x." + std::string(linear_kind_name(m.kind))};
      L.n = m.n;
      L.k = k;
      L.act = specs.act[kind] ? specs.act[kind] : (preset ? preset->fwd.a : std::nullopt);
      L.rot = rot;
      auto wspec = specs.weights[kind] ? specs.weights[kind] : (preset ? preset->fwd.b : std::nullopt);
      if (pm_.recipe.pad) {
        if (wspec) wspec->pad = true;
        if (L.act) L.act->pad = true;
      }
      const CalibratedWeight* cal = calibrated_ && in_layer ? calibrated_->find(layer, m.kind) : nullptr;
      if (cal) {  // weights.calibrate: computed (or cached) by calibrate_weights()
        L.own = cal->w;
        if (wspec) pm_.weight_errors.push_back(cal->error);
        L.w = L.own.data();
        L.weight = f32_view(L.own, m.n, k);
      } else if (wspec || rot.kind != hadamard::RotationKind::none) {
        L.own = widened(m.w);
        if (rot.kind != hadamard::RotationKind::none) rot.fold_into_weight(L.own.data(), m.n, k);
        if (wspec) L.packed = quantize_weight(*wspec, L.own, m.n, k, std::string(linear_kind_name(m.kind)), layer);
        L.w = L.own.data();
        L.weight = f32_view(L.own, m.n, k);
      } else {
        L.weight = m.w;
        if (m.w.type == quant::StoredType::f32 && !m.w.row_map) L.w = static_cast<const float*>(m.w.data);
        if (pm_.recipe.act_ggml) ggml_activation(L, m, layer);
      }
      parts.push_back(std::move(L));
    }
    // One GEMM for all when every input is quantized the same way and the weights are this
    // recipe's own copies. The model's own weights are not copied to fuse them: gemm_f32 gives
    // every output element the same bits whatever the number of columns computed with it.
    bool same = true;
    for (const auto& p : parts) same = same && spec_key(p.act) == spec_key(parts[0].act) && !p.own.empty();
    if (!same || parts.size() == 1) return parts;
    Linear fused;
    fused.k = k;
    fused.act = parts[0].act;
    fused.rot = rot;
    for (auto& p : parts) {
      fused.act_points.push_back(p.act_points[0]);
      fused.own.insert(fused.own.end(), p.w, p.w + p.n * k);
      fused.n += p.n;
    }
    fused.w = fused.own.data();
    fused.weight = f32_view(fused.own, fused.n, k);
    std::vector<const quant::PackedWeight*> packed;
    for (const auto& p : parts)
      if (p.packed) packed.push_back(&*p.packed);
    if (packed.size() == parts.size()) fused.packed = quant::PackedWeight::concat(packed);
    g.push_back(std::move(fused));
    return g;
  }

  // act.ggml: what llama.cpp's CPU backend makes of this weight's input, by the weight's type
  // (its vec_dot_type): F32 none, F16 and BF16 a cast (the product is then a float one), block
  // types their integer product (Q8_K or Q8_0 activations).
  void ggml_activation(Linear& L, const Member& m, int layer) {
    switch (m.w.type) {
      case quant::StoredType::f32: return;
      case quant::StoredType::f16: L.act = quant::parse_quant_spec("fp16"); return;
      case quant::StoredType::bf16: L.act = quant::parse_quant_spec("bf16"); return;
      case quant::StoredType::custom: break;
    }
    if (!m.w.act_product)
      throw Error("recipe '" + pm_.recipe.name + "': act.ggml: " + std::string(linear_kind_name(m.kind)) +
                  (layer >= 0 ? " of layer " + std::to_string(layer) : "") + " is stored as " +
                  (m.w.name ? m.w.name : std::string("a float32 copy")) +
                  ", which lowp has no integer product for (it has Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL and IQ4_XS)");
    L.int_act = true;
  }

  // SwitchBack runs through QuantLinear's int8 GEMM, one layer per weight (its per-tensor W
  // scale must not span q, k and v); the error attribution quantizes copies with its specs.
  LinearGroup switchback(std::span<const Member> members, std::size_t k, int layer, const quant::LinearRecipe& preset) {
    LinearGroup g;
    for (const Member& m : members) {
      Linear L;
      L.k = k;
      L.n = m.n;
      L.act = preset.fwd.a;
      L.act_points = {"x." + std::string(linear_kind_name(m.kind))};
      std::vector<float> w = widened(m.w);
      if (preset.fwd.b) {
        std::vector<float> copy = w;
        quantize_weight(*preset.fwd.b, copy, m.n, k, std::string(linear_kind_name(m.kind)), layer);
      }
      L.engine = std::make_unique<quant::QuantLinear>(preset, k, m.n, false);
      L.engine->weight() = std::move(w);
      L.engine->invalidate_weight_cache();
      g.push_back(std::move(L));
    }
    return g;
  }

  // w <- fake_quant(w); when packing, for a 4-bit format, w's packed form too (its codes,
  // through quantize() and dequantize(), which give fake_quant's bits).
  std::optional<quant::PackedWeight> quantize_weight(const QuantSpec& spec, std::vector<float>& w, std::size_t rows,
                                                     std::size_t cols, const std::string& point, int layer) {
    check_shape(spec, rows, cols, point, layer);
    const std::vector<float> before = w;
    std::optional<quant::PackedWeight> packed;
    if (pack_ && storage_bits(spec.format) == 4) {
      const quant::QuantizedTensor q = quant::quantize(spec, before.data(), rows, cols);
      quant::dequantize(q, w.data());
      packed = quant::PackedWeight::pack(q, w.data());
    } else {
      quant::fake_quant(spec, w.data(), rows, cols);
    }
    ErrorLog log;
    log.add(layer, point, before.data(), w.data(), w.size());
    for (auto& e : log.entries()) pm_.weight_errors.push_back(e);
    return packed;
  }

  void check_shape(const QuantSpec& spec, std::size_t rows, std::size_t cols, const std::string& point, int layer) {
    try {
      quant::check_shape(spec, rows, cols);
    } catch (const Error& e) {
      throw Error("recipe '" + pm_.recipe.name + "': " + point + (layer >= 0 ? " of layer " + std::to_string(layer) : "") +
                  " (" + shape_text(rows, cols) + "): " + e.what());
    }
  }

  void check(const hadamard::Rotation& r, const std::string& what, int layer) {
    try {
      r.validate();
    } catch (const Error& e) {
      throw Error("recipe '" + pm_.recipe.name + "': " + what + (layer >= 0 ? " of layer " + std::to_string(layer) : "") +
                  ": " + e.what());
    }
  }

  PreparedModel& pm_;
  const quant::LinearRecipe* preset_;
  const CalibratedWeights* calibrated_;
  const bool pack_, interleave_;
};

// Whether the recipe gives a weights.<kind> or act.<kind> spec, recipe-wide or in a layer
// section, for one of the first `kinds` linear kinds (linear_kind_count - 1: all but the
// classifier).
bool has_linear_specs(const Recipe& r, std::size_t kinds) {
  const auto any = [kinds](const auto& weights, const auto& act) {
    for (std::size_t i = 0; i < kinds; ++i)
      if (weights[i] || act[i]) return true;
    return false;
  };
  if (any(r.weights, r.act)) return true;
  for (const auto& [n, s] : r.layer)
    if (any(s.weights, s.act)) return true;
  return false;
}

const quant::LinearRecipe* find_preset(const Recipe& r) {
  if (r.linear.empty()) return nullptr;
  const quant::LinearRecipe* p = nullptr;
  try {
    p = &quant::linear_preset(r.linear);
  } catch (const Error& e) {
    throw Error("recipe '" + r.name + "': " + e.what());
  }
  if (p->engine == quant::LinearEngine::switchback_int8 && has_linear_specs(r, linear_kind_count - 1))
    throw Error("recipe '" + r.name + "': linear preset '" + r.linear +
                "' runs the real int8 GEMM; it takes no weights.* / act.* overrides");
  return p;
}

// Whether a decoder may copy the model's weights interleaved: the copies (the linears' bytes as
// stored, a quantized model's a fraction of its float32 size) within the memory budget beside
// the model's own float32 vectors (mapped weights stay in the file's pages, which the kernel
// can drop). Otherwise the rows are read in place, with the same bits.
bool interleave_fits(const LlamaModel& m) {
  const LlamaConfig& c = m.config;
  double copies = static_cast<double>(
      quant::stored_bytes(m.output_weight().matrix(extent(c, Extent::vocab), extent(c, Extent::dim))));
  for (std::size_t l = 0; l < m.layers.size(); ++l)
    for (std::size_t k = 0; k + 1 < linear_kind_count; ++k) {  // a layer's linears: every kind but the classifier
      const TensorSpec& t = linear_tensor(static_cast<LinearKind>(k));
      copies += static_cast<double>(quant::stored_bytes(tensor_of(m, t, l).matrix(extent(c, t.rows), extent(c, t.cols))));
    }
  const double own = m.mapped ? 0.0 : weight_bytes(c);
  return copies + own <= static_cast<double>(max_memory());
}

}  // namespace

PreparedModel prepare(const LlamaModel& model, const Recipe& recipe, std::size_t positions,
                      const CalibratedWeights* calibrated, bool pack) {
  PreparedModel pm;
  pm.cfg = model.config;
  pm.recipe = recipe;
  if (!recipe.layer.empty() && recipe.layer.rbegin()->first >= model.config.n_layers)
    throw Error("recipe '" + recipe.name + "': layer." + std::to_string(recipe.layer.rbegin()->first) +
                ".* but the model has " + std::to_string(model.config.n_layers) + " layers");
  const auto& c = pm.cfg;
  const auto dim = static_cast<std::size_t>(c.dim), hidden = static_cast<std::size_t>(c.hidden_dim);
  const auto kv = static_cast<std::size_t>(c.kv_dim()), hd = static_cast<std::size_t>(c.head_dim());
  const auto qd = static_cast<std::size_t>(c.q_dim());
  const auto vocab = static_cast<std::size_t>(c.vocab_size);

  const LlamaModel* m = &model;
  if (recipe.quarot) {
    pm.rotated = std::make_unique<LlamaModel>(model);
    widen_mapped(*pm.rotated);  // QuaRot rewrites every weight: the recipe's own float32 copy
    try {
      pm.down_rotation = apply_quarot(*pm.rotated, recipe.seed);
    } catch (const Error& e) {
      throw Error("recipe '" + recipe.name + "': QuaRot rotation: " + e.what());
    }
    m = pm.rotated.get();
  }
  if (recipe.attn_rotate != AttnRotation::none) {
    pm.head_rotation = recipe.attn_rotate == AttnRotation::hadamard
                           ? hadamard::Rotation{hadamard::RotationKind::hadamard, hd, 0, 0}
                           : hadamard::Rotation{hadamard::RotationKind::randomized, hd, 0, recipe.seed};
    try {
      pm.head_rotation.validate();
    } catch (const Error& e) {
      throw Error("recipe '" + recipe.name + "': attn.rotate over head_dim " + std::to_string(hd) + ": " + e.what());
    }
  }

  // weights.calibrate: the calibrated weights (and AWQ's folded RMSNorm gains) replace the
  // round-to-nearest ones below.
  if (recipe.calibrate.method != CalibMethod::none && !recipe.is_identity() && !calibrated)
    throw Error("recipe '" + recipe.name + "': weights.calibrate = " +
                std::string(calib_method_name(recipe.calibrate.method)) + " needs calibration text (--calib FILE)");
  if (recipe.static_scales() && !recipe.is_identity() && !calibrated)
    throw Error("recipe '" + recipe.name + "': " +
                (recipe.act_scale.fixed ? "act.scale = " + scale_source_text(recipe.act_scale)
                                        : "attn.scale = " + scale_source_text(recipe.attn_scale)) +
                " needs calibration text (--calib FILE)");
  if (calibrated) pm.static_amax = calibrated->static_amax;
  if (recipe.act_ggml) {  // llama.cpp's products read the file's own weights
    if (!recipe.linear.empty() || recipe.quarot || recipe.calibrate.method != CalibMethod::none ||
        has_linear_specs(recipe, linear_kind_count))
      throw Error("recipe '" + recipe.name +
                  "': act.ggml runs the model's own weights as llama.cpp does; it takes no weights.* / act.* specs, "
                  "linear preset, quarot or weights.calibrate");
  }
  Preparer prep(pm, find_preset(recipe), calibrated, pack, pack && interleave_fits(*m));
  pm.embedding = m->token_embedding.mapped() ? nullptr : m->token_embedding.data();
  pm.embedding_view = m->token_embedding.matrix(vocab, dim);
  // A linear of the table: its weight as stored (float32 here, or mapped) and its output width.
  const auto member = [&](LinearKind kind, std::size_t l) {
    const TensorSpec& t = linear_tensor(kind);
    const std::size_t rows = extent(c, t.rows);
    return Member{kind, tensor_of(*m, t, l).matrix(rows, extent(c, t.cols)), rows};
  };
  for (std::size_t l = 0; l < m->layers.size(); ++l) {
    const LayerWeights& L = m->layers[l];
    const int li = static_cast<int>(l);
    PreparedLayer P;
    const LayerSpecs specs = recipe.specs_at(li);
    P.q = specs.q;
    P.k = specs.k;
    P.p = specs.p;
    P.v = specs.v;
    P.kv = specs.kv;
    if (recipe.kv_per_head && P.kv) {  // one group per head of each token
      P.kv->granularity = quant::Granularity::block;
      P.kv->block = static_cast<std::size_t>(model.config.head_dim());
    }
    if (recipe.pad)
      for (auto* s : {&P.q, &P.k, &P.p, &P.v, &P.kv})
        if (*s) (*s)->pad = true;
    P.attn_norm = L.attn_norm;
    P.ffn_norm = L.ffn_norm;
    if (calibrated && calibrated->attn_norm.count(li)) P.attn_norm = calibrated->attn_norm.at(li);
    if (calibrated && calibrated->ffn_norm.count(li)) P.ffn_norm = calibrated->ffn_norm.at(li);
    const Member qkv[] = {member(LinearKind::wq, l), member(LinearKind::wk, l), member(LinearKind::wv, l)};
    const Member wo[] = {member(LinearKind::wo, l)};
    const Member gate_up[] = {member(LinearKind::gate, l), member(LinearKind::up, l)};
    const Member down[] = {member(LinearKind::down, l)};
    P.qkv = prep.group(qkv, dim, li);
    P.wo = prep.group(wo, qd, li);
    if (!L.bq.empty() || !L.bk.empty() || !L.bv.empty()) {
      P.qkv_bias.assign(qd + 2 * kv, 0.0f);
      std::copy(L.bq.begin(), L.bq.end(), P.qkv_bias.begin());
      std::copy(L.bk.begin(), L.bk.end(), P.qkv_bias.begin() + static_cast<std::ptrdiff_t>(qd));
      std::copy(L.bv.begin(), L.bv.end(), P.qkv_bias.begin() + static_cast<std::ptrdiff_t>(qd + kv));
      if (calibrated && calibrated->bv.count(li))  // AWQ: o_proj's 1/s folded into v's bias too
        std::copy_n(calibrated->bv.at(li).begin(), kv, P.qkv_bias.begin() + static_cast<std::ptrdiff_t>(qd + kv));
    }
    P.wo_bias = L.bo;
    P.q_norm = L.q_norm;
    P.k_norm = L.k_norm;
    P.gate_up = prep.group(gate_up, dim, li);
    P.down = prep.group(down, hidden, li);
    pm.layers.push_back(std::move(P));
  }
  pm.final_norm = m->final_norm;
  const Member cls[] = {{LinearKind::classifier, m->output_weight().matrix(vocab, dim), vocab}};
  pm.classifier = prep.group(cls, dim, -1);

  // Only the positions the run evaluates: the header's seq_len is not evidence of anything (and
  // --ctx may pass it).
  rope_tables(c, positions, pm.rope_cos, pm.rope_sin);
  return pm;
}

}  // namespace lowp::accuracy::detail
