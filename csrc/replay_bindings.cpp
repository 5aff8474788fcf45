// league._core.ReplayCore: the Python-facing handle of one replay buffer.
// It owns the column schema (fixed by the first batch), validates every
// argument with the GIL held, then runs the core (replay_buffer.h) with the
// GIL released. league/replay.py documents the user API on top of it.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "array_utils.h"
#include "replay_buffer.h"
#include "replay_schema.h"

namespace py = pybind11;

namespace league {
namespace {

std::string fmt(double v) { return py::repr(py::float_(v)).cast<std::string>(); }

// A 1-D array of n numbers from whatever the caller passed; never converts
// from strings, objects or complex numbers.
py::array one_dim(const py::object& obj, const char* what, const char* kinds, const char* kinds_text) {
  py::array a = py::array::ensure(obj);
  if (!a) {
    PyErr_Clear();
    throw py::type_error(std::string(what) + " must be array-like, got " +
                         py::str(py::type::of(obj).attr("__name__")).cast<std::string>());
  }
  if (std::string(kinds).find(a.dtype().kind()) == std::string::npos) {
    throw py::type_error(std::string(what) + " must be " + kinds_text + ", got dtype " +
                         py::str(a.dtype()).cast<std::string>());
  }
  if (a.ndim() != 1) throw py::value_error(std::string(what) + " must be 1-D, got " + describe_array(a));
  return a;
}

constexpr py::ssize_t kMaxCapacity = py::ssize_t{1} << 40;

class ReplayCore {
 public:
  ReplayCore(py::ssize_t capacity, uint64_t seed, std::optional<double> alpha)
      : capacity_(capacity), alpha_(alpha), rng_(Rng(seed).state()) {
    if (capacity <= 0) throw py::value_error("capacity must be a positive integer, got " + std::to_string(capacity));
    // Far beyond any machine's memory, and keeps every size computation (trees
    // of 2 * next_power_of_two(capacity) nodes) clear of overflow.
    if (capacity > kMaxCapacity) {
      throw py::value_error("capacity " + std::to_string(capacity) + " exceeds the maximum of 2**40 rows");
    }
    if (alpha && !(*alpha >= 0.0 && std::isfinite(*alpha))) {
      throw py::value_error("alpha must be a finite number >= 0, got " + fmt(*alpha));
    }
    if (alpha) {
      // Bounds on raw priorities that keep every p^alpha a positive normal
      // double and the sum of all leaves finite (alpha 0 maps all p to 1).
      const double leaves = static_cast<double>(next_power_of_two(static_cast<size_t>(capacity)));
      low_ = *alpha > 0 ? std::pow(1e-300, 1.0 / *alpha) : 0.0;
      high_ = *alpha > 0 ? std::pow(1e300 / leaves, 1.0 / *alpha) : INFINITY;
    }
  }

  bool prioritized() const { return alpha_.has_value(); }
  py::ssize_t capacity() const { return capacity_; }
  size_t size() const { return core_ ? core_->size() : 0; }

  void add(const py::dict& batch, const py::object& priorities) {
    if (!prioritized() && !priorities.is_none()) {
      throw py::type_error("a uniform ReplayBuffer takes no priorities");
    }
    BatchSchema fresh;
    const BatchSchema* schema = &schema_;
    if (schema_.empty()) {
      fresh = BatchSchema::infer(batch, reserved());
      schema = &fresh;
    }
    BoundBatch bound;
    schema->bind(batch, bound);
    // (A default-constructed array_t would allocate an empty array on this hot path.)
    py::object prio_owner;
    const double* p = nullptr;
    if (!priorities.is_none()) {
      py::array_t<double> checked = checked_priorities(priorities, bound.rows);
      p = checked.data();
      prio_owner = std::move(checked);
    }
    if (!core_) {
      create_core(std::move(fresh));
    } else if (schema == &fresh) {
      // Another thread fixed the schema while numpy ran (it may drop the
      // GIL): validate again against the schema that now holds.
      schema_.bind(batch, bound);
      if (p && static_cast<size_t>(py::len(prio_owner)) != bound.rows) {
        throw py::value_error("the batch changed while it was being added");
      }
    }
    py::gil_scoped_release release;
    if (prioritized()) {
      as_prioritized().add(bound.data.data(), bound.rows, p);
    } else {
      core_->add(bound.data.data(), bound.rows);
    }
  }

