// Hugging Face Llama-family checkpoints (llama, mistral, qwen2): one or more .safetensors files
// (model.safetensors.index.json names the shards when present) plus config.json. HF stores q/k
// rows in rotate-half order per head; they are permuted back to interleaved pairs here.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "io/json.hpp"
#include "io/load_common.hpp"
#include "lowp/accuracy/loaders.hpp"
#include "model/tensors.hpp"

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

const Json* present(const Json& o, const char* key) {
  const Json* v = o.get(key);
  return v && v->kind != Json::Kind::null ? v : nullptr;
}

double rope_number(const Json& rs, const char* key, const std::string& file, std::optional<double> fallback = {}) {
  const Json* v = present(rs, key);
  if (!v) {
    if (fallback) return *fallback;
    throw Error(file + ": rope_scaling." + key + " is missing");
  }
  if (v->kind != Json::Kind::number || !std::isfinite(v->num) || v->num <= 0)
    throw Error(file + ": rope_scaling." + key + " must be a positive number");
  return v->num;
}

// rope_scaling {"rope_type": "llama3" | "linear" | "default", ...} into the config's frequency
// scale and factors (transformers' _compute_llama3_parameters, as per-pair divisors).
void rope_scaling(const Json& cfg, LlamaConfig& c, const std::string& file) {
  const Json* rs = present(cfg, "rope_scaling");
  if (!rs) return;
  if (rs->kind != Json::Kind::object) throw Error(file + ": rope_scaling must be an object or null");
  const Json* type = present(*rs, "rope_type");
  if (!type) type = present(*rs, "type");
  if (!type || type->kind != Json::Kind::string) throw Error(file + ": rope_scaling has no string 'rope_type'");
  if (type->str == "default") return;
  if (type->str == "linear") {
    c.rope_freq_scale = static_cast<float>(1.0 / rope_number(*rs, "factor", file));
    return;
  }
  if (type->str != "llama3")
    throw Error(file + ": rope_scaling type " + show_string(type->str) + " is not supported (llama3, linear, default)");
  const double factor = rope_number(*rs, "factor", file), low = rope_number(*rs, "low_freq_factor", file),
               high = rope_number(*rs, "high_freq_factor", file),
               original = rope_number(*rs, "original_max_position_embeddings", file);
  if (!(high > low)) throw Error(file + ": rope_scaling high_freq_factor must exceed low_freq_factor");
  const double low_wavelen = original / low, high_wavelen = original / high, pi = std::acos(-1.0);
  const int hd = c.head_dim();
  c.rope_freq_factors.resize(static_cast<std::size_t>(hd / 2));
  for (int i = 0; i < hd / 2; ++i) {
    const double freq = std::pow(static_cast<double>(c.rope_theta), -2.0 * i / hd), wavelen = 2 * pi / freq;
    double divisor = 1.0;
    if (wavelen > low_wavelen) {
      divisor = factor;
    } else if (wavelen >= high_wavelen) {  // between: interpolate freq / factor and freq
      const double smooth = (original / wavelen - low) / (high - low);
      divisor = 1.0 / ((1 - smooth) / factor + smooth);
    }
    c.rope_freq_factors[static_cast<std::size_t>(i)] = static_cast<float>(divisor);
  }
}

