// Sum and min segment trees over a power-of-two number of leaves, as used by
// proportional prioritized replay. Plain C++ (no Python): callers validate
// indexes and values; nothing here allocates after construction.
//
// Layout: a flat array of 2 * L doubles, node 1 is the root, node k has
// children 2k and 2k+1, leaf i is node L + i. Parents are always recomputed
// from their children (never updated by deltas), so no rounding drift builds up.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "large_buffer.h"

namespace league {

inline size_t next_power_of_two(size_t n) {
  size_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

// Combine is a stateless functor: Sum or Min below. Identity is the value of
// an unwritten leaf (0 for sums, +inf for minima).
template <class Combine>
class SegmentTree {
 public:
  explicit SegmentTree(size_t capacity)
      : leaves_(next_power_of_two(std::max<size_t>(capacity, 1))),
        block_(2 * leaves_ * sizeof(double)),
        nodes_(reinterpret_cast<double*>(block_.data())) {
    clear();
  }

  size_t leaf_count() const { return leaves_; }
  double root() const { return nodes_[1]; }
  double leaf(size_t i) const { return nodes_[leaves_ + i]; }

  void set(size_t i, double value) {
    size_t k = leaves_ + i;
    nodes_[k] = value;
    for (k >>= 1; k >= 1; k >>= 1) nodes_[k] = Combine::apply(nodes_[2 * k], nodes_[2 * k + 1]);
  }

  // Sets n leaves, then repairs their ancestors level by level: at each level
  // all n independent parent recomputations are in flight together, which
  // hides memory latency better than n separate root-ward walks. Duplicate
  // indexes are fine (the last value wins; parents are recomputed anyway).
  void set_many(const int64_t* index, const double* value, size_t n, size_t* scratch) {
    for (size_t j = 0; j < n; ++j) {
      scratch[j] = leaves_ + static_cast<size_t>(index[j]);
      nodes_[scratch[j]] = value[j];
    }
    for (size_t level = leaves_; level > 1; level >>= 1) {
      for (size_t j = 0; j < n; ++j) {
        const size_t k = scratch[j] >>= 1;
        nodes_[k] = Combine::apply(nodes_[2 * k], nodes_[2 * k + 1]);
      }
    }
  }

  // Resets every leaf to the identity (used when restoring a saved buffer).
  void clear() { std::fill(nodes_, nodes_ + 2 * leaves_, Combine::identity()); }

  // Writes leaves [0, n) and rebuilds all parents bottom-up in O(L).
  void assign(const double* values, size_t n) {
    clear();
    std::copy(values, values + n, nodes_ + leaves_);
    for (size_t k = leaves_ - 1; k >= 1; --k) nodes_[k] = Combine::apply(nodes_[2 * k], nodes_[2 * k + 1]);
  }

  const double* data() const { return nodes_; }

 private:
  size_t leaves_;
  LargeBuffer block_;  // 2 * leaves_ doubles; node 0 is unused
  double* nodes_;
};

struct SumCombine {
  static double identity() { return 0.0; }
  static double apply(double a, double b) { return a + b; }
};

struct MinCombine {
  static double identity() { return std::numeric_limits<double>::infinity(); }
  static double apply(double a, double b) { return a < b ? a : b; }
};

using MinTree = SegmentTree<MinCombine>;

class SumTree : public SegmentTree<SumCombine> {
 public:
  using SegmentTree<SumCombine>::SegmentTree;

  // For each query j, the leaf i such that the prefix sum of leaves before i
  // is <= mass[j] < that prefix plus leaf i. Queries descend together, one
  // tree level at a time (independent loads overlap). A query never enters a
  // child whose sum is zero, so float rounding near the total can never land
  // on an empty (unwritten) leaf: the result always has a positive value as
  // long as the root is positive. mass[] is consumed (left as the remainder).
  void find_prefix_many(double* mass, size_t n, size_t* out_leaf) const {
    const double* t = data();
    for (size_t j = 0; j < n; ++j) out_leaf[j] = 1;
    for (size_t level = 1; level < leaf_count(); level <<= 1) {
      const bool children_are_nodes = 2 * level < leaf_count();
      for (size_t j = 0; j < n; ++j) {
        const size_t left = 2 * out_leaf[j];
        const double lsum = t[left];
        const bool go_right = mass[j] >= lsum && t[left + 1] > 0.0;
        mass[j] -= go_right ? lsum : 0.0;
        out_leaf[j] = left + (go_right ? 1 : 0);
        // The next level reads this node's two children: start that miss now,
        // a whole level ahead, instead of when the next pass gets there.
        if (children_are_nodes) __builtin_prefetch(t + 2 * out_leaf[j], 0, 3);
      }
    }
    for (size_t j = 0; j < n; ++j) out_leaf[j] -= leaf_count();
  }
};

}  // namespace league
