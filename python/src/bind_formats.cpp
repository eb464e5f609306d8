// lowp.formats, encode, decode, pack, unpack: the bulk cast kernels over numpy arrays.
#include <algorithm>
#include <cstring>
#include <optional>
#include <span>

#include "common.hpp"
#include "lowp/formats/bulk.hpp"
#include "lowp/formats/codec.hpp"
#include "lowp/formats/registry.hpp"
#include "lowp/numerics/error.hpp"
#include "lowp/numerics/parallel.hpp"

namespace lowp::python {
namespace {

// Arrays are cast in pieces of this many elements (a multiple of 4, so FP4/FP6 pieces start on
// a byte/group boundary): the packed form of a piece stays in cache, and pieces run on all
// threads (dynamic: a thread descheduled on a busy machine does not hold up the others).
// Stochastic rounding takes each element's bits from its global index, so the codes
// do not depend on the piece size or the thread count.
constexpr std::size_t kPiece = std::size_t{1} << 16;

py::dtype code_dtype(const Format& f) {
  switch (code_bits(f)) {
    case 8: return py::dtype::of<std::uint8_t>();
    case 16: return py::dtype::of<std::uint16_t>();
    default: return py::dtype::of<std::uint32_t>();
  }
}

const char* specials_name(Specials s) {
  switch (s) {
    case Specials::ieee: return "ieee";
    case Specials::fn: return "fn";
    case Specials::fnuz: return "fnuz";
    case Specials::p3109: return "p3109";
    case Specials::finite: return "finite";
  }
  return "";
}

py::list formats() {
  py::list out;
  for (const NamedFormat& p : presets()) {
    const Format& f = p.format;
    py::dict d;
    d["name"] = std::string(p.name);
    py::list aliases;
    for (auto a : p.aliases) aliases.append(std::string(a));
    d["aliases"] = aliases;
    d["bits"] = f.bits();
    d["kind"] = f.kind == Kind::floating ? "floating" : "integer";
    d["signed"] = f.is_signed;
    d["exp_bits"] = f.exp_bits;
    d["man_bits"] = f.man_bits;
    d["bias"] = f.bias;
    d["specials"] = specials_name(f.specials);
    d["max"] = f.max_finite();
    d["min_normal"] = f.min_normal();
    d["min_subnormal"] = f.min_subnormal();
    d["inf"] = f.inf_code(false) ? py::cast(*f.inf_code(false)) : py::none();
    d["nan"] = f.nan_code() ? py::cast(*f.nan_code()) : py::none();
    d["dtype"] = code_dtype(f);
    d["note"] = std::string(p.note);
    out.append(d);
  }
  return out;
}

// Runs body(first, count) over [0, n) in pieces, on all threads when there is enough work.
template <class Body>
void for_pieces(std::size_t n, Body&& body) {
  const auto pieces = static_cast<std::ptrdiff_t>((n + kPiece - 1) / kPiece);
  FirstError err;
#pragma omp parallel for schedule(dynamic, 4) if (pieces > 8)
  for (std::ptrdiff_t p = 0; p < pieces; ++p)
    err.run([&] {
      const std::size_t first = static_cast<std::size_t>(p) * kPiece;
      body(first, std::min(kPiece, n - first));
    });
  err.rethrow();
}

py::array encode(F32In x, const std::string& fmt, const std::string& rounding, bool saturate, std::uint64_t seed,
                 bool packed) {
  const Format f = format_arg(fmt);
  BulkOptions opt;
  opt.cast.round = rounding_arg(rounding);
  opt.cast.saturate = saturate;
  opt.seed = seed;
  const auto shape = shape_of(x);
  const std::size_t n = count_of(shape);
  const float* in = x.data();
  if (packed) {
    py::array_t<std::uint8_t> out(static_cast<py::ssize_t>(encoded_bytes(f, n)));
    std::uint8_t* o = out.mutable_data();
    {  // the GIL is released around the kernel only (no Python object is touched)
      py::gil_scoped_release nogil;
      for_pieces(n, [&](std::size_t first, std::size_t count) {
        BulkOptions po = opt;
        po.offset = first;
        encode_f32(f, {in + first, count}, {o + encoded_bytes(f, first), encoded_bytes(f, count)}, po);
      });
    }
    return out;
  }
  py::array out(code_dtype(f), shape);
  auto* o = static_cast<std::uint8_t*>(out.mutable_data());
  const std::size_t width = static_cast<std::size_t>(code_bits(f) / 8);
  {  // the GIL is released around the kernel only (no Python object is touched)
    py::gil_scoped_release nogil;
    for_pieces(n, [&](std::size_t first, std::size_t count) {
      BulkOptions po = opt;
      po.offset = first;
      po.one_per_byte = true;  // FP4/FP6: one uint8 code an element, written by the kernel
      encode_f32(f, {in + first, count}, {o + first * width, count * width}, po);
    });
  }
  return out;
}

// The codes as a C-contiguous array of the format's code dtype: no copy when they already
// are; other integer arrays are converted after a range check (no silent wrap-around).
py::array codes_arg(const py::object& obj, const Format& f, const char* fn) {
  const py::array codes = py::array::ensure(obj);
  if (!codes) throw py::value_error(std::string(fn) + ": codes must be an integer array");
  const py::dtype want = code_dtype(f);
  const bool contiguous = (codes.flags() & py::array::c_style) != 0;
  if (codes.dtype().is(want) || (codes.dtype().equal(want) && contiguous)) {
    if (contiguous) return codes;
    return py::array::ensure(codes, py::array::c_style);
  }
  const char kind = codes.dtype().kind();
  if (kind != 'u' && kind != 'i' && kind != 'b')
    throw py::value_error(std::string(fn) + ": codes must be an integer array, not " +
                          std::string(py::str(codes.dtype())));
  if (codes.size() > 0) {
    py::module_ np = py::module_::import("numpy");
    const py::object lo = np.attr("min")(codes), hi = np.attr("max")(codes);
    if (lo.attr("__lt__")(0).cast<bool>() || hi.attr("__gt__")(f.code_mask()).cast<bool>())
      throw Error(std::string(fn) + ": codes " + std::string(py::str(lo)) + ".." + std::string(py::str(hi)) +
                  " are not " + format_name(f) + " codes (0.." + std::to_string(f.code_mask()) + ")");
  }
  return py::array::ensure(codes.attr("astype")(want), py::array::c_style);
}

// Codes wider than the format: bad data, named with the first offending index.
void check_width(const py::array& c, const Format& f, const char* fn) {
  if (code_bits(f) == f.bits() || c.size() == 0) return;
  const std::uint32_t mask = f.code_mask();
  const std::size_t n = static_cast<std::size_t>(c.size());
  auto first_bad = [&](auto* p) -> std::optional<std::size_t> {
    for (std::size_t i = 0; i < n; ++i)
      if (p[i] > mask) return i;
    return std::nullopt;
  };
  std::optional<std::size_t> bad;
  std::uint32_t value = 0;
  if (code_bits(f) == 8) {
    auto* p = static_cast<const std::uint8_t*>(c.data());
    if ((bad = first_bad(p))) value = p[*bad];
  } else if (code_bits(f) == 16) {
    auto* p = static_cast<const std::uint16_t*>(c.data());
    if ((bad = first_bad(p))) value = p[*bad];
  } else {
    auto* p = static_cast<const std::uint32_t*>(c.data());
    if ((bad = first_bad(p))) value = p[*bad];
  }
  if (bad)
    throw Error(std::string(fn) + ": code " + std::to_string(value) + " at index " + std::to_string(*bad) +
                " is not a " + format_name(f) + " code (0.." + std::to_string(mask) + ")");
}

F32Out decode(const py::object& codes_in, const std::string& fmt) {
  const Format f = format_arg(fmt);
  const py::array codes = codes_arg(codes_in, f, "decode");
  const auto shape = shape_of(codes);
  const std::size_t n = count_of(shape);
  F32Out out(shape);
  float* o = out.mutable_data();
  const auto* c = static_cast<const std::uint8_t*>(codes.data());
  const int sb = storage_bits(f);
  const std::size_t width = static_cast<std::size_t>(code_bits(f) / 8);
  const std::string name = format_name(f);
  {  // the GIL is released around the kernel only (no Python object is touched)
    py::gil_scoped_release nogil;
    if (sb >= 8) check_width(codes, f, "decode");
    for_pieces(n, [&](std::size_t first, std::size_t count) {
      if (sb >= 8) {
        decode_f32(f, {c + first * width, count * width}, {o + first, count});
      } else {
        std::uint8_t tmp[kPiece];
        pack_codes(c + first, count, sb, f.code_mask(), tmp, first, "decode", name);
        decode_f32(f, {tmp, encoded_bytes(f, count)}, {o + first, count});
      }
    });
  }
  return out;
}

py::array_t<std::uint8_t> pack(const py::object& codes_in, const std::string& fmt) {
  const Format f = format_arg(fmt);
  const py::array codes = codes_arg(codes_in, f, "pack");
  const std::size_t n = static_cast<std::size_t>(codes.size());
  py::array_t<std::uint8_t> out(static_cast<py::ssize_t>(encoded_bytes(f, n)));
  std::uint8_t* o = out.mutable_data();
  const auto* c = static_cast<const std::uint8_t*>(codes.data());
  const int sb = storage_bits(f);
  const std::string name = format_name(f);
  {  // the GIL is released around the kernel only (no Python object is touched)
    py::gil_scoped_release nogil;
    if (sb >= 8) {
      check_width(codes, f, "pack");
      std::memcpy(o, c, encoded_bytes(f, n));
    } else {
      pack_codes(c, n, sb, f.code_mask(), o, 0, "pack", name);
    }
  }
  return out;
}

py::array unpack(const py::array_t<std::uint8_t, py::array::c_style | py::array::forcecast>& data,
                 const std::string& fmt, std::optional<std::size_t> count) {
  const Format f = format_arg(fmt);
  const std::size_t bytes = static_cast<std::size_t>(data.size());
  const int sb = storage_bits(f);
  // Without a count: every element the bytes hold (for FP6 the bytes must be whole groups).
  std::size_t n;
  if (count) {
    n = *count;
  } else {
    if (sb == 6 && bytes % 3 != 0)
      throw py::value_error("unpack: " + std::to_string(bytes) + " bytes are not whole groups of 3 for " +
                            format_name(f) + "; pass count=");
    n = sb == 4 ? 2 * bytes : sb == 6 ? bytes / 3 * 4 : bytes / static_cast<std::size_t>(sb / 8);
    if (sb >= 8 && bytes % static_cast<std::size_t>(sb / 8) != 0)
      throw py::value_error("unpack: " + std::to_string(bytes) + " bytes are not whole " + format_name(f) + " codes");
  }
  if (encoded_bytes(f, n) > bytes)
    throw py::value_error("unpack: " + std::to_string(bytes) + " bytes hold fewer than " + std::to_string(n) + " " +
                          format_name(f) + " codes (they need " + std::to_string(encoded_bytes(f, n)) + ")");
  py::array out(code_dtype(f), std::vector<py::ssize_t>{static_cast<py::ssize_t>(n)});
  auto* o = static_cast<std::uint8_t*>(out.mutable_data());
  const std::uint8_t* in = data.data();
  {  // the GIL is released around the kernel only (no Python object is touched)
    py::gil_scoped_release nogil;
    if (sb >= 8) std::memcpy(o, in, encoded_bytes(f, n));
    else unpack_codes(in, n, sb, o);
  }
  return out;
}

}  // namespace

void bind_formats(py::module_& m) {
  m.def("formats", &formats, "Every preset format: name, aliases, bits, exponent/mantissa bits, bias, range, Inf/NaN codes, code dtype.");
  m.def("encode", &encode, py::arg("x"), py::arg("fmt"), py::arg("rounding") = "nearest", py::arg("saturate") = false,
        py::arg("seed") = 0, py::arg("packed") = false,
        "float32 array -> one code per element (uint8, uint16 or uint32 by format width), same shape.\n"
        "rounding: nearest (ties to even), away, zero, up, down, odd, stochastic (bits of element i from\n"
        "(seed, i)). packed=True returns the flat packed bytes instead (FP4 two per byte, FP6 four per 3).");
  m.def("decode", &decode, py::arg("codes"), py::arg("fmt"), "Codes (one per element) -> float32 values, same shape.");
  m.def("pack", &pack, py::arg("codes"), py::arg("fmt"),
        "Codes (one per element) -> packed bytes (FP4: two per byte, low nibble first; FP6: four per three bytes).");
  m.def("unpack", &unpack, py::arg("data"), py::arg("fmt"), py::arg("count") = py::none(),
        "Packed bytes -> codes (one per element); count defaults to every element the bytes hold.");
}

}  // namespace lowp::python