  py::dict sample(py::ssize_t n, std::optional<double> beta) {
    if (n <= 0) throw py::value_error("batch_size must be a positive integer, got " + std::to_string(n));
    if (prioritized() != beta.has_value()) {
      throw py::type_error(prioritized() ? "prioritized sample needs beta" : "a uniform ReplayBuffer takes no beta");
    }
    if (beta && !(*beta >= 0.0 && *beta <= 1.0)) throw py::value_error("beta must be in [0, 1], got " + fmt(*beta));
    if (size() == 0) throw py::value_error("cannot sample from an empty replay buffer; add rows first");
    std::vector<char*> dst;
    py::dict out = schema_.allocate(static_cast<size_t>(n), dst);
    py::array_t<int64_t> slots(n);
    int64_t* slot_ptr = slots.mutable_data();
    if (beta) {
      py::array_t<float> weights(n);
      float* w = weights.mutable_data();
      {
        py::gil_scoped_release release;
        as_prioritized().sample(static_cast<size_t>(n), *beta, slot_ptr, w, dst.data());
      }
      out["weights"] = std::move(weights);
    } else {
      py::gil_scoped_release release;
      core_->sample(static_cast<size_t>(n), slot_ptr, dst.data());
    }
    out["batch_indexes"] = std::move(slots);
    return out;
  }

  void update_priorities(const py::object& indexes, const py::object& priorities) {
    if (!prioritized()) throw py::type_error("a uniform ReplayBuffer has no priorities");
    py::array idx = one_dim(indexes, "batch_indexes", "iu", "integers");
    auto slots = py::array_t<int64_t, py::array::c_style | py::array::forcecast>::ensure(idx);
    py::array_t<double> prio = checked_priorities(priorities, static_cast<size_t>(slots.size()), "batch_indexes");
    const size_t stored = size();
    const int64_t* s = slots.data();
    for (py::ssize_t j = 0; j < slots.size(); ++j) {
      if (s[j] < 0 || static_cast<size_t>(s[j]) >= stored) {
        throw py::value_error("batch_indexes[" + std::to_string(j) + "] = " + std::to_string(s[j]) +
                              " is out of range: " +
                              (s[j] >= 0 && s[j] < capacity_ ? "that slot has never been written; " : "") +
                              "the buffer holds " + std::to_string(stored) + " rows (valid indexes 0.." +
                              std::to_string(static_cast<int64_t>(stored) - 1) + ")");
      }
    }
    if (slots.size() == 0) return;
    py::gil_scoped_release release;
    as_prioritized().update_priorities(s, prio.data(), static_cast<size_t>(slots.size()));
  }

  // ---- introspection for tests and the Python face
  std::optional<double> alpha() const { return alpha_; }
  double max_priority() const {
    if (!prioritized()) throw py::type_error("a uniform ReplayBuffer has no priorities");
    return core_ ? as_prioritized().max_priority() : 1.0;
  }

  py::list schema() const {
    py::list out;
    for (const auto& c : schema_.columns()) {
      out.append(py::make_tuple(c.name, c.dtype, py::tuple(py::cast(c.trailing))));
    }
    return out;
  }

  py::array_t<double> leaf_values() const {
    if (!prioritized()) throw py::type_error("a uniform ReplayBuffer has no priorities");
    if (!core_) return py::array_t<double>(0);
    auto guard = core_->lock();
    auto& core = as_prioritized();
    const size_t n = core.storage_locked().size();
    py::array_t<double> out(static_cast<py::ssize_t>(n));
    for (size_t i = 0; i < n; ++i) out.mutable_data()[i] = core.leaf_value_locked(i);
    return out;
  }

  py::tuple tree_roots() const {
    if (!prioritized()) throw py::type_error("a uniform ReplayBuffer has no priorities");
    if (!core_) return py::make_tuple(0.0, INFINITY);
    auto guard = core_->lock();
    return py::make_tuple(as_prioritized().total_locked(), as_prioritized().min_value_locked());
  }

  // ---- save / load (league/replay.py owns the file format)
  py::dict state() const;
  void restore(const py::list& columns, py::ssize_t size, py::ssize_t next, const std::vector<uint64_t>& rng,
               const py::object& leaf_values, double max_priority);

