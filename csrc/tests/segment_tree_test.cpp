// Plain C++ test of segment_tree.h against brute force (no Python, no framework).
// Built only with -DLEAGUE_CPP_TESTS=ON; run as `ctest` or directly. Exit code 0 = pass.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <random>
#include <vector>

#include "segment_tree.h"

namespace {

int failures = 0;

void check(bool ok, const char* what, size_t capacity, size_t step) {
  if (!ok && ++failures <= 20) std::fprintf(stderr, "FAIL %s (capacity %zu, step %zu)\n", what, capacity, step);
}

void run(size_t capacity, std::mt19937_64& rng) {
  league::SumTree sum(capacity);
  league::MinTree min(capacity);
  std::vector<double> values(capacity, 0.0);
  std::uniform_real_distribution<double> value(1e-3, 10.0);
  std::uniform_int_distribution<size_t> slot(0, capacity - 1);
  size_t written = 0;  // slots [0, written) hold values, as in a filling ring buffer
  for (size_t step = 0; step < 300; ++step) {
    // Batched set of up to 5 slots, duplicates allowed (the last one wins).
    int64_t idx[5];
    double val[5];
    size_t scratch[5];
    const size_t n = 1 + step % 5;
    for (size_t j = 0; j < n; ++j) {
      idx[j] = static_cast<int64_t>(written < capacity && j == 0 ? written : slot(rng) % std::max<size_t>(written, 1));
      val[j] = value(rng);
      values[static_cast<size_t>(idx[j])] = val[j];
      written = std::max(written, static_cast<size_t>(idx[j]) + 1);
    }
    if (step % 2) {
      sum.set_many(idx, val, n, scratch);
      min.set_many(idx, val, n, scratch);
    } else {
      for (size_t j = 0; j < n; ++j) {
        sum.set(static_cast<size_t>(idx[j]), val[j]);
        min.set(static_cast<size_t>(idx[j]), val[j]);
      }
    }
    double total = 0.0, smallest = std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < written; ++i) {
      total += values[i];
      smallest = std::min(smallest, values[i]);
    }
    check(std::fabs(sum.root() - total) <= 1e-9 * total, "sum root", capacity, step);
    check(min.root() == smallest, "min root", capacity, step);
    // Prefix search: each query lands on the slot whose mass interval holds it,
    // and queries at or beyond the total still land on a written slot.
    double mass[4] = {0.0, total * 0.37, total * 0.999, total * 1.5};
    double query[4] = {mass[0], mass[1], mass[2], mass[3]};
    size_t leaf[4];
    sum.find_prefix_many(mass, 4, leaf);
    for (size_t q = 0; q < 4; ++q) {
      check(leaf[q] < written && values[leaf[q]] > 0.0, "prefix lands on a written slot", capacity, step);
      if (query[q] < total * 0.9999) {
        double before = 0.0;
        for (size_t i = 0; i < leaf[q]; ++i) before += values[i];
        const double tol = 1e-9 * total;
        check(before <= query[q] + tol && query[q] < before + values[leaf[q]] + tol, "prefix interval", capacity, step);
      }
    }
  }
  // assign() rebuilds the same trees from the leaves.
  league::SumTree rebuilt_sum(capacity);
  league::MinTree rebuilt_min(capacity);
  rebuilt_sum.assign(values.data(), written);
  rebuilt_min.assign(values.data(), written);
  check(std::fabs(rebuilt_sum.root() - sum.root()) <= 1e-9 * sum.root(), "assign sum", capacity, 0);
  check(rebuilt_min.root() == min.root(), "assign min", capacity, 0);
}

}  // namespace

int main() {
  std::mt19937_64 rng(12345);
  for (size_t capacity : {1, 2, 3, 7, 8, 9, 64, 100, 1000}) run(capacity, rng);
  std::printf("segment_tree_test: %d failed checks\n", failures);
  return failures == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
