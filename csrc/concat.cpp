#include "concat.h"

#include <cstring>
#include <string>
#include <vector>

#include "array_utils.h"

namespace league {

namespace {

// The common case, accepted as is: a C-contiguous numeric array with rows.
bool is_plain_c_array(PyObject* obj) {
  if (!py::isinstance<py::array>(obj)) return false;
  auto a = py::reinterpret_borrow<py::array>(obj);
  return a.ndim() >= 1 && (a.flags() & py::array::c_style) && !holds_objects(a.dtype());
}

struct Copy {
  char* dst;
  const char* src;
  size_t nbytes;
};

}  // namespace

py::dict concat_columns(const py::sequence& batches) {
  const size_t nb = py::len(batches);
  if (nb == 0) throw py::value_error("concat needs at least one batch");

  py::dict first = batches[0].cast<py::dict>();
  std::vector<py::str> names;
  for (auto item : first) names.emplace_back(py::reinterpret_borrow<py::str>(item.first));
  const size_t nc = names.size();

  // Pass 1: validate schemas, size the outputs. inputs[c][b] keeps arrays alive.
  std::vector<std::vector<py::array>> inputs(nc, std::vector<py::array>(nb));
  std::vector<py::ssize_t> total_rows(nc, 0);
  for (size_t b = 0; b < nb; ++b) {
    py::dict d = batches[b].cast<py::dict>();
    if (py::len(d) != nc) {
      for (auto item : d) {
        if (!first.contains(item.first)) {
          throw py::value_error("concat: column '" + py::str(item.first).cast<std::string>() +
                                "' is in batch " + std::to_string(b) + " but not in batch 0");
        }
      }
    }
    for (size_t c = 0; c < nc; ++c) {
      // Column names are only turned into std::string on the error paths:
      // this loop runs batches x columns times.
      PyObject* value = PyDict_GetItemWithError(d.ptr(), names[c].ptr());
      if (value == nullptr) {
        if (PyErr_Occurred()) throw py::error_already_set();
        throw py::value_error("concat: column '" + names[c].cast<std::string>() +
                              "' is in batch 0 but missing from batch " + std::to_string(b));
      }
      py::array a = is_plain_c_array(value)
                        ? py::reinterpret_borrow<py::array>(value)
                        : as_c_contiguous(value, "column '" + names[c].cast<std::string>() + "'");
      if (b > 0) {
        const py::array& a0 = inputs[c][0];
        bool same = a.ndim() == a0.ndim() && a.dtype().equal(a0.dtype());
        for (py::ssize_t k = 1; same && k < a.ndim(); ++k) same = a.shape(k) == a0.shape(k);
        if (!same) {
          throw py::value_error("concat: column '" + names[c].cast<std::string>() + "' has " + describe_array(a) +
                                " in batch " + std::to_string(b) + " but " + describe_array(a0) + " in batch 0");
        }
      }
      total_rows[c] += a.shape(0);
      inputs[c][b] = std::move(a);
    }
  }

  // Allocate each output column once.
  py::dict out;
  std::vector<Copy> copies;
  copies.reserve(nc * nb);
  for (size_t c = 0; c < nc; ++c) {
    const py::array& a0 = inputs[c][0];
    std::vector<py::ssize_t> shape(a0.shape(), a0.shape() + a0.ndim());
    shape[0] = total_rows[c];
    py::array col(a0.dtype(), shape);
    char* dst = static_cast<char*>(col.mutable_data());
    for (size_t b = 0; b < nb; ++b) {
      const py::array& a = inputs[c][b];
      const size_t n = static_cast<size_t>(a.nbytes());
      if (n) copies.push_back({dst, static_cast<const char*>(a.data()), n});
      dst += n;
    }
    out[names[c]] = std::move(col);
  }

  // Pass 2: the bytes, without the GIL. inputs keeps every source alive.
  {
    py::gil_scoped_release release;
    for (const Copy& cp : copies) std::memcpy(cp.dst, cp.src, cp.nbytes);
  }
  return out;
}

}  // namespace league