 private:
  std::vector<std::string> reserved() const {
    if (prioritized()) return {"batch_indexes", "weights"};
    return {"batch_indexes"};
  }

  void create_core(BatchSchema schema) {
    const size_t cap = static_cast<size_t>(capacity_);
    for (const auto& c : schema.columns()) {
      if (c.row_bytes > 0 && cap > SIZE_MAX / 2 / c.row_bytes) {
        throw py::value_error("capacity " + std::to_string(capacity_) + " x " + std::to_string(c.row_bytes) +
                              "-byte rows of column '" + c.name + "' does not fit in memory");
      }
    }
    schema_ = std::move(schema);
    if (prioritized()) {
      core_ = std::make_unique<PrioritizedReplay>(cap, schema_.row_bytes(), rng_, *alpha_);
    } else {
      core_ = std::make_unique<UniformReplay>(cap, schema_.row_bytes(), rng_);
    }
  }

  PrioritizedReplay& as_prioritized() const { return static_cast<PrioritizedReplay&>(*core_); }

  py::array_t<double> checked_priorities(const py::object& obj, size_t rows, const char* rows_of = "the batch") {
    py::array a = one_dim(obj, "priorities", "iuf", "real numbers");
    auto p = py::array_t<double, py::array::c_style | py::array::forcecast>::ensure(a);
    if (static_cast<size_t>(p.size()) != rows) {
      throw py::value_error("priorities has " + std::to_string(p.size()) + " entries but " + rows_of + " has " +
                            std::to_string(rows));
    }
    const double* v = p.data();
    for (size_t j = 0; j < rows; ++j) {
      if (!(v[j] > 0.0 && std::isfinite(v[j]))) {
        throw py::value_error("priorities[" + std::to_string(j) + "] = " + fmt(v[j]) +
                              ": priorities must be finite and > 0 (add a small epsilon to |TD error|)");
      }
      if (!(v[j] >= low_ && v[j] <= high_)) {
        throw py::value_error("priorities[" + std::to_string(j) + "] = " + fmt(v[j]) + " is out of range for alpha " +
                              fmt(*alpha_) + ": p ** alpha must stay within [1e-300, 1e300 / capacity]");
      }
    }
    return p;
  }

