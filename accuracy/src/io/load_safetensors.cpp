// Hugging Face Llama checkpoints: one or more .safetensors files plus config.json. HF stores
// q/k rows in rotate-half order per head; they are permuted back to interleaved pairs here.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>

#include "io/json.hpp"
#include "io/load_common.hpp"
#include "lowp/accuracy/loaders.hpp"

namespace lowp::accuracy {

using namespace detail;

namespace {

struct StTensor {
  std::string file;
  std::string dtype;
  std::vector<std::uint64_t> shape;
  std::uint64_t elements = 1;
  Bytes data;
};

using TensorMap = std::map<std::string, StTensor>;

std::uint64_t dtype_size(const std::string& d) {
  if (d == "F64" || d == "I64" || d == "U64") return 8;
  if (d == "F32" || d == "I32" || d == "U32") return 4;
  if (d == "F16" || d == "BF16" || d == "I16" || d == "U16") return 2;
  if (d == "I8" || d == "U8" || d == "BOOL" || d == "F8_E4M3" || d == "F8_E5M2") return 1;
  return 0;
}

// Reads one safetensors file's header into `out`, checking every entry against the file.
void parse_safetensors(Bytes bytes, const std::string& name, TensorMap& out) {
  ByteReader r(bytes, name);
  const auto n = r.read<std::uint64_t>("header length");
  if (n > kJsonMaxLength) r.fail("header length " + std::to_string(n) + " exceeds the 100 MB limit");
  const Bytes hb = r.take(n, "JSON header");
  const Json h = parse_json({reinterpret_cast<const char*>(hb.data()), hb.size()}, name + " header");
  if (h.kind != Json::Kind::object) r.fail("the header is not a JSON object");
  const Bytes data = bytes.subspan(8 + n);
  for (const auto& [key, v] : h.fields) {
    if (key == "__metadata__") continue;
    const std::string tf = "tensor " + show_string(key);
    if (v.kind != Json::Kind::object) r.fail(tf + " entry is not an object");
    const Json* dt = v.get("dtype");
    const Json* shape = v.get("shape");
    const Json* offs = v.get("data_offsets");
    if (!dt || dt->kind != Json::Kind::string) r.fail(tf + " has no string 'dtype'");
    if (!shape || shape->kind != Json::Kind::array) r.fail(tf + " has no array 'shape'");
    if (!offs || offs->kind != Json::Kind::array || offs->items.size() != 2 || !offs->items[0].is_uint ||
        !offs->items[1].is_uint)
      r.fail(tf + " 'data_offsets' must be two non-negative integers");
    StTensor t;
    t.file = name;
    t.dtype = dt->str;
    for (const Json& d : shape->items) {
      if (!d.is_uint) r.fail(tf + " shape has an entry that is not a non-negative integer");
      t.shape.push_back(d.u);
      t.elements = checked_mul(t.elements, d.u, name + ": " + tf + " element count");
    }
    const std::uint64_t begin = offs->items[0].u, end = offs->items[1].u;
    if (begin > end || end > data.size())
      r.fail(tf + " data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
             "] lie outside the data section (" + std::to_string(data.size()) + " bytes)");
    if (const std::uint64_t es = dtype_size(t.dtype)) {
      const std::uint64_t want = checked_mul(t.elements, es, name + ": " + tf + " size");
      if (want != end - begin)
        r.fail(tf + " has " + std::to_string(end - begin) + " data bytes, its dtype " + show_string(t.dtype) + " and shape need " +
               std::to_string(want));
    }
    t.data = data.subspan(begin, end - begin);
    if (!out.emplace(key, std::move(t)).second) r.fail(tf + " appears in more than one file");
  }
}

int config_int(const Json& cfg, const char* key, const std::string& file, const int* fallback = nullptr) {
  const Json* v = cfg.get(key);
  if (!v || v->kind == Json::Kind::null) {
    if (fallback) return *fallback;
    throw Error(file + ": '" + key + "' is missing");
  }
  if (v->kind != Json::Kind::number || !v->is_uint)
    throw Error(file + ": '" + key + "' must be a positive integer");
  return positive_int(static_cast<std::int64_t>(std::min<std::uint64_t>(v->u, INT64_MAX)), key, file);
}

float config_float(const Json& cfg, const char* key, const std::string& file, float fallback) {
  const Json* v = cfg.get(key);
  if (!v || v->kind == Json::Kind::null) return fallback;
  if (v->kind != Json::Kind::number) throw Error(file + ": '" + key + "' must be a number");
  return static_cast<float>(v->num);
}

// The shards' mappings and the q/k row orders that mapped weight views point into.
struct Mapping {
  std::vector<std::unique_ptr<MappedFile>> files;
  std::vector<std::vector<std::uint32_t>> row_maps;
};

// The tensor `name`, checked to have `shape` and a float dtype (F32, F16, BF16).
const StTensor& find_tensor(const TensorMap& ts, const std::string& name, const std::vector<std::uint64_t>& shape,
                            const std::string& where, StoredType& st) {
  const auto it = ts.find(name);
  if (it == ts.end()) throw Error(where + ": tensor '" + name + "' is missing");
  const StTensor& t = it->second;
  if (t.shape != shape) {
    auto fmt = [](const std::vector<std::uint64_t>& d) {
      std::string s = "[";
      for (std::size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + std::to_string(d[i]);
      return s + "]";
    };
    throw Error(t.file + ": tensor '" + name + "' has shape " + fmt(t.shape) + ", expected " + fmt(shape));
  }
  if (t.dtype == "F32") st = StoredType::f32;
  else if (t.dtype == "F16") st = StoredType::f16;
  else if (t.dtype == "BF16") st = StoredType::bf16;
  else throw Error(t.file + ": tensor '" + name + "' has dtype " + show_string(t.dtype) + ", which lowp does not load (F32, F16, BF16)");
  return t;
}

std::vector<float> tensor(const TensorMap& ts, const std::string& name, std::vector<std::uint64_t> shape,
                          const std::string& where) {
  StoredType st;
  const StTensor& t = find_tensor(ts, name, shape, where, st);
  return to_f32(st, t.data, t.elements);
}

// A 2-D tensor left in the mapping, in its stored type.
quant::StoredMatrix view(const TensorMap& ts, const std::string& name, std::vector<std::uint64_t> shape,
                         const std::string& where) {
  StoredType st;
  const StTensor& t = find_tensor(ts, name, shape, where, st);
  const quant::StoredType q = st == StoredType::f32   ? quant::StoredType::f32
                              : st == StoredType::f16 ? quant::StoredType::f16
                                                      : quant::StoredType::bf16;
  return {q, t.data.data(), shape[0], shape[1]};
}

// Stored row of each interleaved row (see unpermute): row h hd + 2j (or 2j + 1) is HF's h hd + j (+ hd/2).
std::vector<std::uint32_t> hf_row_map(int heads, int hd) {
  std::vector<std::uint32_t> map(static_cast<std::size_t>(heads) * static_cast<std::size_t>(hd));
  for (int h = 0; h < heads; ++h)
    for (int j = 0; j < hd; ++j)
      map[static_cast<std::size_t>(h * hd + (j < hd / 2 ? 2 * j : 2 * (j - hd / 2) + 1))] = static_cast<std::uint32_t>(h * hd + j);
  return map;
}

// HF row j of a head holds interleaved row 2j (j < hd/2) or 2(j - hd/2) + 1: put them back.
std::vector<float> unpermute(const std::vector<float>& w, int heads, int hd, int cols) {
  std::vector<float> out(w.size());
  const std::size_t c = cols;
  for (int h = 0; h < heads; ++h)
    for (int j = 0; j < hd; ++j) {
      const int dst = h * hd + (j < hd / 2 ? 2 * j : 2 * (j - hd / 2) + 1);
      std::copy_n(&w[(h * hd + j) * c], c, &out[dst * c]);
    }
  return out;
}

// mapping set: the 2-D weights stay in the shards as views (WeightStorage::mapped).
LlamaModel build(const TensorMap& ts, std::string_view config_json, const std::string& config_name,
                 const std::string& name, std::shared_ptr<Mapping> mapping = nullptr) {
  const Json cfg = parse_json(config_json, config_name);
  if (cfg.kind != Json::Kind::object) throw Error(config_name + ": not a JSON object");
  if (const Json* mt = cfg.get("model_type"); mt && !(mt->kind == Json::Kind::string && mt->str == "llama"))
    throw Error(config_name + ": model_type " + (mt->kind == Json::Kind::string ? show_string(mt->str) : std::string("(not a string)")) +
                " is not supported (llama only)");
  if (const Json* rs = cfg.get("rope_scaling"); rs && rs->kind != Json::Kind::null)
    throw Error(config_name + ": rope_scaling is not supported");

  LlamaModel m;
  m.source = "safetensors";
  m.path = name;
  LlamaConfig& c = m.config;
  c.dim = config_int(cfg, "hidden_size", config_name);
  c.hidden_dim = config_int(cfg, "intermediate_size", config_name);
  c.n_layers = config_int(cfg, "num_hidden_layers", config_name);
  c.n_heads = config_int(cfg, "num_attention_heads", config_name);
  c.n_kv_heads = config_int(cfg, "num_key_value_heads", config_name, &c.n_heads);
  c.vocab_size = config_int(cfg, "vocab_size", config_name);
  c.seq_len = config_int(cfg, "max_position_embeddings", config_name);
  c.norm_eps = config_float(cfg, "rms_norm_eps", config_name, 1e-6f);  // HF LlamaConfig defaults
  c.rope_theta = config_float(cfg, "rope_theta", config_name, 10000.0f);
  bool tied = false;
  if (const Json* t = cfg.get("tie_word_embeddings"); t && t->kind != Json::Kind::null) {
    if (t->kind != Json::Kind::boolean) throw Error(config_name + ": 'tie_word_embeddings' must be true or false");
    tied = t->b;
  }
  validate(c, config_name);
  if (const Json* hd = cfg.get("head_dim"); hd && hd->kind != Json::Kind::null &&
                                            !(hd->is_uint && hd->u == static_cast<std::uint64_t>(c.head_dim())))
    throw Error(config_name + ": head_dim differs from hidden_size / num_attention_heads, which lowp does not support");

  const std::uint64_t dim = c.dim, hid = c.hidden_dim, kv = c.kv_dim(), vocab = c.vocab_size;
  const int hd = c.head_dim();
  if (mapping) {
    auto mw = std::make_shared<MappedWeights>();
    mapping->row_maps.push_back(hf_row_map(c.n_heads, hd));
    mapping->row_maps.push_back(hf_row_map(c.n_kv_heads, hd));
    const std::uint32_t* q_rows = mapping->row_maps[0].data();
    const std::uint32_t* k_rows = mapping->row_maps[1].data();
    mw->token_embedding = view(ts, "model.embed_tokens.weight", {vocab, dim}, name);
    for (int l = 0; l < c.n_layers; ++l) {
      const std::string p = "model.layers." + std::to_string(l) + ".";
      LayerWeights w;
      MappedLayer v;
      w.attn_norm = tensor(ts, p + "input_layernorm.weight", {dim}, name);
      w.ffn_norm = tensor(ts, p + "post_attention_layernorm.weight", {dim}, name);
      v.wq = view(ts, p + "self_attn.q_proj.weight", {dim, dim}, name);
      v.wq.row_map = q_rows;
      v.wk = view(ts, p + "self_attn.k_proj.weight", {kv, dim}, name);
      v.wk.row_map = k_rows;
      v.wv = view(ts, p + "self_attn.v_proj.weight", {kv, dim}, name);
      v.wo = view(ts, p + "self_attn.o_proj.weight", {dim, dim}, name);
      v.w_gate = view(ts, p + "mlp.gate_proj.weight", {hid, dim}, name);
      v.w_down = view(ts, p + "mlp.down_proj.weight", {dim, hid}, name);
      v.w_up = view(ts, p + "mlp.up_proj.weight", {hid, dim}, name);
      m.layers.push_back(std::move(w));
      mw->layers.push_back(v);
    }
    m.final_norm = tensor(ts, "model.norm.weight", {dim}, name);
    if (ts.count("lm_head.weight") || !tied) {
      if (!ts.count("lm_head.weight"))
        throw Error(name + ": tensor 'lm_head.weight' is missing (config.json says tie_word_embeddings is false)");
      mw->classifier = view(ts, "lm_head.weight", {vocab, dim}, name);
    }
    mw->owner = std::move(mapping);
    m.mapped = std::move(mw);
    validate(m);
    return m;
  }
  m.token_embedding = tensor(ts, "model.embed_tokens.weight", {vocab, dim}, name);
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    LayerWeights w;
    w.attn_norm = tensor(ts, p + "input_layernorm.weight", {dim}, name);
    w.wq = unpermute(tensor(ts, p + "self_attn.q_proj.weight", {dim, dim}, name), c.n_heads, hd, c.dim);
    w.wk = unpermute(tensor(ts, p + "self_attn.k_proj.weight", {kv, dim}, name), c.n_kv_heads, hd, c.dim);
    w.wv = tensor(ts, p + "self_attn.v_proj.weight", {kv, dim}, name);
    w.wo = tensor(ts, p + "self_attn.o_proj.weight", {dim, dim}, name);
    w.ffn_norm = tensor(ts, p + "post_attention_layernorm.weight", {dim}, name);
    w.w_gate = tensor(ts, p + "mlp.gate_proj.weight", {hid, dim}, name);
    w.w_down = tensor(ts, p + "mlp.down_proj.weight", {dim, hid}, name);
    w.w_up = tensor(ts, p + "mlp.up_proj.weight", {hid, dim}, name);
    m.layers.push_back(std::move(w));
  }
  m.final_norm = tensor(ts, "model.norm.weight", {dim}, name);
  // Tied checkpoints usually omit lm_head; one that is present is used as stored.
  if (ts.count("lm_head.weight") || !tied) {
    if (!ts.count("lm_head.weight"))
      throw Error(name + ": tensor 'lm_head.weight' is missing (config.json says tie_word_embeddings is false)");
    m.classifier = tensor(ts, "lm_head.weight", {vocab, dim}, name);
  }
  validate(m);
  return m;
}

}  // namespace

LlamaModel load_safetensors_bytes(std::span<const std::uint8_t> bytes, std::string_view config_json,
                                  const std::string& name) {
  TensorMap ts;
  parse_safetensors(bytes, name, ts);
  return build(ts, config_json, "config.json", name);
}

LlamaModel load_safetensors(const std::string& path, WeightStorage storage) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::vector<std::string> files;
  fs::path dir;
  if (fs::is_directory(path, ec)) {
    dir = path;
    for (const auto& e : fs::directory_iterator(path, ec))
      if (e.path().extension() == ".safetensors") files.push_back(e.path().string());
    std::sort(files.begin(), files.end());
    if (files.empty()) throw Error(path + ": no .safetensors files in this directory");
  } else {
    files.push_back(path);
    dir = fs::path(path).parent_path();
    if (dir.empty()) dir = ".";
  }
  const std::string config = (dir / "config.json").string();
  if (!fs::exists(config, ec)) throw Error(path + ": no config.json beside it (" + config + ")");
  const std::string config_text = read_text_file(config);

  // Shards stay mapped while tensors are converted, or as long as the model when mapped.
  auto mapping = std::make_shared<Mapping>();
  TensorMap ts;
  for (const std::string& f : files) {
    mapping->files.push_back(std::make_unique<MappedFile>(f));
    parse_safetensors(mapping->files.back()->bytes(), f, ts);
  }
  return build(ts, config_text, config, files.size() == 1 ? files[0] : path,
               storage == WeightStorage::mapped ? std::move(mapping) : nullptr);
}

}  // namespace lowp::accuracy
