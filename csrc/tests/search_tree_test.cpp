// Plain C++ test of search_tree.h and gumbel_tree.h (no Python, no framework): PUCT's choice
// worked by hand, terminal children, backup, root noise, numpy's summation, a random game
// searched to check the counting invariants; Gumbel's halving schedule and root choice. Built only with -DLEAGUE_CPP_TESTS=ON; run as `ctest` or
// directly. Exit code 0 = pass.
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <random>
#include <vector>

#include "gumbel_tree.h"
#include "search_tree.h"

namespace {

int failures = 0;

void check(bool ok, const char* what, int line) {
  if (!ok && ++failures <= 20) std::fprintf(stderr, "FAIL line %d: %s\n", line, what);
}
#define CHECK(cond) check((cond), #cond, __LINE__)

using league::PUCTForest;

void test_sum() {
  // Below 8 values: a running sum from 0; above: 8 accumulators, pairwise halves over 128.
  const double small[3] = {0.1, 0.2, 0.3};
  CHECK(league::numpy_sum(small, 3) == (0.0 + 0.1 + 0.2) + 0.3);
  std::vector<double> ints(300);
  for (size_t i = 0; i < ints.size(); ++i) ints[i] = static_cast<double>(i + 1);
  CHECK(league::numpy_sum(ints.data(), 300) == 45150.0);
  const double nine[9] = {1, 2, 3, 4, 5, 6, 7, 8, 1e-17};
  CHECK(league::numpy_sum(nine, 9) == (((1.0 + 2.0) + (3.0 + 4.0)) + ((5.0 + 6.0) + (7.0 + 8.0))) + 1e-17);
  CHECK(league::numpy_sum(nine, 0) == 0.0);
}

void test_hand_worked_tree() {
  PUCTForest f(2, 4, 1.25);
  const int64_t legal[3] = {0, 2, 3};
  const int64_t tree = f.add_tree(0, false, legal, 3);
  CHECK(tree == 0 && f.root(tree) == 0 && f.active(tree));
  const double row[4] = {2.0, 99.0, 5.0, 3.0};  // action 1 is not legal: ignored
  f.set_priors(0, row);
  CHECK(f.prior(0) == 2.0 / 10.0 && f.prior(1) == 5.0 / 10.0 && f.prior(2) == 3.0 / 10.0);

  int64_t node, index, action;
  // No visits: Q = 0 everywhere, the largest prior wins.
  CHECK(f.select(tree, &node, &index, &action) == PUCTForest::kExpand);
  CHECK(node == 0 && index == 1 && action == 2 && f.stage(tree) == PUCTForest::kSelected);
  const int64_t child_legal[2] = {1, 3};
  const double none[2] = {0.0, 0.0};
  const int64_t child = f.expand(tree, 1, false, child_legal, 2, none);
  CHECK(child == 1 && f.child(1) == 1 && f.stage(tree) == PUCTForest::kExpanded);
  const double win0[2] = {1.0, -1.0};
  f.backup(tree, win0);
  CHECK(f.count(1) == 1.0 && f.edge_value(1) == 1.0 && f.visits(0) == 1 && f.value(0) == 1.0);
  CHECK(f.visits(child) == 1 && f.value(child) == -1.0);  // the leaf, for its mover (player 1)
  CHECK(f.stage(tree) == PUCTForest::kReady);

  // Unvisited moves start from the node's mean value (1): 1 + 1.25 * P * 1 / 1, against
  // 1 + 1.25 * 0.5 / 2 for the visited one: move 2 (P 0.3) wins.
  CHECK(f.select(tree, &node, &index, &action) == PUCTForest::kExpand);
  CHECK(node == 0 && index == 2 && action == 3);
  const double loss0[2] = {-1.0, 1.0};
  const int64_t end = f.expand(tree, 0, true, nullptr, 0, loss0);  // a terminal child: player 1 won
  CHECK(f.terminal(end) && f.player(end) == -1 && f.num_legal(end) == 0);
  f.backup(tree, loss0);
  CHECK(f.count(2) == 1.0 && f.edge_value(2) == -1.0 && f.visits(0) == 2 && f.value(0) == 0.0);
  CHECK(f.visits(end) == 0);  // a terminal leaf keeps no visits of its own

  // Mean 0 now: move 0 scores 0 + 1.25 * 0.2 * sqrt(2), move 1: 1 + ..., move 2: -1 + ...
  CHECK(f.select(tree, &node, &index, &action) == PUCTForest::kExpand && node == 1);
  // At the child (player 1, no prior yet: all zero, no visits... it has one): Q = its mean
  // (-1) for both moves, U = 0: a tie, the lowest index.
  CHECK(index == 0 && action == 1);
  const int64_t grandchild = f.expand(tree, 0, false, legal, 3, none);
  const double draw[2] = {0.0, 0.0};
  f.backup(tree, draw);
  CHECK(f.visits(grandchild) == 1 && f.visits(child) == 2 && f.count(f.edge_begin(child)) == 1.0);

  // Make the terminal child the choice: a huge prior on move 3; select backs it up itself.
  PUCTForest g(2, 4, 1.25);
  g.add_tree(0, false, legal, 3);
  const double sure[4] = {0.0, 0.0, 0.0, 1.0};
  g.set_priors(0, sure);
  CHECK(g.select(0, &node, &index, &action) == PUCTForest::kExpand && action == 3);
  const double won[2] = {1.0, -1.0};
  g.expand(0, 0, true, nullptr, 0, won);
  g.backup(0, won);
  CHECK(g.select(0, &node, &index, &action) == PUCTForest::kTerminal);
  CHECK(node == 1 && index == 2 && action == 3 && g.stage(0) == PUCTForest::kReady);
  CHECK(g.count(2) == 2.0 && g.edge_value(2) == 2.0 && g.visits(0) == 2 && g.value(0) == 2.0);
  double visits[4];
  g.root_visits(0, visits);
  CHECK(visits[0] == 0.0 && visits[1] == 0.0 && visits[2] == 0.0 && visits[3] == 2.0);
}

void test_idle_zero_prior_and_noise() {
  PUCTForest f(2, 3, 1.0);
  const int64_t legal[2] = {0, 2};
  f.add_tree(0, true, nullptr, 0);  // a terminal root
  f.add_tree(1, false, nullptr, 0);  // no legal moves
  f.add_tree(1, false, legal, 2);
  int64_t node, index, action;
  CHECK(f.select(0, &node, &index, &action) == PUCTForest::kIdle && node == -1);
  CHECK(f.select(1, &node, &index, &action) == PUCTForest::kIdle);
  const double zeros[3] = {0.0, 5.0, 0.0};  // no mass on the legal moves: uniform
  f.set_priors(2, zeros);
  CHECK(f.prior(0) == 0.5 && f.prior(1) == 0.5);
  const double noise[2] = {0.9, 0.1};
  f.mix_noise(2, noise, 0.25);
  CHECK(f.prior(0) == 0.75 * 0.5 + 0.25 * 0.9 && f.prior(1) == 0.75 * 0.5 + 0.25 * 0.1);
}

// Take-away: `stones` on the table, take 1..3, whoever takes the last wins.
void test_random_game_invariants(std::mt19937_64& rng) {
  const int kActions = 3;
  for (int trial = 0; trial < 20; ++trial) {
    PUCTForest f(2, kActions, 0.5 + trial * 0.1);
    std::vector<int> stones, mover;  // per node
    const int trees = 1 + trial % 4;
    auto legal_of = [&](int s, int64_t* out) {
      int n = 0;
      for (int a = 0; a < kActions && a + 1 <= s; ++a) out[n++] = a;
      return n;
    };
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    for (int t = 0; t < trees; ++t) {
      int64_t legal[kActions];
      const int s = 5 + trial;
      f.add_tree(0, false, legal, legal_of(s, legal));
      stones.push_back(s);
      mover.push_back(0);
      double row[kActions] = {unit(rng), unit(rng), unit(rng)};
      f.set_priors(f.root(t), row);
    }
    const int sims = 200;
    for (int sim = 0; sim < sims; ++sim) {
      for (int t = 0; t < trees; ++t) {
        int64_t node, index, action;
        const auto status = f.select(t, &node, &index, &action);
        if (status != PUCTForest::kExpand) continue;
        const int s = stones[static_cast<size_t>(node)] - static_cast<int>(action) - 1;
        const int player = 1 - mover[static_cast<size_t>(node)];
        int64_t legal[kActions];
        const bool terminal = s == 0;  // the mover of `node` took the last stone
        double returns[2];
        returns[mover[static_cast<size_t>(node)]] = terminal ? 1.0 : 0.0;
        returns[player] = terminal ? -1.0 : 0.0;
        const int64_t child = f.expand(t, player, terminal, legal, terminal ? 0 : legal_of(s, legal), returns);
        stones.push_back(s);
        mover.push_back(player);
        if (!terminal) {
          double row[kActions] = {unit(rng), unit(rng), unit(rng)};
          f.set_priors(child, row);
          const double v = unit(rng) * 2.0 - 1.0;
          returns[player] = v;
          returns[1 - player] = -v;
        }
        f.backup(t, returns);
      }
    }
    for (int t = 0; t < trees; ++t) {
      double visits[kActions];
      f.root_visits(t, visits);
      CHECK(visits[0] + visits[1] + visits[2] == sims);
    }
    // Every node: its visits are its moves' visits, plus one (its own evaluation) unless a root.
    for (int64_t node = 0; node < f.num_nodes(); ++node) {
      if (f.terminal(node)) continue;
      double counted = 0.0, summed = 0.0;
      for (int64_t i = 0; i < f.num_legal(node); ++i) {
        counted += f.count(f.edge_begin(node) + i);
        summed += f.edge_value(f.edge_begin(node) + i);
        const int64_t c = f.child(f.edge_begin(node) + i);
        CHECK(c == -1 || (c > node && stones[static_cast<size_t>(c)] == stones[static_cast<size_t>(node)] - i - 1));
      }
      const bool root = node < trees;
      CHECK(static_cast<double>(f.visits(node)) == counted + (root ? 0 : 1));
      if (root) CHECK(std::fabs(f.value(node) - summed) < 1e-9);
    }
  }
}

}  // namespace