  py::ssize_t capacity_;
  std::optional<double> alpha_;
  Rng::State rng_;  // initial generator state, handed to the core when the schema is known
  double low_ = 0.0, high_ = INFINITY;
  BatchSchema schema_;
  std::unique_ptr<UniformReplay> core_;
};

py::dict ReplayCore::state() const {
  py::dict out;
  py::list columns;
  if (!core_) {
    out["size"] = 0;
    out["next"] = 0;
    out["rng"] = std::vector<uint64_t>(rng_.begin(), rng_.end());
    out["max_priority"] = 1.0;
    out["columns"] = columns;
    out["leaf_values"] = prioritized() ? py::object(py::array_t<double>(0)) : py::none();
    return out;
  }
  auto guard = core_->lock();
  const RingStorage& st = core_->storage_locked();
  const size_t n = st.size();
  std::vector<char*> dst;
  py::dict arrays = schema_.allocate(n, dst);
  for (size_t c = 0; c < dst.size(); ++c) std::memcpy(dst[c], st.column(c), n * st.row_bytes(c));
  for (const auto& c : schema_.columns()) columns.append(py::make_tuple(c.name, arrays[c.key]));
  const Rng::State rng = core_->rng_state_locked();
  out["size"] = n;
  out["next"] = st.next_slot();
  out["rng"] = std::vector<uint64_t>(rng.begin(), rng.end());
  out["columns"] = columns;
  if (prioritized()) {
    const auto& core = as_prioritized();
    py::array_t<double> leaves(static_cast<py::ssize_t>(n));
    for (size_t i = 0; i < n; ++i) leaves.mutable_data()[i] = core.leaf_value_locked(i);
    out["leaf_values"] = leaves;
    out["max_priority"] = core.max_priority_locked();
  } else {
    out["leaf_values"] = py::none();
    out["max_priority"] = 1.0;
  }
  return out;
}

void ReplayCore::restore(const py::list& columns, py::ssize_t size, py::ssize_t next, const std::vector<uint64_t>& rng,
                         const py::object& leaf_values, double max_priority) {
  if (core_) throw py::value_error("restore needs a fresh buffer");
  if (size < 0 || size > capacity_) {
    throw py::value_error("saved size " + std::to_string(size) + " does not fit capacity " + std::to_string(capacity_));
  }
  if (next < 0 || next >= capacity_ || (size < capacity_ && next != size)) {
    throw py::value_error("saved write position " + std::to_string(next) + " is inconsistent with size " +
                          std::to_string(size) + " and capacity " + std::to_string(capacity_));
  }
  Rng::State state{};
  if (rng.size() != state.size()) throw py::value_error("saved RNG state must have 4 words");
  std::copy(rng.begin(), rng.end(), state.begin());
  if (!Rng::valid_state(state)) throw py::value_error("saved RNG state is all zeros");
  rng_ = state;
  if (prioritized() && !(max_priority > 0.0 && std::isfinite(max_priority))) {
    throw py::value_error("saved max priority must be finite and > 0, got " + fmt(max_priority));
  }
  std::vector<std::pair<std::string, py::array>> arrays;
  for (auto item : columns) {
    auto pair = item.cast<py::tuple>();
    const std::string name = pair[0].cast<std::string>();
    py::array a = as_c_contiguous(pair[1], "saved column '" + name + "'");
    if (a.shape(0) != size) {
      throw py::value_error("saved column '" + name + "' has " + std::to_string(a.shape(0)) + " rows, expected " +
                            std::to_string(size));
    }
    arrays.emplace_back(name, a);
  }
  py::array_t<double> leaves;
  if (prioritized()) {
    auto raw = one_dim(leaf_values, "saved leaf values", "f", "floats");
    leaves = py::array_t<double, py::array::c_style | py::array::forcecast>::ensure(raw);
    if (leaves.size() != size) throw py::value_error("saved priorities do not match the saved row count");
    const double limit = 1e300 / static_cast<double>(next_power_of_two(static_cast<size_t>(capacity_)));
    for (py::ssize_t i = 0; i < size; ++i) {
      const double v = leaves.data()[i];
      if (!(v >= 1e-300 && v <= limit)) throw py::value_error("saved priority " + fmt(v) + " is out of range");
    }
  }
  if (arrays.empty()) {
    if (size != 0) throw py::value_error("saved buffer has rows but no columns");
    return;
  }
  create_core(BatchSchema::from_arrays(arrays));
  std::vector<const char*> src;
  for (const auto& entry : arrays) src.push_back(static_cast<const char*>(entry.second.data()));
  auto guard = core_->lock();
  core_->restore_locked(src.data(), static_cast<size_t>(size), static_cast<size_t>(next), rng_);
  if (prioritized()) {
    as_prioritized().restore_priorities_locked(leaves.data(), static_cast<size_t>(size), max_priority);
  }
}

}  // namespace
}  // namespace league

void bind_replay(py::module_& m) {
  using league::ReplayCore;
  py::class_<ReplayCore>(m, "ReplayCore",
                         "One replay buffer (uniform, or prioritized when alpha is given); see league.replay.")
      .def(py::init<py::ssize_t, uint64_t, std::optional<double>>(), py::arg("capacity"), py::arg("seed"),
           py::arg("alpha") = py::none())
      .def("add", &ReplayCore::add, py::arg("columns"), py::arg("priorities") = py::none())
      .def("sample", &ReplayCore::sample, py::arg("batch_size"), py::arg("beta") = py::none())
      .def("update_priorities", &ReplayCore::update_priorities, py::arg("batch_indexes"), py::arg("priorities"))
      .def("__len__", &ReplayCore::size)
      .def_property_readonly("capacity", &ReplayCore::capacity)
      .def_property_readonly("alpha", &ReplayCore::alpha)
      .def_property_readonly("max_priority", &ReplayCore::max_priority)
      .def("schema", &ReplayCore::schema, "[(name, dtype, trailing shape)] in storage order; [] before the first add")
      .def("leaf_values", &ReplayCore::leaf_values, "p ** alpha of slots [0, len) (prioritized only)")
      .def("tree_roots", &ReplayCore::tree_roots, "(sum of all p ** alpha, min p ** alpha)")
      .def("state", &ReplayCore::state, "Everything a save needs, copied under the buffer's lock")
      .def("restore", &ReplayCore::restore, py::arg("columns"), py::arg("size"), py::arg("next"), py::arg("rng"),
           py::arg("leaf_values"), py::arg("max_priority"));
}
