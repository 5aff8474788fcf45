// A forest of PUCT search trees, batched: the node statistics of AlphaZero's search, one
// tree per position being searched, for league/search/puct.py (bound in search_bindings.cpp).
//
// The forest owns statistics only. Game states stay with the caller (a list indexed by node
// id: simulators are Python objects), so a simulation step is
//   select   -- per tree, descend from the root by PUCT to the first move whose child is not in
//               the tree yet (the frontier), or to a child known to be terminal (its stored
//               returns are backed up at once);
//   expand   -- the caller plays the frontier move on its state and adds the child: its mover,
//               whether it is terminal (and then its returns), its legal moves;
//   set_priors / backup -- the child's prior from an evaluation, and returns (one value per
//               player) added along the path select recorded, and to the child if it is not
//               terminal.
// Selection is Q + c_puct * P * sqrt(N) / (1 + n), an unvisited move's Q the node's mean value
// (0 before its first visit), ties to the lowest move index -- numpy's argmax, as the Python
// search this replaces (tests/puct_oracle.py) computed it, operation for operation, so both
// give the same visit counts.
//
// Plain C++ that trusts its input: search_bindings.cpp checks every id, length and state
// before anything changes.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace league {

// numpy's float64 sum of a contiguous array (np.add.reduce: 0 + the pairwise sum in blocks of
// 8 accumulators, halves above 128 elements), so that a prior normalised here equals the one
// numpy's `prior / prior.sum()` gives, to the bit.
inline double numpy_pairwise_sum(const double* a, int64_t n) {
  if (n < 8) {
    double res = 0.0;
    for (int64_t i = 0; i < n; ++i) res += a[i];
    return res;
  }
  if (n <= 128) {
    double r[8];
    for (int j = 0; j < 8; ++j) r[j] = a[j];
    int64_t i = 8;
    for (; i < n - (n % 8); i += 8) {
      for (int j = 0; j < 8; ++j) r[j] += a[i + j];
    }
    double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) res += a[i];
    return res;
  }
  int64_t n2 = n / 2;
  n2 -= n2 % 8;
  return numpy_pairwise_sum(a, n2) + numpy_pairwise_sum(a + n2, n - n2);
}

inline double numpy_sum(const double* a, int64_t n) { return 0.0 + numpy_pairwise_sum(a, n); }

class PUCTForest {
 public:
  // What select found in a tree.
  enum Status : int8_t {
    kExpand = 0,    // a frontier move: expand its child, then back up
    kTerminal = 1,  // a child known to be terminal: its returns are already backed up
    kIdle = 2,      // nothing to search: the root is terminal or has no legal moves
  };
  // Where a tree is in its simulation step.
  enum Stage : int8_t { kReady = 0, kSelected = 1, kExpanded = 2 };

  PUCTForest(int num_players, int num_actions, double c_puct)
      : num_players_(num_players), num_actions_(num_actions), c_puct_(c_puct) {}

  int num_players() const { return num_players_; }
  int num_actions() const { return num_actions_; }
  double c_puct() const { return c_puct_; }
  int64_t num_nodes() const { return static_cast<int64_t>(player_.size()); }
  int64_t num_trees() const { return static_cast<int64_t>(root_.size()); }
  int64_t num_edges() const { return static_cast<int64_t>(action_.size()); }

  // A new tree of one root node; returns the tree's id (its root: root(tree)).
  int64_t add_tree(int player, bool terminal, const int64_t* legal, int64_t num_legal) {
    const int64_t node = add_node(player, terminal, legal, num_legal, nullptr);
    root_.push_back(node);
    stage_.push_back(kReady);
    frontier_.push_back(-1);
    leaf_.push_back(-1);
    path_.emplace_back();
    return num_trees() - 1;
  }

  int64_t root(int64_t tree) const { return root_[tree]; }
  Stage stage(int64_t tree) const { return static_cast<Stage>(stage_[tree]); }
  bool active(int64_t tree) const { return !terminal_[root_[tree]] && num_legal_[root_[tree]] > 0; }

