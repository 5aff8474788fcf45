// pybind11 module league._core: thin bindings over the plain C++ in this folder.
// The Python faces (league/batch.py, league/replay.py) document the API.
#include <pybind11/pybind11.h>

#include "concat.h"

namespace py = pybind11;

void bind_replay(py::module_& m);  // replay_bindings.cpp
namespace league {
void bind_boards(py::module_& m);  // board_bindings.cpp
void bind_search(py::module_& m);  // search_bindings.cpp
}

PYBIND11_MODULE(_core, m) {
  m.doc() = "league's C++ core: batch concatenation and replay buffers";
  m.def("concat_columns", &league::concat_columns, py::arg("batches"),
        "Concatenate a sequence of dict[str, ndarray] column-wise (GIL released for the copy).");
  bind_replay(m);
  league::bind_boards(m);
  league::bind_search(m);
}
