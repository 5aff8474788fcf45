#include "replay_buffer.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace league {

namespace {

// Rows are gathered from random places in hundreds of megabytes, so the
// cost is memory latency, not bandwidth: every row's cache lines are
// prefetched kPrefetchRows rows ahead to keep many misses in flight at once.
constexpr size_t kPrefetchRows = 8;

inline void prefetch_row(const char* row, size_t width) {
  for (size_t off = 0; off < width; off += 64) __builtin_prefetch(row + off, 0, 0);
  __builtin_prefetch(row + width - 1, 0, 0);  // an unaligned row may touch one more line
}

// The copy width is a compile-time constant for the common small columns (a
// runtime-sized memcpy per 4-byte row would dominate).
template <size_t W>
void gather_fixed(const char* src, const int64_t* slot, size_t n, char* dst) {
  for (size_t j = 0; j < n; ++j) {
    if (j + kPrefetchRows < n) __builtin_prefetch(src + static_cast<size_t>(slot[j + kPrefetchRows]) * W, 0, 0);
    std::memcpy(dst + j * W, src + static_cast<size_t>(slot[j]) * W, W);
  }
}

void gather_column(const char* src, size_t width, const int64_t* slot, size_t n, char* dst) {
  switch (width) {
    case 1: return gather_fixed<1>(src, slot, n, dst);
    case 2: return gather_fixed<2>(src, slot, n, dst);
    case 4: return gather_fixed<4>(src, slot, n, dst);
    case 8: return gather_fixed<8>(src, slot, n, dst);
    case 16: return gather_fixed<16>(src, slot, n, dst);
    default:
      for (size_t j = 0; j < std::min(n, kPrefetchRows); ++j) {
        prefetch_row(src + static_cast<size_t>(slot[j]) * width, width);
      }
      for (size_t j = 0; j < n; ++j) {
        if (j + kPrefetchRows < n) prefetch_row(src + static_cast<size_t>(slot[j + kPrefetchRows]) * width, width);
        std::memcpy(dst + j * width, src + static_cast<size_t>(slot[j]) * width, width);
      }
  }
}

}  // namespace

// ----------------------------------------------------------------- RingStorage

RingStorage::RingStorage(size_t capacity, const std::vector<size_t>& row_bytes)
    : capacity_(capacity), row_bytes_(row_bytes) {
  columns_.reserve(row_bytes.size());
  for (size_t w : row_bytes) columns_.emplace_back(w * capacity);
}

size_t RingStorage::append(const char* const* src, size_t n) {
  const size_t kept = std::min(n, capacity_);
  const size_t skipped = n - kept;
  const size_t first = (next_ + skipped) % capacity_;
  const size_t head = std::min(kept, capacity_ - first);  // rows before the wrap
  for (size_t c = 0; c < row_bytes_.size(); ++c) {
    const size_t w = row_bytes_[c];
    const char* from = src[c] + skipped * w;
    char* to = columns_[c].data();
    std::memcpy(to + first * w, from, head * w);
    if (kept > head) std::memcpy(to, from + head * w, (kept - head) * w);
  }
  next_ = (next_ + n) % capacity_;
  size_ = std::min(size_ + n, capacity_);
  return first;
}

void RingStorage::gather(const int64_t* slot, size_t n, char* const* dst) const {
  for (size_t c = 0; c < row_bytes_.size(); ++c) gather_column(columns_[c].data(), row_bytes_[c], slot, n, dst[c]);
}

void RingStorage::restore(const char* const* src, size_t size, size_t next) {
  for (size_t c = 0; c < row_bytes_.size(); ++c) std::memcpy(columns_[c].data(), src[c], size * row_bytes_[c]);
  size_ = size;
  next_ = next;
}

// --------------------------------------------------------------- UniformReplay

UniformReplay::UniformReplay(size_t capacity, const std::vector<size_t>& row_bytes, const Rng::State& rng)
    : storage_(capacity, row_bytes) {
  rng_.set_state(rng);
}

size_t UniformReplay::size() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return storage_.size();
}

void UniformReplay::add(const char* const* src, size_t n) {
  std::lock_guard<std::mutex> guard(mutex_);
  storage_.append(src, n);
}