  // Per node.
  int player(int64_t node) const { return player_[node]; }
  bool terminal(int64_t node) const { return terminal_[node] != 0; }
  int64_t num_legal(int64_t node) const { return num_legal_[node]; }
  int64_t edge_begin(int64_t node) const { return edge_begin_[node]; }
  int64_t visits(int64_t node) const { return visits_[node]; }
  double value(int64_t node) const { return value_[node]; }
  const double* returns(int64_t node) const { return &returns_[node * num_players_]; }
  // Per edge (edge_begin(node) + move index).
  int64_t action(int64_t edge) const { return action_[edge]; }
  double prior(int64_t edge) const { return prior_[edge]; }
  double count(int64_t edge) const { return count_[edge]; }
  double edge_value(int64_t edge) const { return edge_value_[edge]; }
  int64_t child(int64_t edge) const { return child_[edge]; }

  // The move index PUCT picks at `node` (which has legal moves).
  int64_t pick(int64_t node) const {
    const int64_t begin = edge_begin_[node], n = num_legal_[node];
    const int64_t visits = visits_[node];
    const double first = visits ? value_[node] / static_cast<double>(visits) : 0.0;
    const double sqrt_visits = std::sqrt(static_cast<double>(std::max<int64_t>(visits, 1)));
    int64_t best = 0;
    double best_score = 0.0;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t e = begin + i;
      const double c = count_[e];
      const double q = c > 0 ? edge_value_[e] / std::max(c, 1.0) : first;
      const double u = c_puct_ * prior_[e] * sqrt_visits / (1.0 + c);
      const double score = q + u;
      if (std::isnan(score)) return i;  // np.argmax: the first NaN wins
      if (i == 0 || score > best_score) {
        best = i;
        best_score = score;
      }
    }
    return best;
  }

  // Descends `tree` (kReady and active) to its frontier: `node` is the node whose move `index`
  // (`action`) has no child yet (kExpand; the tree is then kSelected), or the known terminal
  // child reached (kTerminal, backed up; the tree stays kReady). An inactive tree: kIdle.
  Status select(int64_t tree, int64_t* node_out, int64_t* index_out, int64_t* action_out) {
    return descend(tree, [this](int64_t node, bool) { return pick(node); }, node_out, index_out, action_out);
  }

  // The child at `tree`'s frontier (kSelected): its mover, whether it is terminal (then its
  // `returns`, num_players values, kept for later visits), its legal moves. Returns its id.
  int64_t expand(int64_t tree, int player, bool terminal, const int64_t* legal, int64_t num_legal, const double* returns) {
    const int64_t node = add_node(player, terminal, legal, num_legal, returns);
    child_[frontier_[tree]] = node;
    leaf_[tree] = node;
    stage_[tree] = kExpanded;
    return node;
  }

  // `returns` (num_players values) added along `tree`'s path (kExpanded) and to its new
  // child unless that is terminal; the tree is kReady again.
  void backup(int64_t tree, const double* returns) {
    add_along(path_[tree], returns);
    const int64_t leaf = leaf_[tree];
    if (!terminal_[leaf]) {
      visits_[leaf] += 1;
      value_[leaf] += returns[player_[leaf]];
    }
    path_[tree].clear();
    frontier_[tree] = leaf_[tree] = -1;
    stage_[tree] = kReady;
  }

  // `node`'s prior from `row` (num_actions values): its legal moves' entries over their
  // numpy sum, uniform when that is not > 0.
  void set_priors(int64_t node, const double* row) {
    const int64_t begin = edge_begin_[node], n = num_legal_[node];
    if (n == 0) return;
    scratch_.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) scratch_[static_cast<size_t>(i)] = row[action_[begin + i]];
    const double total = numpy_sum(scratch_.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      prior_[begin + i] = total > 0 ? scratch_[static_cast<size_t>(i)] / total : 1.0 / static_cast<double>(n);
    }
  }

  // AlphaZero's root noise: `node`'s prior becomes (1 - fraction) * P + fraction * noise
  // (noise: one value per legal move).
  void mix_noise(int64_t node, const double* noise, double fraction) {
    const int64_t begin = edge_begin_[node], n = num_legal_[node];
    for (int64_t i = 0; i < n; ++i) {
      const double kept = (1.0 - fraction) * prior_[begin + i];
      const double mixed = fraction * noise[i];
      prior_[begin + i] = kept + mixed;
    }
  }

  // `tree`'s root visit count per action (num_actions values; 0 off its legal moves).
  void root_visits(int64_t tree, double* out) const {
    std::fill(out, out + num_actions_, 0.0);
    const int64_t node = root_[tree], begin = edge_begin_[node];
    for (int64_t i = 0; i < num_legal_[node]; ++i) out[action_[begin + i]] = count_[begin + i];
  }

 protected:
  struct Step {
    int64_t node, edge;  // a node on a path and the edge (its move) taken from it
  };

  // select's descent with the move rule `pick(node, at_root) -> move index` (PUCT's here, a
  // subclass's own: gumbel_tree.h).
  template <class Pick>
  Status descend(int64_t tree, Pick&& pick_move, int64_t* node_out, int64_t* index_out, int64_t* action_out) {
    *node_out = *index_out = *action_out = -1;
    if (!active(tree)) return kIdle;
    std::vector<Step>& path = path_[tree];
    path.clear();
    int64_t node = root_[tree];
    for (;;) {
      const int64_t index = pick_move(node, node == root_[tree]);
      const int64_t e = edge_begin_[node] + index;
      path.push_back({node, e});
      const int64_t c = child_[e];
      if (c < 0) {
        *node_out = node;
        *index_out = index;
        *action_out = action_[e];
        stage_[tree] = kSelected;
        frontier_[tree] = e;
        return kExpand;
      }
      if (terminal_[c]) {
        add_along(path, returns(c));
        path.clear();
        *node_out = c;
        *index_out = index;
        *action_out = action_[e];
        return kTerminal;
      }
      node = c;
    }
  }

  int64_t add_node(int player, bool terminal, const int64_t* legal, int64_t num_legal, const double* returns) {
    player_.push_back(terminal ? -1 : player);
    terminal_.push_back(terminal ? 1 : 0);
    edge_begin_.push_back(num_edges());
    num_legal_.push_back(terminal ? 0 : num_legal);
    visits_.push_back(0);
    value_.push_back(0.0);
    for (int p = 0; p < num_players_; ++p) returns_.push_back(terminal && returns ? returns[p] : 0.0);
    if (!terminal) {
      for (int64_t i = 0; i < num_legal; ++i) {
        action_.push_back(legal[i]);
        prior_.push_back(0.0);
        count_.push_back(0.0);
        edge_value_.push_back(0.0);
        child_.push_back(-1);
      }
    }
    return num_nodes() - 1;
  }

  // Each step of `path`: one more visit of the move and its node, the returns of the node's mover.
  void add_along(const std::vector<Step>& path, const double* returns) {
    for (const Step& step : path) {
      const int64_t node = step.node, e = step.edge;
      const double r = returns[player_[node]];
      count_[e] += 1.0;
      edge_value_[e] += r;
      visits_[node] += 1;
      value_[node] += r;
    }
  }

  int num_players_;
  int num_actions_;
  double c_puct_;
  // Nodes.
  std::vector<int> player_;
  std::vector<uint8_t> terminal_;
  std::vector<int64_t> edge_begin_, num_legal_, visits_;
  std::vector<double> value_, returns_;
  // Edges (a node's legal moves, contiguous).
  std::vector<int64_t> action_, child_;
  std::vector<double> prior_, count_, edge_value_;
  // Trees.
  std::vector<int64_t> root_, frontier_, leaf_;
  std::vector<int8_t> stage_;
  std::vector<std::vector<Step>> path_;
  std::vector<double> scratch_;
};

}  // namespace league
