// Shared by the binding files: argument parsing that turns lowp::Error into ValueError, and
// numpy array helpers. Arrays come in as float32 C-contiguous views (no copy when they already
// are) and go out as new numpy arrays written by the C++ kernels with the GIL released.
#pragma once
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "lowp/formats/format.hpp"
#include "lowp/numerics/rounding.hpp"
#include "lowp/quant/quantize.hpp"

namespace lowp::python {

namespace py = pybind11;

using F32In = py::array_t<float, py::array::c_style | py::array::forcecast>;
using F32Out = py::array_t<float>;

// Bad arguments (an unknown format name, a spec that does not parse): ValueError with the
// C++ message.
Format format_arg(std::string_view name);
Round rounding_arg(std::string_view name);
quant::QuantSpec spec_arg(std::string_view text);

// The shape of an array as a vector, and its element count.
std::vector<py::ssize_t> shape_of(const py::array& a);
std::size_t count_of(const std::vector<py::ssize_t>& shape);

// A 2-D (rows, cols) view of an array: a 1-D array is one row; more dimensions fold into rows.
struct Matrix {
  std::size_t rows = 0, cols = 0;
};
Matrix as_matrix(const std::vector<py::ssize_t>& shape, const char* what);

// Numpy dtype of one code of `f` (uint8, uint16 or uint32), and the storage bits it holds.
int code_bits(const Format& f);  // 8, 16 or 32

void bind_formats(py::module_& m);
void bind_quant(py::module_& m);
void bind_hadamard(py::module_& m);
void bind_linear(py::module_& m);
void bind_accuracy(py::module_& m);

}  // namespace lowp::python

namespace lowp::python {

// FP4/FP6 packing as lowp/formats/bulk.hpp stores codes (4-bit: two per byte, element 2i in the
// low nibble; 6-bit: four per three bytes, little-endian, element 4i in the low six bits).
// pack_codes throws lowp::Error "<fn>: code 0x.. at index i is not a <format> code" for the
// first code above `mask` (i counts from `first`).
void pack_codes(const std::uint8_t* codes, std::size_t n, int storage, std::uint32_t mask, std::uint8_t* out,
                std::size_t first, const std::string& fn, const std::string& format);
void unpack_codes(const std::uint8_t* in, std::size_t n, int storage, std::uint8_t* out);

}  // namespace lowp::python
