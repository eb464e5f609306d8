// lowp.fake_quant and lowp.quantize: scaled quantization (spec strings as the CLI's) of a
// float32 array whose last dimension is the row (the GEMM reduction dimension).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <optional>
#include <memory>

#include "common.hpp"
#include "lowp/formats/bulk.hpp"
#include "lowp/formats/codec.hpp"
#include "lowp/formats/registry.hpp"

namespace lowp::python {
namespace {

// rounding / seed, when given, replace the spec's own.
quant::QuantSpec spec_with(const std::string& spec_text, const std::optional<std::string>& rounding,
                           const std::optional<std::uint64_t>& seed) {
  quant::QuantSpec spec = spec_arg(spec_text);
  if (rounding) spec.cast.round = rounding_arg(*rounding);
  if (seed) spec.seed = *seed;
  return spec;
}

// The clip mask of a quantization: 0 where the element was clipped (|x| above the magnitude of
// the format's largest finite code times its group's scale, so its code is that largest code
// and |x| > |q|), 1 elsewhere (NaN included).
void clip_mask(const quant::QuantizedTensor& q, const float* x, const float* deq, std::size_t n, std::uint8_t* mask) {
  const Format& f = q.spec.format;
  const double top = f.max_finite();
  const int sb = storage_bits(f);
  auto at_top = [&](std::uint32_t code) { return std::fabs(decode(f, code)) == top; };
  std::vector<std::uint8_t> unpacked;
  const std::uint8_t* bytes = q.codes.data();
  if (sb < 8) {
    unpacked.resize(n);
    unpack_codes(q.codes.data(), n, sb, unpacked.data());
    bytes = unpacked.data();
  }
  if (sb <= 8) {
    std::array<std::uint8_t, 256> top_code{};
    for (std::uint32_t c = 0; c < 256; ++c) top_code[c] = c <= f.code_mask() && at_top(c);
    for (std::size_t i = 0; i < n; ++i) mask[i] = !(top_code[bytes[i]] && std::fabs(x[i]) > std::fabs(deq[i]));
    return;
  }
  for (std::size_t i = 0; i < n; ++i) {
    std::uint32_t code = 0;
    std::memcpy(&code, bytes + i * (sb / 8), sb / 8);  // little-endian storage
    mask[i] = !(std::fabs(x[i]) > std::fabs(deq[i]) && at_top(code));
  }
}

py::object fake_quant(F32In x, const std::string& spec_text, const std::optional<std::string>& rounding,
                      const std::optional<std::uint64_t>& seed, bool with_mask) {
  const quant::QuantSpec spec = spec_with(spec_text, rounding, seed);
  const auto shape = shape_of(x);
  const Matrix m = as_matrix(shape, "fake_quant");
  F32Out out(shape);  // the input is only read: the result is a new array
  float* o = out.mutable_data();
  const float* in = x.data();
  if (!with_mask) {
    {  // the GIL is released around the kernel only (no Python object is touched)
      py::gil_scoped_release nogil;
      std::copy(in, in + m.rows * m.cols, o);
      quant::fake_quant(spec, o, m.rows, m.cols);
    }
    return out;
  }
  py::array_t<std::uint8_t> mask(shape);
  std::uint8_t* mk = mask.mutable_data();
  {  // the GIL is released around the kernel only (no Python object is touched)
    py::gil_scoped_release nogil;
    const quant::QuantizedTensor q = quant::quantize(spec, in, m.rows, m.cols);
    quant::dequantize(q, o);
    clip_mask(q, in, o, m.rows * m.cols, mk);
  }
  return py::make_tuple(out, mask);
}

// A quantized tensor: the C++ object, kept alive by the arrays that view it.
struct Quantized {
  quant::QuantizedTensor q;
  std::vector<py::ssize_t> shape;
};

std::shared_ptr<Quantized> quantize(F32In x, const std::string& spec_text, const std::optional<std::string>& rounding,
                                    const std::optional<std::uint64_t>& seed) {
  const quant::QuantSpec spec = spec_with(spec_text, rounding, seed);
  auto r = std::make_shared<Quantized>();
  r->shape = shape_of(x);
  const Matrix m = as_matrix(r->shape, "quantize");
  const float* in = x.data();
  {  // the GIL is released around the kernel only (no Python object is touched)
    py::gil_scoped_release nogil;
    r->q = quant::quantize(spec, in, m.rows, m.cols);
  }
  return r;
}

py::array codes_of(const std::shared_ptr<Quantized>& t) {
  const Format& f = t->q.spec.format;
  const int sb = storage_bits(f);
  const std::size_t n = count_of(t->shape);
  if (sb < 8) {  // one code per element, unpacked from the stored form
    py::array_t<std::uint8_t> out(t->shape);
    std::uint8_t* o = out.mutable_data();
    {  // the GIL is released around the kernel only (no Python object is touched)
      py::gil_scoped_release nogil;
      unpack_codes(t->q.codes.data(), n, sb, o);
    }
    return out;
  }
  const py::dtype dt = sb == 8 ? py::dtype::of<std::uint8_t>() : sb == 16 ? py::dtype::of<std::uint16_t>()
                                                                          : py::dtype::of<std::uint32_t>();
  // A read-only view of the stored codes, keeping the tensor alive.
  py::array view(dt, t->shape, {}, t->q.codes.data(), py::cast(t));
  py::detail::array_proxy(view.ptr())->flags &= ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
  return view;
}

F32Out dequantize(const std::shared_ptr<Quantized>& t) {
  F32Out out(t->shape);
  float* o = out.mutable_data();
  {  // the GIL is released around the kernel only (no Python object is touched)
    py::gil_scoped_release nogil;
    quant::dequantize(t->q, o);
  }
  return out;
}

}  // namespace

void bind_quant(py::module_& m) {
  m.def("fake_quant", &fake_quant, py::arg("x"), py::arg("spec"), py::arg("rounding") = py::none(),
        py::arg("seed") = py::none(), py::arg("clip_mask") = false,
        "dequantize(quantize(x)) as a new float32 array; spec as the CLI's (e.g. 'mxfp4', 'e4m3:row', 'nvfp4').\n"
        "The last dimension is the row (blocks run along it); other dimensions fold into rows.\n"
        "rounding / seed replace the spec's (stochastic rounding draws element i's bits from the seed).\n"
        "clip_mask=True returns (values, mask): mask a uint8 array, 0 where the element was clipped at the\n"
        "format's largest value times its group's scale, 1 elsewhere.");
  py::class_<Quantized, std::shared_ptr<Quantized>>(m, "QuantizedTensor",
                                                    "Codes and scales of a quantized array (from lowp.quantize).")
      .def_property_readonly("codes", &codes_of, "One code per element, the input's shape (read-only).")
      .def_property_readonly("packed_codes",
                             [](const std::shared_ptr<Quantized>& t) {
                               py::array_t<std::uint8_t> v({static_cast<py::ssize_t>(t->q.codes.size())}, {},
                                                           t->q.codes.data(), py::cast(t));
                               py::detail::array_proxy(v.ptr())->flags &= ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
                               return v;
                             },
                             "The codes as stored (FP4 two per byte, FP6 four per three bytes), read-only.")
      .def_property_readonly("scales", [](const std::shared_ptr<Quantized>& t) {
        return py::array_t<float>(static_cast<py::ssize_t>(t->q.scales.size()), t->q.scales.data());
      }, "Dequantization multiplier per group (row-major groups).")
      .def_property_readonly("scale_codes", [](const std::shared_ptr<Quantized>& t) {
        return py::array_t<std::uint8_t>(static_cast<py::ssize_t>(t->q.scale_codes.size()), t->q.scale_codes.data());
      }, "The E8M0 / UE4M3 codes of the scales, when the rule stores them so (else empty).")
      .def_property_readonly("tensor_scale", [](const std::shared_ptr<Quantized>& t) { return t->q.tensor_scale; },
                             "Second-level float32 scale (NVFP4); 1 otherwise.")
      .def_property_readonly("bits_per_element", [](const std::shared_ptr<Quantized>& t) { return t->q.bits_per_element(); })
      .def_property_readonly("spec", [](const std::shared_ptr<Quantized>& t) { return quant::describe(t->q.spec); })
      .def_property_readonly("format", [](const std::shared_ptr<Quantized>& t) { return format_name(t->q.spec.format); })
      .def_property_readonly("shape", [](const std::shared_ptr<Quantized>& t) {
        py::tuple s(t->shape.size());
        for (std::size_t i = 0; i < t->shape.size(); ++i) s[i] = t->shape[i];
        return s;
      })
      .def_property_readonly("nan_inputs", [](const std::shared_ptr<Quantized>& t) { return t->q.nan_inputs; })
      .def_property_readonly("inf_inputs", [](const std::shared_ptr<Quantized>& t) { return t->q.inf_inputs; })
      .def("dequantize", &dequantize, "The values the codes and scales stand for, float32, the input's shape.");
  m.def("quantize", &quantize, py::arg("x"), py::arg("spec"), py::arg("rounding") = py::none(),
        py::arg("seed") = py::none(),
        "Quantize a float32 array (last dimension = row) -> QuantizedTensor with .codes, .scales,\n"
        ".tensor_scale, .bits_per_element and .dequantize().");
}

}  // namespace lowp::python
