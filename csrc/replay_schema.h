// The column schema of a replay buffer (names, dtypes, trailing shapes) and
// the validation of incoming batches against it. This is the one place where
// replay inputs are checked: everything runs with the GIL held and raises
// ValueError/TypeError naming the column and both schemas; the C++ cores in
// replay_buffer.h trust what passes here.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <string>
#include <vector>

namespace league {

namespace py = pybind11;

struct ColumnSpec {
  py::str key;  // the dict key, kept to look columns up without re-encoding
  std::string name;
  py::dtype dtype;
  std::vector<py::ssize_t> trailing;
  size_t row_bytes = 0;

  std::string describe() const;  // "float32[*, 84]"
};

// Arrays of one validated batch: raw row pointers plus a reference to every
// array they point into (including contiguous copies made along the way).
struct BoundBatch {
  size_t rows = 0;
  std::vector<const char*> data;
  std::vector<py::array> keep_alive;
};

class BatchSchema {
 public:
  // Schema of a first batch: str names, numeric dtypes (bool, int, uint,
  // float, complex), at least one column, none of the reserved names.
  static BatchSchema infer(const py::dict& batch, const std::vector<std::string>& reserved);
  // Schema from (name, array) pairs in a saved file (row count ignored).
  static BatchSchema from_arrays(const std::vector<std::pair<std::string, py::array>>& columns);

  bool empty() const { return columns_.empty(); }
  const std::vector<ColumnSpec>& columns() const { return columns_; }
  std::vector<size_t> row_bytes() const;
  std::string describe() const;  // "{obs: float32[*, 84], actions: int64[*]}"

  // Checks a batch against the schema: the same column names, the same
  // dtypes (TypeError otherwise: dtypes are never converted) and trailing
  // shapes (ValueError), equal row counts. Non-contiguous arrays are copied
  // once into C order. Fills out.data in schema order.
  void bind(const py::dict& batch, BoundBatch& out) const;

  // One new uninitialised array per column with `rows` rows, in a dict keyed
  // like the schema; dst receives their data pointers in schema order.
  py::dict allocate(size_t rows, std::vector<char*>& dst) const;

 private:
  std::vector<ColumnSpec> columns_;
};

}  // namespace league