void test_gumbel() {
  using league::GumbelForest;
  // log2(4) = 2 phases: 4 moves x 2 visits, then the best 2 x 4 more.
  const std::vector<int64_t> want = {0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5};
  CHECK(GumbelForest::visit_sequence(4, 16) == want);
  CHECK(GumbelForest::visit_sequence(1, 3) == (std::vector<int64_t>{0, 1, 2}));
  CHECK(GumbelForest::visit_sequence(5, 0).empty());

  // Three legal moves, two considered: the two largest g + logits; with no visits every completed
  // Q is the root's estimate, so sigma is 0 and the first simulation takes the larger of them.
  GumbelForest f(2, 3, 50.0, 1.0);
  const int64_t legal[3] = {0, 1, 2};
  const int64_t tree = f.add_tree(0, false, legal, 3);
  const double prior[3] = {0.5, 0.3, 0.2};
  f.set_priors(f.root(tree), prior);
  CHECK(f.logit(0) == std::log(0.5) && f.logit(2) == std::log(0.2));
  f.set_estimate(f.root(tree), 0.1);
  const double g[3] = {0.0, 0.0, 2.0};  // move 2: log 0.2 + 2 > log 0.5 > log 0.3
  f.consider(tree, g, 2, 4);
  CHECK(f.considered(tree));
  int64_t node, index, action;
  CHECK(f.select(tree, &node, &index, &action) == GumbelForest::kExpand && action == 2);
  const int64_t none[1] = {0};
  const double zero[2] = {0.0, 0.0};
  f.expand(tree, 1, false, none, 1, zero);
  const double lost[2] = {-1.0, 1.0};
  f.backup(tree, lost);
  // The schedule's next visit is the other considered move (0 visits wanted): move 0.
  CHECK(f.select(tree, &node, &index, &action) == GumbelForest::kExpand && action == 0);
  f.expand(tree, 1, false, none, 1, zero);
  const double won[2] = {1.0, -1.0};
  f.backup(tree, won);
  double policy[3], visits[3];
  CHECK(f.results(tree, policy, visits) == 0);  // equal visits: move 0 scores higher (Q 1 against -1)
  CHECK(visits[0] == 1.0 && visits[1] == 0.0 && visits[2] == 1.0);
  CHECK(std::fabs(policy[0] + policy[1] + policy[2] - 1.0) < 1e-12 && policy[0] > policy[2]);
}

int main() {
  std::mt19937_64 rng(7);
  test_gumbel();
  test_sum();
  test_hand_worked_tree();
  test_idle_zero_prior_and_noise();
  test_random_game_invariants(rng);
  if (failures) {
    std::fprintf(stderr, "%d failure(s)\n", failures);
    return 1;
  }
  std::printf("search_tree_test: ok\n");
  return 0;
}
