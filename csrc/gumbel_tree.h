// A forest of Gumbel search trees (Danihelka et al., ICLR 2022), batched: the tree of
// league/search/gumbel.py (bound in search_bindings.cpp), on the PUCT forest's storage.
//
// The nodes, edges, descent, expansion and backup are PUCTForest's (search_tree.h); what
// differs is the move rule and what it reads:
//   at a root  -- sequential halving over the considered moves (the m largest g + logits,
//                 chosen by `consider`): simulation `step` visits, among the considered moves
//                 with exactly schedule[step] visits (else the least visited), the one with
//                 the largest g + logits + sigma(completed Q);
//   below it   -- argmax pi'(a) - N(a) / (1 + sum_b N(b)), pi' = softmax(logits + sigma(completed Q)).
// Each node keeps the logits of its prior (log, floored at -60) and the value head's estimate
// for its mover, from which completed Q fills the unvisited moves (the paper's mixed value).
// The arithmetic follows gumbel.py's numpy operation for operation (sums as numpy's pairwise
// sum), so both pick the same moves up to the last bit of exp and log.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <vector>

#include "search_tree.h"

namespace league {

class GumbelForest : public PUCTForest {
 public:
  GumbelForest(int num_players, int num_actions, double c_visit, double c_scale)
      : PUCTForest(num_players, num_actions, 0.0), c_visit_(c_visit), c_scale_(c_scale) {}

  // Sequential halving as a schedule (gumbel.py's considered_visit_sequence): the visits a
  // considered root move must have for simulation i to visit it.
  static std::vector<int64_t> visit_sequence(int64_t num_considered, int64_t simulations) {
    std::vector<int64_t> seq;
    if (simulations <= 0) return seq;
    if (num_considered <= 1) {
      for (int64_t i = 0; i < simulations; ++i) seq.push_back(i);
      return seq;
    }
    const int64_t phases = static_cast<int64_t>(std::ceil(std::log2(static_cast<double>(num_considered))));
    int64_t visits = 0, remaining = num_considered;
    while (static_cast<int64_t>(seq.size()) < simulations) {
      const int64_t extra = std::max<int64_t>(1, simulations / (phases * remaining));
      for (int64_t k = 0; k < extra; ++k) {
        seq.insert(seq.end(), static_cast<size_t>(remaining), visits);
        ++visits;
      }
      remaining = std::max<int64_t>(2, remaining / 2);
    }
    seq.resize(static_cast<size_t>(simulations));
    return seq;
  }

  // The node's prior (PUCTForest::set_priors) and its logits.
  void set_priors(int64_t node, const double* row) {
    PUCTForest::set_priors(node, row);
    sync();
    const int64_t begin = edge_begin_[node];
    for (int64_t i = 0; i < num_legal_[node]; ++i) {
      const double p = std::max(prior_[begin + i], 1e-300);
      logit_[begin + i] = std::max(std::log(p), kMinLogit);
    }
  }

  // The value head's estimate at `node` for its mover.
  void set_estimate(int64_t node, double value) {
    sync();
    estimate_[node] = value;
  }
  double estimate(int64_t node) const { return node < static_cast<int64_t>(estimate_.size()) ? estimate_[node] : 0.0; }
  double logit(int64_t edge) const { return edge < static_cast<int64_t>(logit_.size()) ? logit_[edge] : 0.0; }
  // Whether `tree`'s search was started (consider).
  bool considered(int64_t tree) const { return tree < static_cast<int64_t>(roots_.size()) && !roots_[tree].considered.empty(); }

