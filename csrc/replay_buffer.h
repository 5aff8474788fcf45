// Replay buffer cores: columnar ring storage, uniform and proportional
// prioritized sampling. Plain C++ without Python: the bindings
// (replay_bindings.cpp) validate every input once, with the GIL held, and
// call these with the GIL released. Each buffer guards its state with its own
// mutex, so one thread may add while another samples and updates priorities.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "large_buffer.h"
#include "rng.h"
#include "segment_tree.h"

namespace league {

// capacity rows of each column, stored as raw bytes (one block per column).
class RingStorage {
 public:
  RingStorage(size_t capacity, const std::vector<size_t>& row_bytes);

  size_t capacity() const { return capacity_; }
  size_t size() const { return size_; }
  size_t next_slot() const { return next_; }
  size_t column_count() const { return row_bytes_.size(); }
  size_t row_bytes(size_t c) const { return row_bytes_[c]; }
  const char* column(size_t c) const { return columns_[c].data(); }
  char* column(size_t c) { return columns_[c].data(); }

  // Appends n rows (src[c]: n contiguous rows of column c), wrapping around.
  // When n > capacity only the last capacity rows survive, exactly as if the
  // rows had been written one at a time. Returns the slot of the first
  // surviving row; the survivors are rows [n - kept, n) in consecutive slots
  // modulo capacity, with kept = min(n, capacity).
  size_t append(const char* const* src, size_t n);

  // dst[c] receives rows slot[0..n) of column c, contiguously.
  void gather(const int64_t* slot, size_t n, char* const* dst) const;

  // Replaces the contents (used by load): src[c] holds `size` rows.
  void restore(const char* const* src, size_t size, size_t next);

 private:
  size_t capacity_;
  size_t size_ = 0;
  size_t next_ = 0;
  std::vector<size_t> row_bytes_;
  std::vector<LargeBuffer> columns_;
};

// Uniform replay: the storage plus its random stream, under one mutex.
class UniformReplay {
 public:
  UniformReplay(size_t capacity, const std::vector<size_t>& row_bytes, const Rng::State& rng);
  virtual ~UniformReplay() = default;

  size_t size() const;
  size_t capacity() const { return storage_.capacity(); }

  void add(const char* const* src, size_t n);
  // Draws n slots uniformly from the stored rows (with replacement) and
  // gathers them. The buffer must not be empty (checked by the caller).
  void sample(size_t n, int64_t* slot_out, char* const* dst);

  // Save/load access: take lock() and hold it while reading or restoring.
  // Locking with the GIL held is deadlock-free because no core method ever
  // waits for the GIL while it holds the mutex.
  std::unique_lock<std::mutex> lock() const { return std::unique_lock<std::mutex>(mutex_); }
  const RingStorage& storage_locked() const { return storage_; }
  Rng::State rng_state_locked() const { return rng_.state(); }
  // src[c] holds `size` rows of column c in slot order.
  void restore_locked(const char* const* src, size_t size, size_t next, const Rng::State& rng);

 protected:
  mutable std::mutex mutex_;
  RingStorage storage_;
  Rng rng_;
};

// Proportional prioritized replay: P(i) = p_i^alpha / sum_k p_k^alpha.
// The sum tree drives sampling, the min tree gives the smallest stored
// p^alpha for importance-weight normalisation.
class PrioritizedReplay : public UniformReplay {
 public:
  PrioritizedReplay(size_t capacity, const std::vector<size_t>& row_bytes, const Rng::State& rng, double alpha);

  double alpha() const { return alpha_; }
  double max_priority() const;

  // priorities: n raw priorities (> 0, finite), or nullptr for the largest
  // priority seen so far.
  void add(const char* const* src, size_t n, const double* priorities);
  // Stratified draw: one mass per equal segment of the total, descended
  // through the sum tree in one batch. weights_out[j] = (N P(j))^-beta
  // normalised by the largest possible weight, (p_min / p_j)^beta in closed form.
  void sample(size_t n, double beta, int64_t* slot_out, float* weights_out, char* const* dst);
  // slots < size() and priorities > 0, finite, with finite p^alpha (checked by the caller).
  void update_priorities(const int64_t* slot, const double* priorities, size_t n);

  // Under lock(): leaf values of slots [0, size) and the running maximum.
  void restore_priorities_locked(const double* leaf_values, size_t size, double max_priority);
  double max_priority_locked() const { return max_priority_; }

  // Under lock(): leaf value p^alpha of a slot and the tree roots.
  double leaf_value_locked(size_t slot) const { return sum_.leaf(slot); }
  double total_locked() const { return sum_.root(); }
  double min_value_locked() const { return min_.root(); }

 private:
  void set_leaves_locked(const int64_t* slot, const double* raw_priority, size_t n);

  double alpha_;
  double max_priority_ = 1.0;
  SumTree sum_;
  MinTree min_;
  // Reused per call under the lock: no allocation in the steady state.
  std::vector<size_t> scratch_;
  std::vector<double> mass_;
  std::vector<double> powered_;
  std::vector<int64_t> slots_;
};

}  // namespace league
