// Columnar concatenation of sample batches.
#pragma once

#include <pybind11/pybind11.h>

namespace league {

// batches: a sequence of dict[str, np.ndarray] with identical keys, dtypes and
// trailing shapes. Returns dict[str, np.ndarray]: each column allocated once
// and filled with the GIL released. Raises ValueError naming the offending
// column and both conflicting schemas.
pybind11::dict concat_columns(const pybind11::sequence& batches);

}  // namespace league