void UniformReplay::sample(size_t n, int64_t* slot_out, char* const* dst) {
  std::lock_guard<std::mutex> guard(mutex_);
  const uint64_t size = storage_.size();
  for (size_t j = 0; j < n; ++j) slot_out[j] = static_cast<int64_t>(rng_.below(size));
  storage_.gather(slot_out, n, dst);
}

void UniformReplay::restore_locked(const char* const* src, size_t size, size_t next, const Rng::State& rng) {
  storage_.restore(src, size, next);
  rng_.set_state(rng);
}

// ----------------------------------------------------------- PrioritizedReplay

PrioritizedReplay::PrioritizedReplay(size_t capacity, const std::vector<size_t>& row_bytes, const Rng::State& rng,
                                     double alpha)
    : UniformReplay(capacity, row_bytes, rng), alpha_(alpha), sum_(capacity), min_(capacity) {}

double PrioritizedReplay::max_priority() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return max_priority_;
}

void PrioritizedReplay::set_leaves_locked(const int64_t* slot, const double* raw_priority, size_t n) {
  powered_.resize(n);
  scratch_.resize(n);
  for (size_t j = 0; j < n; ++j) {
    // p^alpha with alpha 0 is 1 for every p > 0; std::pow gives that too.
    powered_[j] = std::pow(raw_priority[j], alpha_);
    max_priority_ = std::max(max_priority_, raw_priority[j]);
  }
  sum_.set_many(slot, powered_.data(), n, scratch_.data());
  min_.set_many(slot, powered_.data(), n, scratch_.data());
}

void PrioritizedReplay::add(const char* const* src, size_t n, const double* priorities) {
  std::lock_guard<std::mutex> guard(mutex_);
  const size_t cap = storage_.capacity();
  const size_t first = storage_.append(src, n);
  const size_t kept = std::min(n, cap);
  const size_t skipped = n - kept;
  slots_.resize(kept);
  for (size_t j = 0; j < kept; ++j) slots_[j] = static_cast<int64_t>((first + j) % cap);
  if (priorities != nullptr) {
    // max_priority_ must also see the overwritten rows' priorities, as if
    // they had been added one at a time.
    for (size_t j = 0; j < skipped; ++j) max_priority_ = std::max(max_priority_, priorities[j]);
    set_leaves_locked(slots_.data(), priorities + skipped, kept);
  } else {
    mass_.assign(kept, max_priority_);  // mass_ doubles as scratch here
    set_leaves_locked(slots_.data(), mass_.data(), kept);
  }
}

void PrioritizedReplay::sample(size_t n, double beta, int64_t* slot_out, float* weights_out, char* const* dst) {
  std::lock_guard<std::mutex> guard(mutex_);
  const double total = sum_.root();
  const double segment = total / static_cast<double>(n);
  mass_.resize(n);
  scratch_.resize(n);
  for (size_t j = 0; j < n; ++j) {
    // Rounding may put (j + u) * segment at or past the total; the descent
    // then takes the right-most non-empty path, which is still a stored row.
    mass_[j] = (static_cast<double>(j) + rng_.uniform()) * segment;
  }
  sum_.find_prefix_many(mass_.data(), n, scratch_.data());
  const double min_value = min_.root();
  for (size_t j = 0; j < n; ++j) {
    slot_out[j] = static_cast<int64_t>(scratch_[j]);
    // (N P_j)^-beta / (N P_min)^-beta == (p_min / p_j)^beta: N and the total cancel.
    weights_out[j] = static_cast<float>(std::pow(min_value / sum_.leaf(scratch_[j]), beta));
  }
  storage_.gather(slot_out, n, dst);
}

void PrioritizedReplay::update_priorities(const int64_t* slot, const double* priorities, size_t n) {
  std::lock_guard<std::mutex> guard(mutex_);
  set_leaves_locked(slot, priorities, n);
}

void PrioritizedReplay::restore_priorities_locked(const double* leaf_values, size_t size, double max_priority) {
  sum_.assign(leaf_values, size);
  min_.assign(leaf_values, size);
  max_priority_ = max_priority;
}

}  // namespace league