  // Starts `tree`'s search (its root's priors set): Gumbel noise `g` (one per legal move), the
  // min(num_considered, legal) largest g + logits considered (ties to the lower move), and the
  // halving schedule of `simulations`.
  void consider(int64_t tree, const double* g, int64_t num_considered, int64_t simulations) {
    sync();
    const int64_t root = root_[tree], begin = edge_begin_[root], n = num_legal_[root];
    RootSearch& search = roots_[tree];
    std::vector<double>& noise = search.gumbel;
    noise.assign(g, g + n);
    std::vector<int64_t> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return -(noise[a] + logit_[begin + a]) < -(noise[b] + logit_[begin + b]);
    });
    const int64_t m = std::min(num_considered, n);
    search.considered.assign(static_cast<size_t>(n), 0);
    for (int64_t k = 0; k < m; ++k) search.considered[order[k]] = 1;
    search.schedule = visit_sequence(m, simulations);
  }

  // One simulation's descent of `tree` (see search_tree.h's select). A tree with nothing to
  // search, or not started (consider), is idle.
  Status select(int64_t tree, int64_t* node_out, int64_t* index_out, int64_t* action_out) {
    if (!active(tree) || !considered(tree)) {
      *node_out = *index_out = *action_out = -1;
      return kIdle;
    }
    sync();
    // Every finished simulation added one visit to one root move, so their sum is this one's index.
    const int64_t root = root_[tree];
    double done = 0.0;
    for (int64_t i = 0; i < num_legal_[root]; ++i) done += count_[edge_begin_[root] + i];
    const int64_t step = static_cast<int64_t>(done);
    return descend(
        tree, [this, tree, step](int64_t node, bool at_root) { return at_root ? pick_root(tree, step) : pick_interior(node); },
        node_out, index_out, action_out);
  }

  // `tree`'s results: the improved policy and the root visits (num_actions values each, 0 off
  // the legal moves) and the move sequential halving selected (the best score among the
  // considered moves visited most); zeros and -1 for a tree idle or not started.
  int64_t results(int64_t tree, double* policy, double* visits) {
    std::fill(policy, policy + num_actions_, 0.0);
    std::fill(visits, visits + num_actions_, 0.0);
    if (!active(tree) || !considered(tree)) return -1;
    sync();
    const int64_t root = root_[tree], begin = edge_begin_[root], n = num_legal_[root];
    const std::vector<uint8_t>& considered = roots_[tree].considered;
    improved(root, buffer_);
    for (int64_t i = 0; i < n; ++i) {
      policy[action_[begin + i]] = buffer_[static_cast<size_t>(i)];
      visits[action_[begin + i]] = count_[begin + i];
    }
    double most = -1.0;
    for (int64_t i = 0; i < n; ++i) {
      if (considered[i]) most = std::max(most, count_[begin + i]);
    }
    std::vector<uint8_t> due(static_cast<size_t>(n), 0);
    for (int64_t i = 0; i < n; ++i) due[i] = considered[i] && count_[begin + i] == most;
    return action_[begin + best_scored(tree, due)];
  }

 private:
  static constexpr double kMinLogit = -60.0;

  // A tree's root search: the Gumbel noise and considered flags per root legal move, the schedule.
  struct RootSearch {
    std::vector<double> gumbel;
    std::vector<uint8_t> considered;
    std::vector<int64_t> schedule;
  };

  // Per-node, per-edge and per-tree state sized to the forest (nodes and trees are added by the
  // base class): a node not evaluated yet reads logits and an estimate of 0, as gumbel.py's did.
  void sync() {
    logit_.resize(static_cast<size_t>(num_edges()), 0.0);
    estimate_.resize(static_cast<size_t>(num_nodes()), 0.0);
    roots_.resize(static_cast<size_t>(num_trees()));
  }

  // gumbel.py's completed_q at `node`, into `out` (one per legal move).
  void completed_q(int64_t node, std::vector<double>& out) {
    const int64_t begin = edge_begin_[node], n = num_legal_[node];
    out.assign(static_cast<size_t>(n), 0.0);
    const double total = numpy_sum(&count_[begin], n);
    q_.clear();
    weights_.clear();
    for (int64_t i = 0; i < n; ++i) {
      const double c = count_[begin + i];
      if (c > 0) {
        q_.push_back(edge_value_[begin + i] / c);
        weights_.push_back(prior_[begin + i]);
      }
    }
    const double est = estimate(node);
    if (q_.empty()) {
      std::fill(out.begin(), out.end(), est);
      return;
    }
    const int64_t k = static_cast<int64_t>(q_.size());
    const double mass = numpy_sum(weights_.data(), k);
    double mean_q;
    if (mass > 0) {
      for (int64_t j = 0; j < k; ++j) weights_[j] = weights_[j] * q_[j];
      mean_q = numpy_sum(weights_.data(), k) / mass;
    } else {
      mean_q = numpy_sum(q_.data(), k) / static_cast<double>(k);
    }
    const double mixed = (est + total * mean_q) / (1.0 + total);
    int64_t j = 0;
    for (int64_t i = 0; i < n; ++i) out[i] = count_[begin + i] > 0 ? q_[j++] : mixed;
  }

  // sigma(completed Q) at `node`, into `out`.
  void sigma(int64_t node, std::vector<double>& out) {
    completed_q(node, out);
    const int64_t begin = edge_begin_[node], n = num_legal_[node];
    double low = out[0], high = out[0], max_visits = 0.0;
    for (int64_t i = 0; i < n; ++i) {
      low = std::min(low, out[i]);
      high = std::max(high, out[i]);
      max_visits = std::max(max_visits, count_[begin + i]);
    }
    const double range = std::max(high - low, 1e-8), factor = (c_visit_ + max_visits) * c_scale_;
    for (int64_t i = 0; i < n; ++i) out[i] = factor * ((out[i] - low) / range);
  }

  // softmax(logits + sigma(completed Q)) at `node`, into `out`.
  void improved(int64_t node, std::vector<double>& out) {
    sigma(node, out);
    const int64_t begin = edge_begin_[node], n = num_legal_[node];
    double top = -std::numeric_limits<double>::infinity();
    for (int64_t i = 0; i < n; ++i) {
      out[i] = logit_[begin + i] + out[i];
      top = std::max(top, out[i]);
    }
    for (int64_t i = 0; i < n; ++i) out[i] = std::exp(out[i] - top);
    const double total = numpy_sum(out.data(), n);
    for (int64_t i = 0; i < n; ++i) out[i] = out[i] / total;
  }

  // Among the root's moves flagged in `due`, the first with the largest g + logits + sigma.
  int64_t best_scored(int64_t tree, const std::vector<uint8_t>& due) {
    const int64_t root = root_[tree], begin = edge_begin_[root], n = num_legal_[root];
    sigma(root, scratch_q_);
    int64_t best = -1;
    double best_score = 0.0;
    for (int64_t i = 0; i < n; ++i) {
      if (!due[i]) continue;
      const double score = roots_[tree].gumbel[i] + logit_[begin + i] + scratch_q_[i];
      if (best < 0 || score > best_score) {
        best = i;
        best_score = score;
      }
    }
    return best;
  }

  int64_t pick_root(int64_t tree, int64_t step) {
    const int64_t begin = edge_begin_[root_[tree]], n = num_legal_[root_[tree]];
    const std::vector<uint8_t>& considered = roots_[tree].considered;
    const std::vector<int64_t>& schedule = roots_[tree].schedule;
    const double wanted = step < static_cast<int64_t>(schedule.size()) ? static_cast<double>(schedule[step]) : -1.0;
    std::vector<uint8_t> due(static_cast<size_t>(n), 0);
    bool any = false;
    double least = std::numeric_limits<double>::infinity();
    for (int64_t i = 0; i < n; ++i) {
      if (!considered[i]) continue;
      due[i] = count_[begin + i] == wanted;
      any = any || due[i];
      least = std::min(least, count_[begin + i]);
    }
    if (!any) {  // not met by the schedule; a guard: the least visited considered moves
      for (int64_t i = 0; i < n; ++i) due[i] = considered[i] && count_[begin + i] == least;
    }
    return best_scored(tree, due);
  }

  int64_t pick_interior(int64_t node) {
    improved(node, scratch_p_);
    const int64_t begin = edge_begin_[node], n = num_legal_[node];
    const double total = 1.0 + numpy_sum(&count_[begin], n);
    int64_t best = 0;
    double best_score = 0.0;
    for (int64_t i = 0; i < n; ++i) {
      const double score = scratch_p_[i] - count_[begin + i] / total;
      if (i == 0 || score > best_score) {
        best = i;
        best_score = score;
      }
    }
    return best;
  }

  double c_visit_, c_scale_;
  std::vector<double> logit_;     // per edge
  std::vector<double> estimate_;  // per node
  std::vector<RootSearch> roots_;   // per tree
  std::vector<double> q_, weights_, scratch_q_, scratch_p_, buffer_;
};

}  // namespace league
