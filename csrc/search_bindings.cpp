// league._core.PUCTForest and GumbelForest: the Python handles of search_tree.h and gumbel_tree.h
// (league/search/puct.py and gumbel.py are the documented faces). Every call is checked whole before the forest changes: ids in range
// (IndexError), lengths, dtypes, legal moves and each tree's stage (ValueError), so bad input
// raises and leaves the forest as it was. The GIL stays held: the calls are short and a
// forest is not meant to be shared between threads.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cmath>
#include <string>
#include <vector>

#include "array_utils.h"
#include "gumbel_tree.h"
#include "search_tree.h"

namespace py = pybind11;

namespace league {
namespace {

using Forest = PUCTForest;

// numpy.asarray, looked up once (kept for the interpreter's life, never destroyed after it).
py::array as_array(const py::handle& obj) {
  static py::object* asarray = new py::object(py::module_::import("numpy").attr("asarray"));
  return (*asarray)(obj);
}

// `obj` (an array or a sequence) as a contiguous 1-D int64 array; integer (or bool) dtypes only.
py::array_t<int64_t> int_vector(const py::handle& obj, const char* what) {
  if (py::array_t<int64_t, py::array::c_style>::check_(obj)) {  // the search's own arrays: as they are
    auto a = py::reinterpret_borrow<py::array_t<int64_t>>(obj);
    if (a.ndim() == 1) return a;
  }
  py::array a = as_array(obj);
  const char kind = a.dtype().kind();
  if (a.size() > 0 && kind != 'i' && kind != 'u' && kind != 'b') {
    throw py::value_error(std::string(what) + " must hold integers, got " + describe_array(a));
  }
  if (a.ndim() != 1) throw py::value_error(std::string(what) + " must be one-dimensional, got " + describe_array(a));
  return py::array_t<int64_t, py::array::c_style | py::array::forcecast>::ensure(a);
}

// `obj` as a contiguous float64 array of `ndim` dimensions; numeric dtypes only.
py::array_t<double> float_array(const py::handle& obj, const char* what, py::ssize_t ndim) {
  if (py::array_t<double, py::array::c_style>::check_(obj)) {
    auto a = py::reinterpret_borrow<py::array_t<double>>(obj);
    if (a.ndim() == ndim) return a;
  }
  py::array a = as_array(obj);
  const char kind = a.dtype().kind();
  if (a.size() > 0 && kind != 'f' && kind != 'i' && kind != 'u' && kind != 'b') {
    throw py::value_error(std::string(what) + " must hold numbers, got " + describe_array(a));
  }
  if (a.ndim() != ndim) {
    throw py::value_error(std::string(what) + " must have " + std::to_string(ndim) + " dimension(s), got " + describe_array(a));
  }
  return py::array_t<double, py::array::c_style | py::array::forcecast>::ensure(a);
}

void check_rows(const py::array& a, py::ssize_t rows, const char* what, const char* of) {
  if (a.shape(0) != rows) {
    throw py::value_error(std::string(what) + " has " + std::to_string(a.shape(0)) + " rows for " + std::to_string(rows) + " " + of);
  }
}

void check_columns(const py::array& a, py::ssize_t cols, const char* what, const char* per) {
  if (a.shape(1) != cols) {
    throw py::value_error(std::string(what) + " must have " + std::to_string(cols) + " columns (" + per + "), got " + describe_array(a));
  }
}

// Tree ids: each in range and (unique) named at most once.
const int64_t* checked_trees(const Forest& f, const py::array_t<int64_t>& trees, bool unique) {
  const int64_t* t = trees.data();
  std::vector<char> seen(unique ? static_cast<size_t>(f.num_trees()) : 0, 0);
  for (py::ssize_t k = 0; k < trees.shape(0); ++k) {
    if (t[k] < 0 || t[k] >= f.num_trees()) {
      throw py::index_error("tree id " + std::to_string(t[k]) + " out of range: the forest has " + std::to_string(f.num_trees()) + " trees");
    }
    if (unique) {
      if (seen[static_cast<size_t>(t[k])]) throw py::value_error("tree id " + std::to_string(t[k]) + " appears twice in one call");
      seen[static_cast<size_t>(t[k])] = 1;
    }
  }
  return t;
}

const int64_t* checked_nodes(const Forest& f, const py::array_t<int64_t>& nodes) {
  const int64_t* n = nodes.data();
  for (py::ssize_t k = 0; k < nodes.shape(0); ++k) {
    if (n[k] < 0 || n[k] >= f.num_nodes()) {
      throw py::index_error("node id " + std::to_string(n[k]) + " out of range: the forest has " + std::to_string(f.num_nodes()) + " nodes");
    }
  }
  return n;
}

void check_stage(const Forest& f, const int64_t* trees, py::ssize_t n, Forest::Stage want, const char* call, const char* needs) {
  for (py::ssize_t k = 0; k < n; ++k) {
    if (f.stage(trees[k]) != want) {
      throw py::value_error(std::string(call) + ": tree " + std::to_string(trees[k]) + " " + needs);
    }
  }
}

// New nodes' description, checked: per row its mover, terminal flag and legal-move count; the
// moves themselves concatenated. `need_moves`: a non-terminal node must have a legal move.
struct NewNodes {
  py::array_t<int64_t> players, terminal, counts, actions;
  std::vector<int64_t> offsets;
  py::ssize_t rows = 0;
};

NewNodes checked_new_nodes(const Forest& f, const py::handle& players, const py::handle& terminal, const py::handle& legal_counts,
                           const py::handle& legal_actions, py::ssize_t rows, bool need_moves) {
  NewNodes out;
  out.rows = rows;
  out.players = int_vector(players, "players");
  out.terminal = int_vector(terminal, "terminal");
  out.counts = int_vector(legal_counts, "legal_counts");
  out.actions = int_vector(legal_actions, "legal_actions");
  check_rows(out.players, rows, "players", "nodes");
  check_rows(out.terminal, rows, "terminal", "nodes");
  check_rows(out.counts, rows, "legal_counts", "nodes");
  const int64_t *p = out.players.data(), *t = out.terminal.data(), *c = out.counts.data(), *a = out.actions.data();
  out.offsets.assign(static_cast<size_t>(rows) + 1, 0);
  for (py::ssize_t k = 0; k < rows; ++k) {
    const std::string row = " (node " + std::to_string(k) + " of the call)";
    if (c[k] < 0) throw py::value_error("legal_counts must be >= 0, got " + std::to_string(c[k]) + row);
    if (t[k]) {
      if (c[k] != 0) throw py::value_error("a terminal node has no legal moves, got " + std::to_string(c[k]) + row);
    } else {
      if (p[k] < 0 || p[k] >= f.num_players()) {
        throw py::value_error("players must lie in [0, " + std::to_string(f.num_players()) + ") for non-terminal nodes, got " +
                              std::to_string(p[k]) + row);
      }
      if (need_moves && c[k] == 0) throw py::value_error("a non-terminal node needs a legal move, got none" + row);
    }
    out.offsets[static_cast<size_t>(k) + 1] = out.offsets[static_cast<size_t>(k)] + c[k];
  }
  if (out.offsets.back() != out.actions.shape(0)) {
    throw py::value_error("legal_actions has " + std::to_string(out.actions.shape(0)) + " moves, legal_counts sum to " +
                          std::to_string(out.offsets.back()));
  }
  for (py::ssize_t i = 0; i < out.actions.shape(0); ++i) {
    if (a[i] < 0 || a[i] >= f.num_actions()) {
      throw py::value_error("legal_actions must lie in [0, " + std::to_string(f.num_actions()) + "), got " + std::to_string(a[i]));
    }
  }
  return out;
}

// set_priors of either forest (its own: Gumbel's also keeps the logits), checked whole first.
template <class F>
void set_priors_checked(F& f, const py::handle& nodes, const py::handle& priors) {
  auto nd = int_vector(nodes, "nodes");
  const int64_t* ids = checked_nodes(f, nd);
  auto p = float_array(priors, "priors", 2);
  check_rows(p, nd.shape(0), "priors", "nodes");
  check_columns(p, f.num_actions(), "priors", "one per action");
  for (py::ssize_t k = 0; k < nd.shape(0); ++k) f.set_priors(ids[k], p.data() + k * f.num_actions());
}

// select of either forest (its own move rule) over checked, ready trees: (nodes, indices, actions, status).
template <class F>
py::tuple select_checked(F& f, const int64_t* ids, py::ssize_t n) {
  check_stage(f, ids, n, Forest::kReady, "select", "has a selected leaf not yet expanded and backed up");
  py::array_t<int64_t> nodes(n), indices(n), actions(n);
  py::array_t<int8_t> status(n);
  for (py::ssize_t k = 0; k < n; ++k) {
    status.mutable_data()[k] = f.select(ids[k], nodes.mutable_data() + k, indices.mutable_data() + k, actions.mutable_data() + k);
  }
  return py::make_tuple(nodes, indices, actions, status);
}

py::dict node_dict(const Forest& f, int64_t node) {
  const int64_t n = f.num_legal(node), begin = f.edge_begin(node);
  py::array_t<int64_t> legal(n), children(n);
  py::array_t<double> prior(n), counts(n), values(n), returns(f.num_players());
  for (int64_t i = 0; i < n; ++i) {
    legal.mutable_data()[i] = f.action(begin + i);
    children.mutable_data()[i] = f.child(begin + i);
    prior.mutable_data()[i] = f.prior(begin + i);
    counts.mutable_data()[i] = f.count(begin + i);
    values.mutable_data()[i] = f.edge_value(begin + i);
  }
  for (int p = 0; p < f.num_players(); ++p) returns.mutable_data()[p] = f.returns(node)[p];
  py::dict d;
  d["player"] = f.player(node);
  d["terminal"] = f.terminal(node);
  d["legal"] = legal;
  d["prior"] = prior;
  d["counts"] = counts;
  d["values"] = values;
  d["children"] = children;
  d["visits"] = f.visits(node);
  d["value"] = f.value(node);
  d["returns"] = returns;
  return d;
}

}  // namespace

void bind_search(py::module_& m) {
  py::class_<Forest>(m, "PUCTForest",
                     "PUCT search trees' node statistics, batched over trees (league/search/puct.py's engine; "
                     "csrc/search_tree.h). Game states stay with the caller, indexed by node id.")
      .def(py::init([](int num_players, int num_actions, double c_puct) {
             if (num_players < 1) throw py::value_error("num_players must be >= 1, got " + std::to_string(num_players));
             if (num_actions < 1) throw py::value_error("num_actions must be >= 1, got " + std::to_string(num_actions));
             if (!std::isfinite(c_puct) || c_puct < 0) throw py::value_error("c_puct must be finite and >= 0, got " + std::to_string(c_puct));
             return new Forest(num_players, num_actions, c_puct);
           }),
           py::arg("num_players"), py::arg("num_actions"), py::arg("c_puct"))
      .def_property_readonly("num_players", &Forest::num_players)
      .def_property_readonly("num_actions", &Forest::num_actions)
      .def_property_readonly("c_puct", &Forest::c_puct)
      .def_property_readonly("num_nodes", &Forest::num_nodes)
      .def_property_readonly("num_trees", &Forest::num_trees)
      .def(
          "add_trees",
          [](Forest& f, const py::handle& players, const py::handle& terminal, const py::handle& legal_counts, const py::handle& legal_actions) {
            const py::ssize_t rows = int_vector(players, "players").shape(0);
            NewNodes nn = checked_new_nodes(f, players, terminal, legal_counts, legal_actions, rows, false);
            py::array_t<int64_t> ids(rows);
            for (py::ssize_t k = 0; k < rows; ++k) {
              const size_t o = static_cast<size_t>(nn.offsets[static_cast<size_t>(k)]);
              ids.mutable_data()[k] = f.add_tree(static_cast<int>(nn.players.data()[k]), nn.terminal.data()[k] != 0,
                                                 nn.actions.data() + o, nn.counts.data()[k]);
            }
            return ids;
          },
          py::arg("players"), py::arg("terminal"), py::arg("legal_counts"), py::arg("legal_actions"),
          "New trees, one root each (its mover, terminal flag, legal-move count; the moves concatenated): their tree ids. "
          "A terminal root or one without legal moves is idle: select never descends it.")
      .def(
          "roots",
          [](const Forest& f, const py::handle& trees) {
            auto t = int_vector(trees, "trees");
            const int64_t* ids = checked_trees(f, t, false);
            py::array_t<int64_t> out(t.shape(0));
            for (py::ssize_t k = 0; k < t.shape(0); ++k) out.mutable_data()[k] = f.root(ids[k]);
            return out;
          },
          py::arg("trees"), "The root node id of each tree.")
      .def(
          "select",
          [](Forest& f, const py::handle& trees) {
            auto t = int_vector(trees, "trees");
            return select_checked(f, checked_trees(f, t, true), t.shape(0));
          },
          py::arg("trees"),
          "One descent per tree: (nodes, indices, actions, status). status 0 (EXPAND): node's move number index "
          "(action) has no child yet: expand it, then back up; 1 (TERMINAL): the descent reached node, a child "
          "known to be terminal, whose returns are already backed up; 2 (IDLE): nothing to search.")
      .def(
          "expand",
          [](Forest& f, const py::handle& trees, const py::handle& players, const py::handle& terminal, const py::handle& legal_counts,
             const py::handle& legal_actions, const py::handle& returns) {
            auto t = int_vector(trees, "trees");
            const int64_t* ids = checked_trees(f, t, true);
            const py::ssize_t n = t.shape(0);
            NewNodes nn = checked_new_nodes(f, players, terminal, legal_counts, legal_actions, n, true);
            auto r = float_array(returns, "returns", 2);
            check_rows(r, n, "returns", "trees");
            check_columns(r, f.num_players(), "returns", "one per player");
            check_stage(f, ids, n, Forest::kSelected, "expand", "has no frontier move selected (call select first)");
            py::array_t<int64_t> out(n);
            for (py::ssize_t k = 0; k < n; ++k) {
              const size_t o = static_cast<size_t>(nn.offsets[static_cast<size_t>(k)]);
              out.mutable_data()[k] = f.expand(ids[k], static_cast<int>(nn.players.data()[k]), nn.terminal.data()[k] != 0,
                                               nn.actions.data() + o, nn.counts.data()[k], r.data() + k * f.num_players());
            }
            return out;
          },
          py::arg("trees"), py::arg("players"), py::arg("terminal"), py::arg("legal_counts"), py::arg("legal_actions"),
          py::arg("returns"),
          "Each tree's frontier child (after select said EXPAND): its mover, terminal flag, legal-move count, the moves "
          "concatenated, and returns float64[K, num_players] (kept for a terminal child, ignored otherwise). Its node ids.")
      .def(
          "set_priors",
          [](Forest& f, const py::handle& nodes, const py::handle& priors) { set_priors_checked(f, nodes, priors); },
          py::arg("nodes"), py::arg("priors"),
          "Each node's prior from priors float64[K, num_actions]: its legal moves' entries over their sum (uniform when "
          "that is not > 0).")
      .def(
          "mix_noise",
          [](Forest& f, const py::handle& nodes, const py::handle& noise, double fraction) {
            auto nd = int_vector(nodes, "nodes");
            const int64_t* ids = checked_nodes(f, nd);
            auto z = float_array(noise, "noise", 1);
            if (!(fraction >= 0 && fraction <= 1)) throw py::value_error("fraction must lie in [0, 1], got " + std::to_string(fraction));
            int64_t total = 0;
            for (py::ssize_t k = 0; k < nd.shape(0); ++k) total += f.num_legal(ids[k]);
            if (total != z.shape(0)) {
              throw py::value_error("noise has " + std::to_string(z.shape(0)) + " values for the nodes' " + std::to_string(total) +
                                    " legal moves");
            }
            int64_t o = 0;
            for (py::ssize_t k = 0; k < nd.shape(0); ++k) {
              f.mix_noise(ids[k], z.data() + o, fraction);
              o += f.num_legal(ids[k]);
            }
          },
          py::arg("nodes"), py::arg("noise"), py::arg("fraction"),
          "Root noise: each node's prior becomes (1 - fraction) * P + fraction * noise, noise one value per legal move, "
          "the nodes' concatenated.")
      .def(
          "backup",
          [](Forest& f, const py::handle& trees, const py::handle& returns) {
            auto t = int_vector(trees, "trees");
            const int64_t* ids = checked_trees(f, t, true);
            const py::ssize_t n = t.shape(0);
            auto r = float_array(returns, "returns", 2);
            check_rows(r, n, "returns", "trees");
            check_columns(r, f.num_players(), "returns", "one per player");
            check_stage(f, ids, n, Forest::kExpanded, "backup", "has no expanded leaf to back up (select, expand first)");
            for (py::ssize_t k = 0; k < n; ++k) f.backup(ids[k], r.data() + k * f.num_players());
          },
          py::arg("trees"), py::arg("returns"),
          "Returns float64[K, num_players] added along each tree's selected path (to each node's mover) and to its new "
          "leaf unless terminal.")
      .def(
          "root_visits",
          [](const Forest& f, const py::handle& trees) {
            auto t = int_vector(trees, "trees");
            const int64_t* ids = checked_trees(f, t, false);
            py::array_t<double> out({t.shape(0), static_cast<py::ssize_t>(f.num_actions())});
            for (py::ssize_t k = 0; k < t.shape(0); ++k) f.root_visits(ids[k], out.mutable_data() + k * f.num_actions());
            return out;
          },
          py::arg("trees"), "float64[K, num_actions]: each tree's root visit count per action.")
      .def(
          "node",
          [](const Forest& f, int64_t node) {
            if (node < 0 || node >= f.num_nodes()) {
              throw py::index_error("node id " + std::to_string(node) + " out of range: the forest has " + std::to_string(f.num_nodes()) + " nodes");
            }
            return node_dict(f, node);
          },
          py::arg("node"), "One node's statistics as a dict (tests, debugging).");
  py::class_<GumbelForest, Forest>(m, "GumbelForest",
                                   "Gumbel search trees on the PUCT forest's storage (league/search/gumbel.py's engine; "
                                   "csrc/gumbel_tree.h): sequential halving at the roots, the improved policy's rule below.")
      .def(py::init([](int num_players, int num_actions, double c_visit, double c_scale) {
             if (num_players < 1) throw py::value_error("num_players must be >= 1, got " + std::to_string(num_players));
             if (num_actions < 1) throw py::value_error("num_actions must be >= 1, got " + std::to_string(num_actions));
             if (!std::isfinite(c_visit) || !std::isfinite(c_scale) || c_visit < 0 || c_scale < 0) {
               throw py::value_error("c_visit and c_scale must be finite and >= 0, got " + std::to_string(c_visit) + ", " +
                                     std::to_string(c_scale));
             }
             return new GumbelForest(num_players, num_actions, c_visit, c_scale);
           }),
           py::arg("num_players"), py::arg("num_actions"), py::arg("c_visit"), py::arg("c_scale"))
      .def(
          "set_priors",
          [](GumbelForest& f, const py::handle& nodes, const py::handle& priors) { set_priors_checked(f, nodes, priors); },
          py::arg("nodes"), py::arg("priors"), "Each node's prior (as PUCTForest.set_priors) and its logits (log, floored at -60).")
      .def(
          "set_estimates",
          [](GumbelForest& f, const py::handle& nodes, const py::handle& values) {
            auto nd = int_vector(nodes, "nodes");
            const int64_t* ids = checked_nodes(f, nd);
            auto v = float_array(values, "values", 1);
            check_rows(v, nd.shape(0), "values", "nodes");
            for (py::ssize_t k = 0; k < nd.shape(0); ++k) f.set_estimate(ids[k], v.data()[k]);
          },
          py::arg("nodes"), py::arg("values"), "Each node's value estimate for its mover (completed Q's mixed value).")
      .def(
          "consider",
          [](GumbelForest& f, const py::handle& trees, const py::handle& gumbel, int64_t num_considered, int64_t simulations) {
            auto t = int_vector(trees, "trees");
            const int64_t* ids = checked_trees(f, t, true);
            auto g = float_array(gumbel, "gumbel", 1);
            if (num_considered < 1) throw py::value_error("num_considered must be >= 1, got " + std::to_string(num_considered));
            if (simulations < 0) throw py::value_error("simulations must be >= 0, got " + std::to_string(simulations));
            int64_t total = 0;
            for (py::ssize_t k = 0; k < t.shape(0); ++k) {
              if (!f.active(ids[k])) throw py::value_error("consider: tree " + std::to_string(ids[k]) + " has nothing to search");
              total += f.num_legal(f.root(ids[k]));
            }
            if (total != g.shape(0)) {
              throw py::value_error("gumbel has " + std::to_string(g.shape(0)) + " values for the roots' " + std::to_string(total) +
                                    " legal moves");
            }
            int64_t o = 0;
            for (py::ssize_t k = 0; k < t.shape(0); ++k) {
              f.consider(ids[k], g.data() + o, num_considered, simulations);
              o += f.num_legal(f.root(ids[k]));
            }
          },
          py::arg("trees"), py::arg("gumbel"), py::arg("num_considered"), py::arg("simulations"),
          "Starts each tree's search (its root's priors set): Gumbel noise, one per root legal move, the roots' "
          "concatenated; the num_considered largest g + logits considered; sequential halving over simulations.")
      .def(
          "select",
          [](GumbelForest& f, const py::handle& trees) {
            auto t = int_vector(trees, "trees");
            const int64_t* ids = checked_trees(f, t, true);
            for (py::ssize_t k = 0; k < t.shape(0); ++k) {
              if (f.active(ids[k]) && !f.considered(ids[k])) {
                throw py::value_error("select: tree " + std::to_string(ids[k]) + " was not started (call consider first)");
              }
            }
            return select_checked(f, ids, t.shape(0));
          },
          py::arg("trees"), "One simulation's descent per tree, as PUCTForest.select (its move rules Gumbel's).")
      .def(
          "results",
          [](GumbelForest& f, const py::handle& trees) {
            auto t = int_vector(trees, "trees");
            const int64_t* ids = checked_trees(f, t, false);
            const py::ssize_t n = t.shape(0), a = f.num_actions();
            for (py::ssize_t k = 0; k < n; ++k) {
              if (f.active(ids[k]) && !f.considered(ids[k])) {
                throw py::value_error("results: tree " + std::to_string(ids[k]) + " was not started (call consider first)");
              }
            }
            py::array_t<double> policy({n, a}), visits({n, a});
            py::array_t<int64_t> actions(n);
            for (py::ssize_t k = 0; k < n; ++k) {
              actions.mutable_data()[k] = f.results(ids[k], policy.mutable_data() + k * a, visits.mutable_data() + k * a);
            }
            return py::make_tuple(policy, actions, visits);
          },
          py::arg("trees"),
          "(policy float64[K, num_actions], actions int64[K], visits float64[K, num_actions]): each tree's improved policy, "
          "the move sequential halving selected (-1 where there is nothing to search) and its root visits.")
      .def(
          "estimate",
          [](const GumbelForest& f, int64_t node) {
            if (node < 0 || node >= f.num_nodes()) {
              throw py::index_error("node id " + std::to_string(node) + " out of range: the forest has " + std::to_string(f.num_nodes()) + " nodes");
            }
            return f.estimate(node);
          },
          py::arg("node"), "A node's value estimate for its mover.");
  m.attr("PUCT_EXPAND") = static_cast<int>(Forest::kExpand);
  m.attr("PUCT_TERMINAL") = static_cast<int>(Forest::kTerminal);
  m.attr("PUCT_IDLE") = static_cast<int>(Forest::kIdle);
}

}  // namespace league
