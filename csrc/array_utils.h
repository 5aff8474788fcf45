// Small helpers shared by the pybind11 bindings: describing arrays in error
// messages and making inputs C-contiguous. Everything here runs with the GIL held.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>
#include <vector>

namespace league {

namespace py = pybind11;

// "float32[200, 84]" -- the form every shape/dtype error message uses.
inline std::string describe_array(const py::array& a) {
  std::string s = py::str(a.dtype()).cast<std::string>();
  s += "[";
  for (py::ssize_t d = 0; d < a.ndim(); ++d) {
    if (d) s += ", ";
    s += std::to_string(a.shape(d));
  }
  return s + "]";
}

// "float32[*, 84]" -- a column's schema, i.e. everything but the row count.
inline std::string describe_schema(const py::dtype& dt, const std::vector<py::ssize_t>& trailing) {
  std::string s = py::str(dt).cast<std::string>() + "[*";
  for (auto d : trailing) s += ", " + std::to_string(d);
  return s + "]";
}

// True for dtype object and for structured dtypes with an object field: their bytes are
// references, and copying them with memcpy would skip reference counting.
inline bool holds_objects(const py::dtype& dt) {
  constexpr std::uint64_t kNpyItemHasObject = 0x01;  // NPY_ITEM_HASOBJECT
  return dt.kind() == 'O' || (dt.flags() & kNpyItemHasObject) != 0;
}

inline std::vector<py::ssize_t> trailing_shape(const py::array& a) {
  return std::vector<py::ssize_t>(a.shape() + 1, a.shape() + a.ndim());
}

// Numpy arrays only; a non-contiguous view is copied once into C order
// (documented behaviour: we convert layout, never dtype).
inline py::array as_c_contiguous(const py::handle& obj, const std::string& what) {
  if (!py::isinstance<py::array>(obj)) {
    throw py::type_error(what + " must be a numpy array, got " +
                         py::str(py::type::of(obj).attr("__name__")).cast<std::string>());
  }
  py::array a = py::reinterpret_borrow<py::array>(obj);
  if (a.ndim() < 1) throw py::value_error(what + " must have at least one dimension (rows)");
  if (holds_objects(a.dtype())) {
    throw py::type_error(what + " has dtype " + py::str(a.dtype()).cast<std::string>() +
                         ", which holds Python objects and cannot be copied");
  }
  if (!(a.flags() & py::array::c_style)) {
    a = py::module_::import("numpy").attr("ascontiguousarray")(a);
  }
  return a;
}

inline py::ssize_t row_bytes(const py::array& a) {
  py::ssize_t n = a.itemsize();
  for (py::ssize_t d = 1; d < a.ndim(); ++d) n *= a.shape(d);
  return n;
}

}  // namespace league
