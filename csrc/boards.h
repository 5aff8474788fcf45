// Batched two-player board games: tic-tac-toe and connect four with PettingZoo's rules
// (tictactoe_v3, connect_four_v3) and observation layout. Plain C++ that trusts its
// input: the bindings (board_bindings.cpp) check shapes, dtypes and legality first.
//
// Layout shared by both games: cell k of the board is observation entry (k, plane) of
// a row-major [rows, cols, 2] array, plane 0 holding the pieces of the player to move
// and plane 1 the opponent's (PettingZoo's observe() for the agent whose turn it is).
// Each game offers the interface game_batch.h's Batch<G> steps N copies of
// (reset/legal/mask/play/write_obs), plus cell() for tests.
// Tic-tac-toe's cell k is action k (PettingZoo's squares reshaped to 3x3); connect
// four's cell is row * 7 + col with row 0 at the top, and action c drops a piece into
// the lowest empty row of column c. Both keep one bitboard per player: the win check is
// a few shifts and the observation rows come from small tables.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "rng.h"

namespace league {
namespace boards {

// What a move did: the game goes on, the mover won, or the board filled up (draw).
enum Outcome : int8_t { kOngoing = 0, kMoverWins = 1, kDraw = 2 };

// The rewards of a finished move: +1 to the mover and -1 to the other agent on a win, 0 and
// 0 otherwise; whether the game is over.
inline bool finish(int mover, Outcome out, float* rewards) {
  rewards[0] = rewards[1] = 0.0f;
  if (out == kMoverWins) {
    rewards[mover] = 1.0f;
    rewards[mover ^ 1] = -1.0f;
  }
  return out != kOngoing;
}

// Observation planes from bitboards, a row at a time: a row of kCols cells is 2 * kCols
// floats (mover, opponent interleaved), looked up for the row's bit pattern of each side
// (mover in the even slots, opponent in the odd ones) and added. `stride` is how many
// bits one board row takes (kCols, or more with padding bits that stay empty).
template <int kRows, int kCols, int kStride>
void write_planes(uint64_t mine, uint64_t theirs, float* obs) {
  struct Tables {
    float mine[1 << kCols][2 * kCols], theirs[1 << kCols][2 * kCols];
    Tables() {
      for (int bits = 0; bits < (1 << kCols); ++bits)
        for (int c = 0; c < kCols; ++c) {
          const float v = static_cast<float>((bits >> c) & 1);
          mine[bits][2 * c] = theirs[bits][2 * c + 1] = v;
          mine[bits][2 * c + 1] = theirs[bits][2 * c] = 0.0f;
        }
    }
  };
  static const Tables t;
  constexpr uint64_t kRowBits = (uint64_t{1} << kCols) - 1;
  for (int r = 0; r < kRows; ++r, obs += 2 * kCols) {
    const float* a = t.mine[(mine >> (kStride * r)) & kRowBits];
    const float* b = t.theirs[(theirs >> (kStride * r)) & kRowBits];
    for (int j = 0; j < 2 * kCols; ++j) obs[j] = a[j] + b[j];
  }
}

// Bitboard of one player: bit k is cell k (= action k), row r is bits 3r..3r+2.
struct TicTacToe {
  static constexpr int kRows = 3, kCols = 3, kCells = 9, kActions = 9, kObsSize = 2 * kCells;
  static constexpr int kObsShape[3] = {kRows, kCols, 2};
  static constexpr int kMaxOpening = 4;  // the first possible win is the fifth move
  static constexpr uint16_t kLines[8] = {0007, 0070, 0700, 0111, 0222, 0444, 0421, 0124};
  uint16_t pos[2];  // cells of agent 0 (player_1, moves first) and agent 1
  uint8_t player;   // agent index to move
  uint8_t moves;

  void reset() {
    pos[0] = pos[1] = 0;
    player = 0;
    moves = 0;
  }
  bool legal(int64_t a) const { return a >= 0 && a < kActions && !(((pos[0] | pos[1]) >> a) & 1); }
  void mask(int8_t* out) const {
    const unsigned taken = pos[0] | pos[1];
    for (int a = 0; a < kActions; ++a) out[a] = !((taken >> a) & 1);
  }
  uint8_t cell(int k) const { return ((pos[0] >> k) & 1) ? 1 : ((pos[1] >> k) & 1) ? 2 : 0; }
  Outcome move(int a) {
    const uint16_t b = pos[player] |= static_cast<uint16_t>(1u << a);
    ++moves;
    // Only the mover can have completed a line: the game stops at the first one.
    bool win = false;
    for (uint16_t line : kLines) win |= (b & line) == line;
    player ^= 1;
    if (win) return kMoverWins;
    return moves == kCells ? kDraw : kOngoing;
  }
  void write_obs(float* obs) const { write_planes<kRows, kCols, 3>(pos[player], pos[player ^ 1], obs); }
  // Game-batch interface (game_batch.h): no chance, so the generator is unused.
  void reset(Rng&) { reset(); }
  bool play(int a, Rng&, float* rewards) {
    const int mover = player;  // move() hands the turn over
    return finish(mover, move(a), rewards);
  }
};

// Bitboard of one player: bit r * 8 + c is the cell in row r (0 at the top), column c.
// Bit 7 of each row is padding that stays empty, so a line shifted by 1 (horizontal),
// 7 or 9 (diagonals) never wraps from one row into the next; 8 is vertical.
struct ConnectFour {
  static constexpr int kRows = 6, kCols = 7, kCells = 42, kActions = 7, kObsSize = 2 * kCells;
  static constexpr int kObsShape[3] = {kRows, kCols, 2};
  static constexpr int kMaxOpening = 6;  // the first possible win is the seventh move
  uint64_t pos[2];         // pieces of agent 0 and agent 1
  uint8_t heights[kCols];  // pieces in each column
  uint8_t player;
  uint8_t moves;

  void reset() {
    pos[0] = pos[1] = 0;
    std::memset(heights, 0, sizeof heights);
    player = 0;
    moves = 0;
  }
  bool legal(int64_t a) const { return a >= 0 && a < kActions && heights[a] < kRows; }
  void mask(int8_t* out) const {
    for (int a = 0; a < kActions; ++a) out[a] = heights[a] < kRows;
  }
  uint8_t cell(int k) const {
    const int bit = (k / kCols) * 8 + k % kCols;
    return ((pos[0] >> bit) & 1) ? 1 : ((pos[1] >> bit) & 1) ? 2 : 0;
  }
  static bool four(uint64_t b) {
    for (int shift : {1, 8, 7, 9}) {
      const uint64_t pairs = b & (b >> shift);
      if (pairs & (pairs >> (2 * shift))) return true;
    }
    return false;
  }
  Outcome move(int c) {
    const int r = kRows - 1 - heights[c];
    pos[player] |= uint64_t{1} << (r * 8 + c);
    ++heights[c];
    ++moves;
    // A four of the mover's (none existed before: the game would have ended).
    const bool win = four(pos[player]);
    player ^= 1;
    if (win) return kMoverWins;
    return moves == kCells ? kDraw : kOngoing;
  }
  void write_obs(float* obs) const { write_planes<kRows, kCols, 8>(pos[player], pos[player ^ 1], obs); }
  // Game-batch interface (game_batch.h): no chance, so the generator is unused.
  void reset(Rng&) { reset(); }
  bool play(int a, Rng&, float* rewards) {
    const int mover = player;  // move() hands the turn over
    return finish(mover, move(a), rewards);
  }

};

}  // namespace boards
}  // namespace league
