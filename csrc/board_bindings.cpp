// league._core.TicTacToeBatch / ConnectFourBatch / LeducPokerBatch: the Python handles of
// game_batch.h over the games of boards.h and poker.h.
// Every array argument is checked (dtype, shape, C order, writeable) with the GIL
// held, so a wrong buffer is a ValueError naming it, never a stray write; actions are
// checked for legality before any copy moves. The stepping runs with the GIL released.
// league/envs/boards.py is the documented Python face.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "array_utils.h"
#include "boards.h"
#include "game_batch.h"
#include "negamax.h"
#include "poker.h"
#include "threats.h"

namespace py = pybind11;

namespace league {
namespace {

// The buffer of `a` when it is a C-ordered array of dtype T and exactly `shape`.
template <class T>
T* checked(const py::handle& obj, const char* what, const std::vector<py::ssize_t>& shape, bool write) {
  if (!py::isinstance<py::array>(obj)) {
    throw py::value_error(std::string(what) + " must be a numpy array, got " +
                          py::str(py::type::of(obj).attr("__name__")).cast<std::string>());
  }
  auto a = py::reinterpret_borrow<py::array>(obj);
  bool ok = a.dtype().equal(py::dtype::of<T>()) && a.ndim() == static_cast<py::ssize_t>(shape.size());
  for (size_t d = 0; ok && d < shape.size(); ++d) ok = a.shape(static_cast<py::ssize_t>(d)) == shape[d];
  if (!ok) {  // the message is built only here: this check runs on every step
    std::string want = py::str(py::dtype::of<T>()).cast<std::string>() + "[";
    for (size_t d = 0; d < shape.size(); ++d) want += (d ? ", " : "") + std::to_string(shape[d]);
    throw py::value_error(std::string(what) + " must be " + want + "], got " + describe_array(a));
  }
  if (!(a.flags() & py::array::c_style)) throw py::value_error(std::string(what) + " must be C-contiguous");
  if (write && !a.writeable()) throw py::value_error(std::string(what) + " must be writeable");
  return static_cast<T*>(write ? a.mutable_data() : const_cast<void*>(a.data()));
}

// [n, *G::kObsShape]: the shape of a batch of G's observations.
template <class G>
std::vector<py::ssize_t> obs_shape(py::ssize_t n) {
  std::vector<py::ssize_t> shape{n};
  for (int d : G::kObsShape) shape.push_back(d);
  return shape;
}

template <class G>
py::tuple obs_shape_tuple() {
  py::tuple t(std::size(G::kObsShape));
  for (size_t d = 0; d < std::size(G::kObsShape); ++d) t[d] = G::kObsShape[d];
  return t;
}

// The methods every game's batch has; returns the class for game-specific additions.
template <class G>
py::class_<Batch<G>> bind_game(py::module_& m, const char* name, const char* doc) {
  using B = Batch<G>;
  const py::ssize_t A = G::kActions;
  return py::class_<B>(m, name, doc)
      .def(py::init([](int64_t n, uint64_t seed) {
             if (n < 1) throw py::value_error("num_envs must be >= 1, got " + std::to_string(n));
             return new B(n, seed);
           }),
           py::arg("num_envs"), py::arg("seed") = 0)
      .def("seed", &B::seed, py::arg("seed"), "Reseed the generator of random_actions and openings.")
      .def_property(
          "opening_plies", &B::opening_plies,
          [](B& b, int plies) {
            if (plies < 0 || plies > G::kMaxOpening)
              throw py::value_error("opening_plies must be in 0.." + std::to_string(G::kMaxOpening) + " for this game (" +
                                    (G::kMaxOpening ? "more random moves could decide it before either player acts"
                                                    : "it offers no random openings") +
                                    "), got " + std::to_string(plies));
            b.set_opening_plies(plies);
          },
          "Games begun from now on open with 0..opening_plies uniformly random legal moves.")
      .def_property_readonly_static("max_opening_plies", [](py::object) { return G::kMaxOpening; })
      .def(
          "random_actions",
          [](B& b, py::handle out) {
            int64_t* o = checked<int64_t>(out, "out", {b.size()}, true);
            py::gil_scoped_release release;
            b.random_actions(o);
          },
          py::arg("out"), "Write a uniformly random legal action of every copy into out (int64[num_envs]).")
      .def_property_readonly("num_envs", &B::size)
      .def_property_readonly_static("shape", [](py::object) { return obs_shape_tuple<G>(); })
      .def_property_readonly_static("num_actions", [](py::object) { return G::kActions; })
      .def(
          "observe",
          [A](B& b, py::handle obs, py::handle mask, py::handle agent) {
            const py::ssize_t n = b.size();
            float* o = checked<float>(obs, "obs", obs_shape<G>(n), true);
            int8_t* k = checked<int8_t>(mask, "mask", {n, A}, true);
            int64_t* g = checked<int64_t>(agent, "agent", {n}, true);
            py::gil_scoped_release release;
            b.observe(o, k, g);
          },
          py::arg("obs"), py::arg("mask"), py::arg("agent"),
          "Write every copy's observation, legal-action mask and agent to move.")
      .def(
          "set_autoreset",
          [](B& b, py::handle flags) {
            const uint8_t* f = checked<uint8_t>(flags, "flags", {b.size()}, false);
            b.set_autoreset(f);
          },
          py::arg("flags"),
          "Per copy (uint8[num_envs]): 1 starts its next game when one ends, 0 has it stop then (inactive: not "
          "stepped, its action not read) until reset_all or reset_one. reset_all turns every flag back on.")
      .def(
          "active",
          [](const B& b, py::handle out) {
            uint8_t* o = checked<uint8_t>(out, "out", {b.size()}, true);
            b.active(o);
          },
          py::arg("out"), "Write 1 where a copy has a game in progress, 0 where it stopped (uint8[num_envs]).")
      .def("reset_all", &B::reset_all, "Start a new game in every copy (every copy's autoreset flag on).")
      .def(
          "reset_one",
          [](B& b, int64_t i) {
            if (i < 0 || i >= b.size()) throw py::value_error("copy index " + std::to_string(i) + " out of range");
            b.reset_one(i);
          },
          py::arg("index"), "Start a new game in copy `index`.")
      .def(
          "step",
          [A](B& b, py::handle actions, py::handle obs, py::handle mask, py::handle agent, py::handle rewards,
              py::handle done) {
            const py::ssize_t n = b.size();
            const int64_t* act = checked<int64_t>(actions, "actions", {n}, false);
            float* o = checked<float>(obs, "obs", obs_shape<G>(n), true);
            int8_t* k = checked<int8_t>(mask, "mask", {n, A}, true);
            int64_t* g = checked<int64_t>(agent, "agent", {n}, true);
            float* r = checked<float>(rewards, "rewards", {n, 2}, true);
            uint8_t* d = checked<uint8_t>(done, "done", {n}, true);
            int64_t bad;
            {
              py::gil_scoped_release release;
              bad = b.first_illegal(act);
              if (bad < 0) b.step(act, o, k, g, r, d);
            }
            if (bad >= 0) {
              std::vector<int8_t> legal(static_cast<size_t>(A));
              b.game(bad).mask(legal.data());
              std::string list;
              for (py::ssize_t a = 0; a < A; ++a)
                if (legal[static_cast<size_t>(a)]) list += (list.empty() ? "" : ", ") + std::to_string(a);
              throw py::value_error("illegal action " + std::to_string(act[bad]) + " in env copy " +
                                    std::to_string(bad) + " (legal there: [" + list +
                                    "]); no copy was stepped: pass one legal action per copy");
            }
          },
          py::arg("actions"), py::arg("obs"), py::arg("mask"), py::arg("agent"), py::arg("rewards"), py::arg("done"),
          "One move per active copy; writes the next state (a finished copy's new game, unless it stops) and each "
          "copy's rewards by agent.");
}

void check_index(int64_t i, int64_t n) {
  if (i < 0 || i >= n) throw py::value_error("copy index " + std::to_string(i) + " out of range");
}

template <class G>
void bind_board(py::module_& m, const char* name, const char* doc) {
  bind_game<G>(m, name, doc).def(
      "cells",
      [](const Batch<G>& b, int64_t i) {
        check_index(i, b.size());
        const G& g = b.game(i);
        std::string cells(G::kCells, '\0');
        for (int k = 0; k < G::kCells; ++k) cells[static_cast<size_t>(k)] = static_cast<char>(g.cell(k));
        return py::bytes(cells);
      },
      py::arg("index"), "Copy `index`'s cells: 0 empty, 1 + agent index of the owner.");
}

}  // namespace

// One position's move scores (negamax.h: score_moves<kExact>, exact_score_moves).
using ScoreMoves = void (*)(uint64_t mine, uint64_t theirs, uint64_t legal, int depth, int64_t* out);

// Scores every legal move of n connect-four positions into out[n, 7] by `score`, after
// checking the arrays once. Rows are split over `threads` threads (positions are
// independent; each writes its own rows).
void negamax_scores(ScoreMoves score, py::handle mine, py::handle theirs, py::handle legal, int depth, py::handle out,
                    int threads) {
  if (depth < 1) throw py::value_error("depth must be >= 1, got " + std::to_string(depth));
  if (threads < 1) throw py::value_error("threads must be >= 1, got " + std::to_string(threads));
  if (!py::isinstance<py::array>(mine)) throw py::value_error("mine must be a numpy array");
  const py::ssize_t n = py::reinterpret_borrow<py::array>(mine).shape(0);
  const int64_t* m_ = checked<int64_t>(mine, "mine", {n}, false);
  const int64_t* t_ = checked<int64_t>(theirs, "theirs", {n}, false);
  const int64_t* l_ = checked<int64_t>(legal, "legal", {n}, false);
  int64_t* o = checked<int64_t>(out, "out", {n, negamax::kCols}, true);
  for (py::ssize_t i = 0; i < n; ++i)
    if (m_[i] < 0 || t_[i] < 0 || !negamax::is_position(static_cast<uint64_t>(m_[i]), static_cast<uint64_t>(t_[i])))
      throw py::value_error("row " + std::to_string(i) +
                            ": mine and theirs must be disjoint connect-four bitboards whose pieces rest on the "
                            "bottom row or on other pieces");
  py::gil_scoped_release release;
  const auto rows = [&](py::ssize_t lo, py::ssize_t hi) {
    for (py::ssize_t i = lo; i < hi; ++i)
      score(static_cast<uint64_t>(m_[i]), static_cast<uint64_t>(t_[i]), static_cast<uint64_t>(l_[i]), depth,
            o + i * negamax::kCols);
  };
  // A thread costs tens of microseconds to start: worth it only for a few dozen rows each.
  const py::ssize_t workers = std::max<py::ssize_t>(1, std::min<py::ssize_t>(threads, n / 32));
  std::vector<std::thread> pool;
  for (py::ssize_t w = 1; w < workers; ++w) pool.emplace_back(rows, n * w / workers, n * (w + 1) / workers);
  rows(0, n / workers);
  for (auto& t : pool) t.join();
}

void bind_negamax(py::module_& m) {
  // The score a decided exact result is read against (+-(this + plies to spare)), published
  // so Python reads plies from scores without a second copy of the constant.
  m.attr("CONNECT_FOUR_WIN_SCORE") = negamax::kWin;
  m.def("connect_four_negamax_scores",
        [](py::handle mine, py::handle theirs, py::handle legal, int depth, py::handle out, int threads) {
          negamax_scores(negamax::score_moves<false>, mine, theirs, legal, depth, out, threads);
        }, py::arg("mine"), py::arg("theirs"), py::arg("legal"),
        py::arg("depth"), py::arg("out"), py::arg("threads") = 1,
        "Negamax scores (int64[n, 7], INT64_MIN where unplayable) of every legal move of n connect-four "
        "positions (bitboards of the player to move and the opponent, legal-column bits), searching depth plies "
        "on up to `threads` threads.");
  m.def("connect_four_exact_scores",
        [](py::handle mine, py::handle theirs, py::handle legal, int depth, py::handle out, int threads, bool forcing) {
          negamax_scores(forcing ? negamax::exact_score_moves : negamax::score_moves<true>, mine, theirs, legal, depth,
                         out, threads);
        }, py::arg("mine"), py::arg("theirs"), py::arg("legal"),
        py::arg("depth"), py::arg("out"), py::arg("threads") = 1, py::arg("forcing") = true,
        "Like connect_four_negamax_scores with no heuristic: a move scores CONNECT_FOUR_WIN_SCORE (1000000) + plies to spare if it wins "
        "by force within depth plies, minus that if it loses by force, else 0. The best moves get exact scores, "
        "the others an upper bound below the best. forcing=False tries every move instead of reading "
        "connect four's forcing rules (the same best moves and values, slower: the benchmark baseline).");
}

void bind_threats(py::module_& m) {
  m.def(
      "board_threat_planes",
      [](py::handle obs, int k, bool gravity, py::handle out) {
        if (!py::isinstance<py::array>(obs) || py::reinterpret_borrow<py::array>(obs).ndim() != 4)
          throw py::value_error("obs must be a float32[n, rows, cols, 2] numpy array");
        const auto a = py::reinterpret_borrow<py::array>(obs);
        const py::ssize_t n = a.shape(0), rows = a.shape(1), cols = a.shape(2);
        if (!threats::fits(static_cast<int>(rows), static_cast<int>(cols)) || k < 2 || k > std::max(rows, cols))
          throw py::value_error("board_threat_planes takes boards with (rows + 1) * cols <= 64 and 2 <= k <= their side, got " +
                                describe_array(a) + " and k=" + std::to_string(k));
        const float* o = checked<float>(obs, "obs", {n, rows, cols, 2}, false);
        float* w = checked<float>(out, "out", {n, rows, cols, threats::kPlanes}, true);
        py::gil_scoped_release release;
        threats::threat_planes(o, n, static_cast<int>(rows), static_cast<int>(cols), k, gravity, w);
      },
      py::arg("obs"), py::arg("k"), py::arg("gravity"), py::arg("out"),
      "Threat planes (float32[n, rows, cols, 7]: playable, own threats, their threats, own and their playable "
      "threats, own and their double threats) of n k-in-a-row boards float32[n, rows, cols, 2] (plane 0 the mover's pieces).");
}

void bind_boards(py::module_& m) {
  bind_negamax(m);
  bind_threats(m);
  bind_board<boards::TicTacToe>(m, "TicTacToeBatch", "N tic-tac-toe games (PettingZoo tictactoe_v3 rules).");
  bind_board<boards::ConnectFour>(m, "ConnectFourBatch", "N connect-four games (PettingZoo connect_four_v3 rules).");
  bind_game<poker::Leduc>(m, "LeducPokerBatch", "N Leduc poker games (OpenSpiel leduc_poker rules and information-state tensors).")
      .def(
          "cards",
          [](const Batch<poker::Leduc>& b, int64_t i) {
            check_index(i, b.size());
            const poker::Leduc& g = b.game(i);
            return py::make_tuple(g.private_card[0], g.private_card[1], g.public_card);
          },
          py::arg("index"), "Copy `index`'s cards: player 0's, player 1's and the public one (-1 before it is dealt).");
}

}  // namespace league
