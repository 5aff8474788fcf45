// Threat planes of k-in-a-row boards (connect four, tic-tac-toe): for each board, the cells
// a move fills now, each player's threat cells (empty cells that would complete a line
// of k) and the moves that would leave a player two wins at once, as the input planes league/algos/board_search.py `threat_planes` documents. Plain
// C++ over bitboards so that a model can add them to every forward pass: a batch of 128
// connect-four boards takes microseconds where the same reading in torch ops took a
// millisecond. Tested equal to the torch reading (tests/test_board_search.py).
//
// Bitboards: bit `col * S + height` (height counted from the bottom row), S = rows + 1, so
// every column has an always-empty sentinel bit on top: a line shifted by 1 (vertical),
// S (horizontal), S - 1 or S + 1 (diagonals) never runs from one column into the next.
#pragma once

#include <cstdint>

namespace league {
namespace threats {

// Planes per board, in this order (board_search.THREAT_PLANES).
constexpr int kPlanes = 7;

// The largest boards the 64-bit layout holds: (rows + 1) * cols <= 64.
inline bool fits(int rows, int cols) { return rows >= 1 && cols >= 1 && (rows + 1) * cols <= 64; }

inline uint64_t shifted(uint64_t b, int s) { return s >= 0 ? b << s : b >> -s; }

inline int popcount(uint64_t b) { return __builtin_popcountll(b); }

// Empty cells that complete a line of k for `own`: for each direction and each place j of
// the cell in a window of k, the AND of `own` shifted from every other place.
inline uint64_t threat_cells(uint64_t own, uint64_t empty, int stride, int k) {
  const int directions[4] = {1, stride, stride - 1, stride + 1};
  uint64_t hits = 0;
  for (int d : directions) {
    for (int j = 0; j < k; ++j) {
      uint64_t line = ~uint64_t{0};
      for (int i = 0; i < k; ++i)
        if (i != j) line &= shifted(own, (j - i) * d);
      hits |= line;
    }
  }
  return hits & empty;
}

// The playable cells, other than `own`'s immediate wins (`own_threats`), where `own`'s move
// leaves it a win one block cannot stop: two cells that win at once, or (under gravity) one
// whose cell above wins too. Unless the other side wins at once first, such a move wins in
// three plies.
inline uint64_t double_threats(uint64_t own, uint64_t own_threats, uint64_t empty, uint64_t playable, int stride,
                               int k, bool gravity, uint64_t board) {
  uint64_t found = 0;
  for (uint64_t left = playable & ~own_threats; left; left &= left - 1) {
    const uint64_t cell = left & -left;
    const uint64_t after_empty = empty & ~cell;
    const uint64_t threats = threat_cells(own | cell, after_empty, stride, k);
    const uint64_t next_playable = gravity ? ((playable & ~cell) | ((cell << 1) & board)) : after_empty;
    const uint64_t wins = threats & next_playable;
    if (popcount(wins) >= 2 || (gravity && ((wins << 1) & threats))) found |= cell;
  }
  return found;
}

// obs: n boards of [rows, cols, 2] floats (plane 0 the mover's pieces, > 0.5 counts as a
// piece; row 0 the top); out: n x [rows, cols, kPlanes] floats. `gravity`: a move fills the
// lowest empty cell of a column (connect four), else any empty cell.
inline void threat_planes(const float* obs, int64_t n, int rows, int cols, int k, bool gravity, float* out) {
  const int stride = rows + 1;
  uint64_t board = 0, bottom = 0;
  for (int c = 0; c < cols; ++c) {
    bottom |= uint64_t{1} << (c * stride);
    for (int h = 0; h < rows; ++h) board |= uint64_t{1} << (c * stride + h);
  }
  const int cells = rows * cols;
  for (int64_t b = 0; b < n; ++b) {
    const float* o = obs + b * cells * 2;
    uint64_t mine = 0, theirs = 0;
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c) {
        const uint64_t bit = uint64_t{1} << (c * stride + rows - 1 - r);
        const float* cell = o + (r * cols + c) * 2;
        if (cell[0] > 0.5f) mine |= bit;
        if (cell[1] > 0.5f) theirs |= bit;
      }
    const uint64_t occupied = mine | theirs, empty = board & ~occupied;
    // Under gravity, adding the bottom row to the occupied cells carries into the lowest
    // empty cell of every column (a full column's carry lands on its sentinel, outside).
    const uint64_t playable = gravity ? (occupied + bottom) & board & ~occupied : empty;
    const uint64_t own = threat_cells(mine, empty, stride, k), other = threat_cells(theirs, empty, stride, k);
    const uint64_t planes[kPlanes] = {
        playable, own, other, own & playable, other & playable,
        double_threats(mine, own, empty, playable, stride, k, gravity, board),
        double_threats(theirs, other, empty, playable, stride, k, gravity, board)};
    float* w = out + b * cells * kPlanes;
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c) {
        const int bit = c * stride + rows - 1 - r;
        for (int p = 0; p < kPlanes; ++p) *w++ = static_cast<float>((planes[p] >> bit) & 1);
      }
  }
}

}  // namespace threats
}  // namespace league
