// Depth-limited negamax with alpha-beta pruning for connect four: the search behind the
// scripted `negamax` player (league/population/scripted.py documents it), in plain C++
// so that a batch of positions is scored with the GIL released.
//
// Bitboards use the scripted player's layout, not boards.h's: bit 7 * col + height is
// the cell `height` rows above the bottom of column `col`; bit 6 of every column stays
// empty, so a line shifted by 1 (vertical), 7 (horizontal), 6 or 8 (diagonals) never
// wraps from one column into the next. The scores are exactly those of the reference
// search in tests/test_negamax_core.py: the same move order (centre first), the same
// fail-soft windows and the same heuristic (open windows of four, centre control).
#pragma once

#include <cstdint>
#include <vector>

#include "threats.h"

namespace league {
namespace negamax {

constexpr int kRows = 6, kCols = 7, kStride = 7;
constexpr int64_t kWin = 1000000;
// Far beyond any score (a win is kWin + depth): the search's infinite window.
constexpr int64_t kInf = int64_t{1} << 40;
// Score of a move that cannot be played (a full column, or masked out).
constexpr int64_t kUnscored = INT64_MIN;
constexpr int kColumnOrder[kCols] = {3, 2, 4, 1, 5, 0, 6};  // centre first: earlier cut-offs
// Credit for a window of four holding 0..3 of one side's pieces and none of the other's
// (4 cannot occur: the game would be over). Centre-column pieces score kCentreScore each.
// Open threats matter far more than scattered pieces; these weights were picked over a few
// alternatives because deeper searches then beat shallower ones most reliably.
constexpr int64_t kWindowScore[5] = {0, 0, 2, 10, 0};
constexpr int64_t kCentreScore = 2;

inline uint64_t centre_mask() {
  uint64_t m = 0;
  for (int h = 0; h < kRows; ++h) m |= uint64_t{1} << (kStride * 3 + h);
  return m;
}

// Every window of four cells on the board (69 of them), as bitboards.
inline const std::vector<uint64_t>& windows() {
  static const std::vector<uint64_t> all = [] {
    std::vector<uint64_t> w;
    const int dirs[4][2] = {{1, 0}, {0, 1}, {1, 1}, {1, -1}};
    for (int col = 0; col < kCols; ++col)
      for (int h = 0; h < kRows; ++h)
        for (const auto& d : dirs) {
          uint64_t bits = 0;
          bool inside = true;
          for (int i = 0; i < 4 && inside; ++i) {
            const int c = col + i * d[0], r = h + i * d[1];
            inside = c >= 0 && c < kCols && r >= 0 && r < kRows;
            if (inside) bits |= uint64_t{1} << (kStride * c + r);
          }
          if (inside) w.push_back(bits);
        }
    return w;
  }();
  return all;
}

inline bool has_four(uint64_t b) {
  for (int shift : {1, kStride, kStride - 1, kStride + 1}) {
    const uint64_t pairs = b & (b >> shift);
    if (pairs & (pairs >> (2 * shift))) return true;
  }
  return false;
}

// Bit where a piece dropped in `col` lands, or 0 when the column is full.
inline uint64_t drop_bit(uint64_t occupied, int col) {
  const uint64_t column = (occupied >> (kStride * col)) & 0x3F;
  const int height = column ? 64 - __builtin_clzll(column) : 0;  // above the highest piece
  return height < kRows ? uint64_t{1} << (kStride * col + height) : 0;
}

inline int64_t heuristic(uint64_t mine, uint64_t theirs) {
  static const uint64_t centre = centre_mask();
  int64_t score = kCentreScore * (__builtin_popcountll(mine & centre) - __builtin_popcountll(theirs & centre));
  for (uint64_t w : windows()) {
    const uint64_t own = w & mine, other = w & theirs;
    if (own && !other) score += kWindowScore[__builtin_popcountll(own)];
    else if (other && !own) score -= kWindowScore[__builtin_popcountll(other)];
  }
  return score;
}

// The fail-soft alpha-beta loop of both searches: the best of `best` and the values of the
// n moves (bits of `mine`'s next piece), `value(after)` scoring the position after one
// from the side to move there, searched with the negated window.
template <class Value>
inline int64_t best_move_value(uint64_t mine, const uint64_t* moves, int n, int64_t best, int64_t alpha, int64_t beta,
                               Value value) {
  for (int i = 0; i < n; ++i) {
    const int64_t score = -value(mine | moves[i], -beta, -alpha);
    if (score > best) {
      best = score;
      if (best > alpha) {
        alpha = best;
        if (alpha >= beta) break;
      }
    }
  }
  return best;
}

// Fail-soft alpha-beta value for the side to move (`mine`), searching `depth` more plies.
// Leaves at depth 0 score the heuristic, or 0 (`kExact`: only wins and losses within the
// horizon count; exact_search below reaches the same values faster).
template <bool kExact = false>
inline int64_t search(uint64_t mine, uint64_t theirs, int depth, int64_t alpha, int64_t beta) {
  if (has_four(theirs)) return -(kWin + depth);  // lost; losing later (less depth left) is less bad
  const uint64_t occupied = mine | theirs;
  uint64_t moves[kCols];
  int n = 0;
  for (int col : kColumnOrder)
    if (const uint64_t bit = drop_bit(occupied, col)) moves[n++] = bit;
  if (n == 0) return 0;
  if (depth == 0) return kExact ? 0 : heuristic(mine, theirs);
  return best_move_value(mine, moves, n, -kInf, alpha, beta, [&](uint64_t after, int64_t a, int64_t b) {
    return search<kExact>(theirs, after, depth - 1, a, b);
  });
}

// The root of both searches: each legal move of one position (bit c of `legal`: column c
// may be played) scored into out[kCols], kUnscored for the others, by `value(after, alpha,
// beta)` from the opponent's side. Each move is searched with a window just below the best
// so far: moves that tie it get exact scores, worse ones an upper bound below it, which is
// all choosing the best needs.
template <class Value>
inline void score_root(uint64_t mine, uint64_t theirs, uint64_t legal, int64_t* out, Value value) {
  for (int c = 0; c < kCols; ++c) out[c] = kUnscored;
  int64_t best = -kInf;
  for (int col : kColumnOrder) {
    if (!((legal >> col) & 1)) continue;
    const uint64_t bit = drop_bit(mine | theirs, col);
    if (!bit) continue;
    out[col] = -value(mine | bit, -kInf, -(best - 1));
    if (out[col] > best) best = out[col];
  }
}

// Scores of the legal moves of one position (score_root) by the search above.
template <bool kExact = false>
inline void score_moves(uint64_t mine, uint64_t theirs, uint64_t legal, int depth, int64_t* out) {
  score_root(mine, theirs, legal, out, [&](uint64_t after, int64_t a, int64_t b) {
    return search<kExact>(theirs, after, depth - 1, a, b);
  });
}

// ---- The exact search: wins and losses within the horizon only ----------------------------
//
// A score is +-(kWin + plies to spare) for a win or loss by force within `depth` plies, else
// 0 ("not decided"): the value of the plain search above with every leaf scored 0. It reads
// connect four's forcing rules instead of trying every move, which makes six plies as cheap
// as four were (benchmarks/bench_search.py): a side that can win at once does (no quicker
// win exists); one facing two immediate wins has lost; one facing one must block it; and a
// move under a cell where the opponent completes a line loses at once, so it is scored
// without a search. Tested against the plain search, score_moves<true> (tests/test_negamax_core.py),
// which stays as benchmarks/bench_search.py's baseline.

// Bits `lowest`..`lowest + rows - 1` of every column: the cells of those rows.
constexpr uint64_t rows_mask(int lowest, int rows) {
  uint64_t m = 0;
  for (int c = 0; c < kCols; ++c)
    for (int h = lowest; h < lowest + rows; ++h) m |= uint64_t{1} << (kStride * c + h);
  return m;
}
constexpr uint64_t kBoard = rows_mask(0, kRows);  // the 42 cells (each column's seventh bit stays empty)
constexpr uint64_t kBottom = rows_mask(0, 1);     // the bottom cell of each column

// Empty cells where a piece of `own` completes a line of four (threats.h's reading).
inline uint64_t winning_cells(uint64_t own, uint64_t occupied) {
  return threats::threat_cells(own, kBoard & ~occupied, kStride, 4);
}

// Whether two bitboards can come from a game: disjoint, on the board, and every column's
// pieces stacked from the bottom (adding the bottom bit then clears them all).
inline bool is_position(uint64_t mine, uint64_t theirs) {
  const uint64_t occupied = mine | theirs;
  return !(mine & theirs) && !(occupied & ~kBoard) && !((occupied + kBottom) & occupied);
}

// Exact value for the side to move (`mine`), neither side having four yet; fail-soft.
inline int64_t exact_search(uint64_t mine, uint64_t theirs, int depth, int64_t alpha, int64_t beta) {
  const uint64_t occupied = mine | theirs;
  const uint64_t playable = (occupied + kBottom) & kBoard;  // the cell a piece lands on, per column
  if (!playable || depth == 0) return 0;                    // a full board is a draw
  if (winning_cells(mine, occupied) & playable) return kWin + depth - 1;
  if (depth == 1) return 0;
  const int64_t lost = -(kWin + depth - 2);  // the opponent wins with its next move: the worst value here
  const uint64_t threats = winning_cells(theirs, occupied);
  const uint64_t forced = threats & playable;
  if (forced & (forced - 1)) return lost;  // two cells to block
  const uint64_t candidates = (forced ? forced : playable) & ~(threats >> 1);
  if (!candidates) return lost;
  // At two plies the opponent's only new playable cell is the one above the move, and no
  // candidate gives it that: nothing is decided.
  if (depth == 2) return 0;
  uint64_t moves[kCols];
  int n = 0;
  for (int col : kColumnOrder)
    if (const uint64_t bit = candidates & (uint64_t{0x3F} << (kStride * col))) moves[n++] = bit;
  // `lost` starts as the best: the value of every move left out, and a lower bound on the others.
  return best_move_value(mine, moves, n, lost, alpha, beta, [&](uint64_t after, int64_t a, int64_t b) {
    return exact_search(theirs, after, depth - 1, a, b);
  });
}

// Scores of the legal moves of one position (score_root) by the exact search: the best moves
// get their exact scores, the others an upper bound below the best.
inline void exact_score_moves(uint64_t mine, uint64_t theirs, uint64_t legal, int depth, int64_t* out) {
  score_root(mine, theirs, legal, out, [&](uint64_t after, int64_t a, int64_t b) {
    return has_four(after) ? -(kWin + depth - 1) : exact_search(theirs, after, depth - 1, a, b);
  });
}

}  // namespace negamax
}  // namespace league
