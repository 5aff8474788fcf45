// Placeholder until the replay buffers land (being written now).
#include <pybind11/pybind11.h>
namespace py = pybind11;
void bind_replay(py::module_& m) { (void)m; }
