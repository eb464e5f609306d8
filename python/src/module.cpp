// The `lowp` extension module: lowp.Error for bad data, argument helpers shared by the
// binding files (common.hpp).
#include <pybind11/pybind11.h>

#include <string>

#include "common.hpp"
#include "lowp/formats/bulk.hpp"
#include "lowp/formats/registry.hpp"
#include "lowp/numerics/error.hpp"

namespace lowp::python {

Format format_arg(std::string_view name) {
  try {
    return parse_format(name);
  } catch (const Error& e) {
    throw py::value_error(e.what());
  }
}

Round rounding_arg(std::string_view name) {
  if (auto r = parse_round(name)) return *r;
  throw py::value_error("unknown rounding mode '" + std::string(name) +
                        "' (nearest, away, zero, up, down, odd, stochastic)");
}

quant::QuantSpec spec_arg(std::string_view text) {
  try {
    return quant::parse_quant_spec(text);
  } catch (const Error& e) {
    throw py::value_error(e.what());
  }
}

std::vector<py::ssize_t> shape_of(const py::array& a) {
  return std::vector<py::ssize_t>(a.shape(), a.shape() + a.ndim());
}

std::size_t count_of(const std::vector<py::ssize_t>& shape) {
  std::size_t n = 1;
  for (auto d : shape) n *= static_cast<std::size_t>(d);
  return n;
}

Matrix as_matrix(const std::vector<py::ssize_t>& shape, const char* what) {
  if (shape.empty()) throw py::value_error(std::string(what) + ": expected an array of at least one dimension, got a scalar");
  Matrix m;
  m.cols = static_cast<std::size_t>(shape.back());
  m.rows = m.cols == 0 ? 0 : count_of(shape) / m.cols;
  return m;
}

int code_bits(const Format& f) {
  const int b = storage_bits(f);
  return b <= 8 ? 8 : b;
}

}  // namespace lowp::python

PYBIND11_MODULE(_lowp, m) {
  namespace lp = lowp::python;
  m.doc() = "lowp: exact emulation of low-precision number formats over the C++ kernels";
  // Bad data (a model file that does not parse, token ids out of range, a code a format never
  // produces): lowp.Error, a RuntimeError, with the C++ message. Bad arguments: ValueError.
  pybind11::register_exception<lowp::Error>(m, "Error", PyExc_RuntimeError);
  lp::bind_formats(m);
  lp::bind_quant(m);
  lp::bind_hadamard(m);
  lp::bind_linear(m);
  lp::bind_accuracy(m);
}
