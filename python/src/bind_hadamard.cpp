// lowp.fwht and lowp.Rotation: Hadamard transforms of the rows (last dimension) of an array.
#include <cmath>
#include <optional>

#include "common.hpp"
#include "lowp/hadamard/fwht.hpp"
#include "lowp/hadamard/rotation.hpp"
#include "lowp/numerics/error.hpp"

namespace lowp::python {
namespace {

using hadamard::Rotation;
using hadamard::RotationKind;

F32Out fwht(F32In x, std::optional<float> scale) {
  const auto shape = shape_of(x);
  const Matrix m = as_matrix(shape, "fwht");
  const float s = scale ? *scale : hadamard::orthonormal_scale(m.cols);
  F32Out out(shape);
  float* o = out.mutable_data();
  const float* in = x.data();
  try {  // the GIL is released around the kernel only (no Python object is touched)
    py::gil_scoped_release nogil;
    std::copy(in, in + m.rows * m.cols, o);
    if (m.rows > 0) hadamard::fwht_rows(o, m.rows, m.cols, m.cols, s);
  } catch (const Error& e) {
    throw py::value_error(e.what());  // a length that is not a power of two: the argument's shape
  }
  return out;
}

RotationKind kind_arg(const std::string& name) {
  if (name == "none") return RotationKind::none;
  if (name == "hadamard") return RotationKind::hadamard;
  if (name == "randomized") return RotationKind::randomized;
  if (name == "block_diagonal" || name == "block") return RotationKind::block_diagonal;
  throw py::value_error("unknown rotation '" + name + "' (none, hadamard, randomized, block_diagonal)");
}

Rotation make_rotation(const std::string& kind, std::size_t size, std::size_t block, std::uint64_t seed) {
  Rotation r{kind_arg(kind), size, block, seed};
  try {
    r.validate();
  } catch (const Error& e) {
    throw py::value_error(e.what());
  }
  return r;
}

// Applies `op` to a copy of x (rows of length r.size) and returns it.
template <class Op>
F32Out transformed(const Rotation& r, F32In x, const char* fn, Op op) {
  const auto shape = shape_of(x);
  const Matrix m = as_matrix(shape, fn);
  if (m.cols != r.size)
    throw py::value_error(std::string(fn) + ": rows have " + std::to_string(m.cols) + " elements, the rotation " +
                          std::to_string(r.size));
  F32Out out(shape);
  float* o = out.mutable_data();
  const float* in = x.data();
  {  // the GIL is released around the kernel only (no Python object is touched)
    py::gil_scoped_release nogil;
    std::copy(in, in + m.rows * m.cols, o);
    if (m.rows > 0) op(o, m.rows);
  }
  return out;
}

}  // namespace

void bind_hadamard(py::module_& m) {
  m.def("fwht", &fwht, py::arg("x"), py::arg("scale") = py::none(),
        "Walsh-Hadamard transform of each row (last dimension, a power of two) as a new float32 array:\n"
        "scale * H x. scale defaults to the orthonormal 1/sqrt(n) (in float32); pass 1.0 for the plain sums.");
  py::class_<Rotation>(m, "Rotation",
                       "An orthonormal rotation R of rows of `size` elements: kind none, hadamard, randomized\n"
                       "(random signs then Hadamard, from seed), block_diagonal (Sylvester blocks of `block`).")
      .def(py::init(&make_rotation), py::arg("kind"), py::arg("size"), py::arg("block") = 0, py::arg("seed") = 0)
      .def("apply",
           [](const Rotation& r, F32In x) {
             return transformed(r, x, "apply", [&](float* p, std::size_t rows) { r.apply(p, rows, r.size); });
           },
           py::arg("x"), "x R for each row of x (a new array).")
      .def("apply_inverse",
           [](const Rotation& r, F32In x) {
             return transformed(r, x, "apply_inverse",
                                [&](float* p, std::size_t rows) { r.apply_inverse(p, rows, r.size); });
           },
           py::arg("x"), "x R^T for each row of x: undoes apply.")
      .def("fold_into_weight",
           [](const Rotation& r, F32In w) {
             return transformed(r, w, "fold_into_weight",
                                [&](float* p, std::size_t rows) { r.fold_into_weight(p, rows, r.size); });
           },
           py::arg("w"), "W R for a weight W (out_features x size): (x R)(W R)^T = x W^T.")
      .def_property_readonly("size", [](const Rotation& r) { return r.size; })
      .def("__repr__", [](const Rotation& r) { return "lowp.Rotation(" + r.describe() + ")"; });
}

}  // namespace lowp::python