// mapping set: the 2-D weights stay in the shards as views (WeightStorage::mapped).
LlamaModel build(const TensorMap& ts, std::string_view config_json, const std::string& config_name,
                 const std::string& name, std::shared_ptr<Mapping> mapping = nullptr) {
  const Json cfg = parse_json(config_json, config_name);
  if (cfg.kind != Json::Kind::object) throw Error(config_name + ": not a JSON object");
  std::string type = "llama";
  if (const Json* mt = cfg.get("model_type")) {
    type = mt->kind == Json::Kind::string ? mt->str : "(not a string)";
    if (type != "llama" && type != "mistral" && type != "qwen2" && type != "qwen3")
      throw Error(config_name + ": model_type " + show_string(type) + " is not supported (llama, mistral, qwen2, qwen3)");
  }
  auto flag = [&](const char* key) {
    const Json* v = present(cfg, key);
    if (v && v->kind != Json::Kind::boolean) throw Error(config_name + ": '" + key + "' must be true or false");
    return v && v->b;
  };
  if (flag("mlp_bias")) throw Error(config_name + ": mlp_bias is not supported");
  // Qwen2 always has q/k/v biases; Llama's attention_bias adds q/k/v/o ones.
  const bool qkv_bias = type == "qwen2" || flag("attention_bias"), o_bias = type != "qwen2" && flag("attention_bias");

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
  if (present(cfg, "head_dim")) c.head_size = config_int(cfg, "head_dim", config_name);
  // A sliding window shorter than the context (Mistral 7B v0.1) bounds the usable context.
  if (const Json* sw = present(cfg, "sliding_window");
      sw && (type == "mistral" || flag("use_sliding_window")) && sw->is_uint && sw->u > 0 &&
      sw->u < static_cast<std::uint64_t>(c.seq_len))
    c.seq_len = static_cast<int>(sw->u);
  validate(c, config_name, !mapping);
  rope_scaling(cfg, c, config_name);
  validate(c, config_name, !mapping);

  const int hd = c.head_dim();
  const std::uint32_t *q_rows = nullptr, *k_rows = nullptr;
  if (mapping) {
    mapping->row_maps.push_back(hf_row_map(c.n_heads, hd));
    mapping->row_maps.push_back(hf_row_map(c.n_kv_heads, hd));
    q_rows = mapping->row_maps[0].data();
    k_rows = mapping->row_maps[1].data();
  }
  // Whether config.json gives the model an optional tensor. Tied checkpoints usually omit
  // lm_head; one that is present is used as stored.
  const auto wanted = [&](const TensorSpec& t, const std::string& n) {
    if (!t.optional) return true;
    if (t.model_member == &LlamaModel::classifier) {
      if (!ts.count(n) && !tied)
        throw Error(name + ": tensor '" + n + "' is missing (config.json says tie_word_embeddings is false)");
      return ts.count(n) > 0;
    }
    if (t.rope == RopeRows::one_head) {  // QK-norm: Qwen3's, one gain per element of a head
      const auto it = ts.find(n);
      if (type == "qwen3" && it != ts.end() && it->second.shape != hf_shape(c, t))
        throw Error(it->second.file + ": tensor '" + n + "' has " + std::to_string(it->second.elements) +
                    " elements, not head_dim " + std::to_string(hd) +
                    ": lowp supports QK-norm per head (Qwen3), not over the whole projection (OLMo 2)");
      return type == "qwen3";
    }
    return t.layer_member == &LayerWeights::bo ? o_bias : qkv_bias;
  };
  m.layers.resize(static_cast<std::size_t>(c.n_layers));
  for_each_tensor(m.layers.size(), [&](const TensorSpec& t, std::size_t l) {
    const std::string n = hf_name(t, l);
    if (!wanted(t, n)) return;
    const std::vector<std::uint64_t> shape = hf_shape(c, t);
    Weight& w = tensor_of(m, t, l);
    const int heads = rope_heads(c, t);  // HF's rotate-half q/k rows to interleaved pairs
    if (mapping && t.cols != Extent::one) {
      w.stored = view(ts, n, shape, name);
      if (heads) w.stored.row_map = heads == c.n_heads ? q_rows : k_rows;
      return;
    }
    w = tensor(ts, n, shape, name);
    if (heads) w = unpermute(w, heads, hd, static_cast<int>(extent(c, t.cols)));
  });
  if (mapping) m.mapped = std::move(mapping);
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
  std::vector<std::pair<std::string, std::string>> weight_map;  // tensor -> shard, from the index
  if (fs::is_directory(path, ec)) {
    dir = path;
    const fs::path index = dir / "model.safetensors.index.json";
    if (fs::exists(index, ec)) {
      const std::string iname = index.string();
      const Json j = parse_json(read_text_file(iname), iname);
      const Json* map = j.kind == Json::Kind::object ? j.get("weight_map") : nullptr;
      if (!map || map->kind != Json::Kind::object) throw Error(iname + ": no object 'weight_map'");
      std::set<std::string> shards;
      for (const auto& [tensor, file] : map->fields) {
        if (file.kind != Json::Kind::string || file.str.empty() || file.str.find('/') != std::string::npos)
          throw Error(iname + ": weight_map entry " + show_string(tensor) + " must name a file in this directory");
        const std::string shard = (dir / file.str).string();
        if (shards.insert(shard).second && !fs::exists(shard, ec))
          throw Error(iname + ": shard " + show_string(file.str) + " (of tensor " + show_string(tensor) + ") does not exist");
        weight_map.emplace_back(tensor, shard);
      }
      files.assign(shards.begin(), shards.end());
    } else {
      for (const auto& e : fs::directory_iterator(path, ec))
        if (e.path().extension() == ".safetensors") files.push_back(e.path().string());
      std::sort(files.begin(), files.end());
    }
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
  for (const auto& [tensor, shard] : weight_map) {
    const auto it = ts.find(tensor);
    if (it == ts.end() || it->second.file != shard)
      throw Error(shard + ": tensor " + show_string(tensor) + " is not in this shard, as model.safetensors.index.json says");
  }
  return build(ts, config_text, config, files.size() == 1 ? files[0] : path,
               storage == WeightStorage::mapped ? std::move(mapping) : nullptr);
}

}  // namespace lowp::accuracy
