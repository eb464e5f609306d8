// lowp.QuantLinear: the quantized linear layer Y = X W^T + b with forward and backward.
#include <array>
#include <mutex>

#include "common.hpp"
#include "lowp/accuracy/train_linears.hpp"
#include "lowp/hadamard/rotation.hpp"
#include "lowp/numerics/error.hpp"
#include "lowp/quant/linear.hpp"

namespace lowp::python {
namespace {

// One layer; calls on the same object from several Python threads are serialised (the layer
// keeps the forward's operands for the backward), calls on different objects run in parallel.
struct Linear {
  quant::QuantLinear layer;
  std::size_t in_features, out_features, bias_size;
  std::mutex mu;
  Linear(const quant::LinearRecipe& r, std::size_t in, std::size_t out, bool bias)
      : layer(r, in, out, bias), in_features(in), out_features(out), bias_size(bias ? out : 0) {}
};

std::unique_ptr<Linear> make(const std::string& preset, std::size_t in, std::size_t out, bool bias) {
  if (in == 0 || out == 0) throw py::value_error("QuantLinear: in_features and out_features must be positive");
  try {
    return std::make_unique<Linear>(quant::linear_preset(preset), in, out, bias);
  } catch (const Error& e) {
    throw py::value_error(e.what());
  }
}

// A training recipe's linear (a built-in name or a recipe file), else a linear preset;
// "preset:<name>" asks for the preset of a name both have (mxfp8, nvfp4, ...).
std::unique_ptr<Linear> from_recipe(const std::string& name, std::size_t in, std::size_t out, bool bias) {
  if (name.rfind("preset:", 0) == 0) return make(name.substr(7), in, out, bias);
  if (in == 0 || out == 0) throw py::value_error("QuantLinear: in_features and out_features must be positive");
  try {
    return std::make_unique<Linear>(accuracy::train_recipe_linears(name).linear, in, out, bias);
  } catch (const Error& train_error) {
    for (const quant::LinearRecipe& p : quant::linear_presets())
      if (p.name == name) return std::make_unique<Linear>(p, in, out, bias);
    std::string presets;
    for (const quant::LinearRecipe& p : quant::linear_presets()) presets += (presets.empty() ? "" : ", ") + p.name;
    throw py::value_error(std::string(train_error.what()) + "; linear presets: " + presets);
  }
}

// lowp.torch calls this in the forward of a step that will run a backward: the backward GEMMs'
// operands whose blocks run along the tokens (dY in the dgrad, dY^T and X^T in the wgrad) must
// fit `rows` tokens, else the error comes now, with advice a built-in name can follow.
void check_backward_rows(Linear& l, std::size_t rows) {
  const quant::LinearRecipe& r = l.layer.recipe();
  struct Operand {
    const std::optional<quant::QuantSpec>& spec;
    std::size_t rows, cols;
    const char* what;
  };
  const Operand ops[] = {{r.dgrad.a, rows, l.out_features, "the dgrad's dY"},
                         {r.wgrad.a, l.out_features, rows, "the wgrad's dY^T"},
                         {r.wgrad.b, l.in_features, rows, "the wgrad's X^T"}};
  // The wgrad's Hadamard runs along the tokens too (no padding there): its blocks must fit.
  if (r.wgrad.rotation != hadamard::RotationKind::none) {
    try {
      hadamard::Rotation{r.wgrad.rotation, rows, r.wgrad.rotation_block, 0}.validate();
    } catch (const Error& e) {
      throw py::value_error("lowp.torch.Linear: recipe '" + r.name + "' rotates the wgrad's operands along the tokens, and " +
                            "this input has " + std::to_string(rows) + " tokens (batch x sequence): " + e.what() +
                            "; give a number of tokens the rotation takes" +
                            (r.wgrad.rotation_block ? " (a multiple of " + std::to_string(r.wgrad.rotation_block) + ")" : ""));
    }
  }
  for (const Operand& o : ops) {
    if (!o.spec) continue;
    try {
      quant::check_shape(*o.spec, o.rows, o.cols);
    } catch (const Error&) {
      bool preset = false;
      for (const quant::LinearRecipe& p : quant::linear_presets()) preset = preset || p.name == r.name;
      throw py::value_error("lowp.torch.Linear: recipe '" + r.name + "' quantizes " + o.what + " in blocks of " +
                            std::to_string(o.spec->block) + " along the tokens, and this input has " + std::to_string(rows) +
                            " tokens (batch x sequence): give a multiple of " + std::to_string(o.spec->block) +
                            " tokens, or a recipe with `pad = on` (a file holding `name = mine`, " +
                            (preset ? "`linear = " + r.name + "`" : "the recipe's lines") + " and `pad = on`)");
    }
  }
}

// The operand statistics since the last call, one dict per quantized operand (operands left in
// float32, and the int8 GEMM's, have none): the columns of lowp train's quant.csv plus the sums.
py::list take_stats(Linear& l) {
  static constexpr const char* kGemm[3] = {"fwd", "dgrad", "wgrad"};
  static constexpr const char* kOperand[6] = {"X", "W", "dY", "W^T", "dY^T", "X^T"};
  std::array<quant::OperandStats, 6> st;
  {
    std::lock_guard lock(l.mu);
    st = l.layer.take_stats();
  }
  py::list rows;
  for (std::size_t k = 0; k < st.size(); ++k) {
    const quant::OperandStats& o = st[k];
    if (o.count == 0) continue;
    const double n = static_cast<double>(o.count);
    py::dict d;
    d["gemm"] = kGemm[k / 2];
    d["operand"] = kOperand[k];
    d["sqnr_db"] = o.sqnr_db();
    d["saturated"] = static_cast<double>(o.saturated) / n;
    d["flushed"] = static_cast<double>(o.flushed) / n;
    d["count"] = o.count;
    d["saturated_count"] = o.saturated;
    d["flushed_count"] = o.flushed;
    d["signal"] = o.signal;
    d["noise"] = o.noise;
    rows.append(d);
  }
  return rows;
}

// rows x `width` view of x whose last dimension must be `width`.
Matrix rows_of(const std::vector<py::ssize_t>& shape, std::size_t width, const char* fn) {
  const Matrix m = as_matrix(shape, fn);
  if (m.cols != width)
    throw py::value_error(std::string(fn) + ": the last dimension is " + std::to_string(m.cols) + ", the layer needs " +
                          std::to_string(width));
  return m;
}

std::vector<py::ssize_t> with_last(std::vector<py::ssize_t> shape, std::size_t last) {
  shape.back() = static_cast<py::ssize_t>(last);
  return shape;
}

F32Out forward(Linear& l, F32In x, std::uint64_t seed) {
  const auto shape = shape_of(x);
  const Matrix m = rows_of(shape, l.in_features, "forward");
  F32Out y(with_last(shape, l.out_features));
  float* o = y.mutable_data();
  const float* in = x.data();
  {  // the GIL is released around the kernel only (no Python object is touched)
    py::gil_scoped_release nogil;
    std::lock_guard lock(l.mu);
    l.layer.forward(in, m.rows, o, seed);
  }
  return y;
}

F32Out backward(Linear& l, F32In dy, std::uint64_t seed) {
  const auto shape = shape_of(dy);
  const Matrix m = rows_of(shape, l.out_features, "backward");
  F32Out dx(with_last(shape, l.in_features));
  float* o = dx.mutable_data();
  const float* in = dy.data();
  (void)m;  // the row count is the forward's (the layer checks it)
  {  // the GIL is released around the kernel only (no Python object is touched)
    py::gil_scoped_release nogil;
    std::lock_guard lock(l.mu);
    l.layer.backward(in, o, seed);
  }
  return dx;
}

// Copies of the layer's parameter vectors as numpy arrays, and setters that copy in.
F32Out get(Linear& l, std::vector<float>& (quant::QuantLinear::*which)(), std::vector<py::ssize_t> shape) {
  std::lock_guard lock(l.mu);
  const std::vector<float>& v = (l.layer.*which)();
  return F32Out(shape, v.data());
}

void set(Linear& l, std::vector<float>& (quant::QuantLinear::*which)(), F32In v, const char* name) {
  std::lock_guard lock(l.mu);
  std::vector<float>& dst = (l.layer.*which)();  // the non-const accessor drops the cached quantized weight
  if (static_cast<std::size_t>(v.size()) != dst.size())
    throw py::value_error(std::string(name) + ": expected " + std::to_string(dst.size()) + " values, got " +
                          std::to_string(v.size()));
  std::copy(v.data(), v.data() + v.size(), dst.begin());
}

}  // namespace

void bind_linear(py::module_& m) {
  using Q = quant::QuantLinear;
  py::class_<Linear>(m, "QuantLinear",
                     "Y = X W^T + b with every GEMM quantized as the named preset (see `lowp recipes`).\n"
                     "W (out_features x in_features) and b start at zero; gradients accumulate over backward calls.")
      .def(py::init(&make), py::arg("preset"), py::arg("in_features"), py::arg("out_features"), py::arg("bias") = true)
      .def_static("from_recipe", &from_recipe, py::arg("recipe"), py::arg("in_features"), py::arg("out_features"),
                  py::arg("bias") = true,
                  "The layer of a training recipe (a `lowp recipes` training name or a recipe file: its linear\n"
                  "inside the layers), else of a linear preset; 'preset:<name>' picks the preset of a shared name.")
      .def("check_backward_rows", &check_backward_rows, py::arg("rows"),
           "ValueError when a backward after a forward of `rows` rows could not quantize its operands.")
      .def("collect_stats", [](Linear& l, bool on) {
        std::lock_guard lock(l.mu);
        l.layer.collect_stats(on);
      }, py::arg("on") = true, "Count what quantizing each operand does (take_stats returns it).")
      .def("take_stats", &take_stats,
           "Per quantized operand since the last call: gemm, operand, sqnr_db, saturated and flushed fractions,\n"
           "count and the sums behind them; resets them.")
      .def_property_readonly("description", [](Linear& l) { return quant::describe(l.layer.recipe()); })
      .def("forward", &forward, py::arg("x"), py::arg("seed") = 0, "Y (..., out_features) from X (..., in_features).")
      .def("backward", &backward, py::arg("dy"), py::arg("seed") = 0,
           "dX for dY of the last forward; adds dW and db into weight_grad and bias_grad.")
      .def("zero_grad", [](Linear& l) {
        std::lock_guard lock(l.mu);
        std::fill(l.layer.weight_grad().begin(), l.layer.weight_grad().end(), 0.0f);
        std::fill(l.layer.bias_grad().begin(), l.layer.bias_grad().end(), 0.0f);
      })
      .def_property("weight",
                    [](Linear& l) { return get(l, &Q::weight, {py::ssize_t(l.out_features), py::ssize_t(l.in_features)}); },
                    [](Linear& l, F32In w) { set(l, &Q::weight, w, "weight"); }, "W, out_features x in_features (a copy).")
      .def_property("bias",
                    [](Linear& l) { return get(l, &Q::bias, {py::ssize_t(l.bias_size)}); },
                    [](Linear& l, F32In b) { set(l, &Q::bias, b, "bias"); }, "b (a copy; empty without bias).")
      .def_property_readonly("weight_grad", [](Linear& l) {
        return get(l, &Q::weight_grad, {py::ssize_t(l.out_features), py::ssize_t(l.in_features)});
      })
      .def_property_readonly("bias_grad", [](Linear& l) { return get(l, &Q::bias_grad, {py::ssize_t(l.bias_size)}); })
      .def_property_readonly("in_features", [](const Linear& l) { return l.in_features; })
      .def_property_readonly("out_features", [](const Linear& l) { return l.out_features; })
      .def_property_readonly("preset", [](Linear& l) { return l.layer.recipe().name; })
      .def("__repr__", [](Linear& l) {
        return "lowp.QuantLinear('" + l.layer.recipe().name + "', " + std::to_string(l.in_features) + ", " +
               std::to_string(l.out_features) + ")";
      });
  m.def("train_recipes", &accuracy::train_recipe_names,
        "The built-in training recipe names (`lowp recipes`), which QuantLinear.from_recipe and lowp.torch take.");
  m.def("recipe_note_for_torch", [](const std::string& name) {
    try {
      return name.rfind("preset:", 0) == 0 ? std::string() : accuracy::train_recipe_linears(name).note_for_torch;
    } catch (const Error&) {
      return std::string();  // not a recipe: from_recipe reports it (a linear preset, or the error)
    }
  }, py::arg("recipe"), "The one line naming the keys of a recipe file that lowp.torch does not apply ('' if none).");
  m.def("linear_presets", [] {
    std::vector<std::string> names;
    for (const quant::LinearRecipe& p : quant::linear_presets()) names.push_back(p.name);
    return names;
  }, "The linear preset names (`lowp recipes`), which QuantLinear takes.");
}

}  // namespace lowp::python
