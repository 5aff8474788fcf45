#include "replay_schema.h"

#include <algorithm>

#include "array_utils.h"

namespace league {

namespace {

std::string repr_of(const py::handle& h) { return py::repr(h).cast<std::string>(); }

bool storable_kind(char kind) { return kind == 'b' || kind == 'i' || kind == 'u' || kind == 'f' || kind == 'c'; }

ColumnSpec spec_of(const std::string& name, const py::str& key, const py::array& a) {
  ColumnSpec spec;
  spec.key = key;
  spec.name = name;
  spec.dtype = a.dtype();
  spec.trailing = trailing_shape(a);
  spec.row_bytes = static_cast<size_t>(row_bytes(a));
  if (!storable_kind(spec.dtype.kind())) {
    throw py::type_error("column '" + name + "' has dtype " + py::str(spec.dtype).cast<std::string>() +
                         "; replay buffers store bool, integer, float or complex columns");
  }
  return spec;
}

// "{obs: float32[*, 84], ...}" for whatever a caller passed, without assuming it is valid.
std::string describe_batch(const py::dict& batch) {
  std::string s = "{";
  for (auto item : batch) {
    if (s.size() > 1) s += ", ";
    s += py::isinstance<py::str>(item.first) ? item.first.cast<std::string>() : repr_of(item.first);
    s += ": ";
    if (py::isinstance<py::array>(item.second)) {
      py::array a = py::reinterpret_borrow<py::array>(item.second);
      s += a.ndim() >= 1 ? describe_schema(a.dtype(), trailing_shape(a)) : describe_array(a);
    } else {
      s += py::str(py::type::of(item.second).attr("__name__")).cast<std::string>();
    }
  }
  return s + "}";
}

}  // namespace

std::string ColumnSpec::describe() const { return describe_schema(dtype, trailing); }

BatchSchema BatchSchema::infer(const py::dict& batch, const std::vector<std::string>& reserved) {
  if (py::len(batch) == 0) throw py::value_error("cannot add a batch with no columns");
  BatchSchema schema;
  for (auto item : batch) {
    if (!py::isinstance<py::str>(item.first)) {
      throw py::type_error("column names must be str, got " + repr_of(item.first));
    }
    const std::string name = item.first.cast<std::string>();
    if (std::find(reserved.begin(), reserved.end(), name) != reserved.end()) {
      throw py::value_error("column '" + name + "' is reserved: sample() writes it; drop it before adding");
    }
    py::array a = as_c_contiguous(item.second, "column '" + name + "'");
    schema.columns_.push_back(spec_of(name, py::reinterpret_borrow<py::str>(item.first), a));
  }
  return schema;
}

BatchSchema BatchSchema::from_arrays(const std::vector<std::pair<std::string, py::array>>& columns) {
  BatchSchema schema;
  for (const auto& [name, a] : columns) {
    if (a.ndim() < 1) throw py::value_error("saved column '" + name + "' has no row dimension");
    schema.columns_.push_back(spec_of(name, py::str(name), a));
  }
  return schema;
}

std::vector<size_t> BatchSchema::row_bytes() const {
  std::vector<size_t> out;
  for (const auto& c : columns_) out.push_back(c.row_bytes);
  return out;
}

std::string BatchSchema::describe() const {
  std::string s = "{";
  for (const auto& c : columns_) s += (s.size() > 1 ? ", " : "") + c.name + ": " + c.describe();
  return s + "}";
}

void BatchSchema::bind(const py::dict& batch, BoundBatch& out) const {
  const size_t nc = columns_.size();
  out.data.resize(nc);
  if (static_cast<size_t>(py::len(batch)) != nc) {
    for (auto item : batch) {
      bool known = false;
      for (const auto& c : columns_) known = known || c.key.equal(item.first);
      if (!known) {
        throw py::value_error("column " + repr_of(item.first) + " is not in the buffer's schema: batch " +
                              describe_batch(batch) + ", buffer " + describe());
      }
    }
  }
  for (size_t c = 0; c < nc; ++c) {
    const ColumnSpec& spec = columns_[c];
    PyObject* value = PyDict_GetItemWithError(batch.ptr(), spec.key.ptr());
    if (value == nullptr) {
      if (PyErr_Occurred()) throw py::error_already_set();
      throw py::value_error("column '" + spec.name + "' is missing from the batch: batch " +
                            describe_batch(batch) + ", buffer " + describe());
    }
    if (!py::isinstance<py::array>(value)) {
      throw py::type_error("column '" + spec.name + "' must be a numpy array, got " +
                           py::str(py::type::of(value).attr("__name__")).cast<std::string>());
    }
    py::array a = py::reinterpret_borrow<py::array>(value);
    const py::ssize_t nd = a.ndim();
    bool same_shape = nd == static_cast<py::ssize_t>(spec.trailing.size()) + 1;
    for (py::ssize_t k = 1; same_shape && k < nd; ++k) same_shape = a.shape(k) == spec.trailing[k - 1];
    if (!same_shape) {
      const std::string got = nd >= 1 ? describe_schema(a.dtype(), trailing_shape(a)) : describe_array(a);
      throw py::value_error("column '" + spec.name + "' is " + got + " in the batch but " + spec.describe() +
                            " in the buffer");
    }
    py::dtype dt = a.dtype();
    if (!dt.is(spec.dtype) && !dt.equal(spec.dtype)) {
      throw py::type_error("column '" + spec.name + "' is " + describe_schema(dt, spec.trailing) +
                           " in the batch but " + spec.describe() +
                           " in the buffer (dtypes are not converted; cast the column first)");
    }
    const size_t rows = static_cast<size_t>(a.shape(0));
    if (c == 0) {
      out.rows = rows;
    } else if (rows != out.rows) {
      throw py::value_error("column '" + spec.name + "' has " + std::to_string(rows) + " rows but column '" +
                            columns_[0].name + "' has " + std::to_string(out.rows));
    }
    if (!(a.flags() & py::array::c_style)) a = as_c_contiguous(a, "column '" + spec.name + "'");
    out.data[c] = static_cast<const char*>(a.data());
    // The copy runs without the GIL: own a reference so that another thread
    // emptying the caller's dict cannot free the array underneath it.
    out.keep_alive.push_back(std::move(a));
  }
}

py::dict BatchSchema::allocate(size_t rows, std::vector<char*>& dst) const {
  py::dict out;
  dst.resize(columns_.size());
  std::vector<py::ssize_t> shape;
  for (size_t c = 0; c < columns_.size(); ++c) {
    const ColumnSpec& spec = columns_[c];
    shape.assign(1, static_cast<py::ssize_t>(rows));
    shape.insert(shape.end(), spec.trailing.begin(), spec.trailing.end());
    py::array col(spec.dtype, shape);
    dst[c] = static_cast<char*>(col.mutable_data());
    out[spec.key] = std::move(col);
  }
  return out;
}

}  // namespace league
