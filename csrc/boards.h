// Batched two-player board games: tic-tac-toe and connect four with PettingZoo's rules
// (tictactoe_v3, connect_four_v3) and observation layout. Plain C++ that trusts its
// input: the bindings (board_bindings.cpp) check shapes, dtypes and legality first.
//
// Layout shared by both games: cell k of the board is observation entry (k, plane) of
// a row-major [rows, cols, 2] array, plane 0 holding the pieces of the player to move
// and plane 1 the opponent's (PettingZoo's observe() for the agent whose turn it is).
// Each game offers reset/legal/mask/play/cell/write_obs; Batch<G> steps N of them.
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
  static constexpr int kRows = 3, kCols = 3, kCells = 9, kActions = 9;
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
  Outcome play(int a) {
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
};

// Bitboard of one player: bit r * 8 + c is the cell in row r (0 at the top), column c.
// Bit 7 of each row is padding that stays empty, so a line shifted by 1 (horizontal),
// 7 or 9 (diagonals) never wraps from one row into the next; 8 is vertical.
struct ConnectFour {
  static constexpr int kRows = 6, kCols = 7, kCells = 42, kActions = 7;
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
  Outcome play(int c) {
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
};

// N copies of game G stepped together. Every output row describes the copy's state
// after the call: for a copy whose game just ended, the first state of its next game
// (it is reset at once), with the final rewards in that step's reward row.
template <class G>
class Batch {
 public:
  static constexpr int kObs = G::kCells * 2;

  explicit Batch(int64_t n, uint64_t seed = 0) : games_(static_cast<size_t>(n)), rng_(seed) {
    for (auto& g : games_) g.reset();
  }
  // Exploring starts: every game begun from now on opens with k uniformly random legal
  // moves, k drawn uniformly from 0..plies (at most G::kMaxOpening, so an opening never
  // decides a game). 0 (the default): games start from the empty board.
  void set_opening_plies(int plies) { opening_plies_ = plies; }
  int opening_plies() const { return opening_plies_; }
  void seed(uint64_t s) { rng_.reseed(s); }
  int64_t size() const { return static_cast<int64_t>(games_.size()); }
  const G& game(int64_t i) const { return games_[static_cast<size_t>(i)]; }

  // Index of the first copy whose action is illegal, or -1 (nothing is changed).
  int64_t first_illegal(const int64_t* actions) const {
    for (size_t i = 0; i < games_.size(); ++i)
      if (!games_[i].legal(actions[i])) return static_cast<int64_t>(i);
    return -1;
  }

  void reset_all() {
    for (auto& g : games_) restart(g);
  }
  void reset_one(int64_t i) { restart(games_[static_cast<size_t>(i)]); }

  // A uniformly random legal action per copy (random players and benchmarks, no numpy draw).
  void random_actions(int64_t* out) {
    for (size_t i = 0; i < games_.size(); ++i) out[i] = random_action(games_[i]);
  }

  // Observation, mask and agent to move of every copy.
  void observe(float* obs, int8_t* mask, int64_t* agent) const {
    for (size_t i = 0; i < games_.size(); ++i) write(games_[i], obs + i * kObs, mask + i * G::kActions, agent + i);
  }

  // One move in every copy. rewards: [n, 2] by agent index; done: 1 where the game ended.
  void step(const int64_t* actions, float* obs, int8_t* mask, int64_t* agent, float* rewards, uint8_t* done) {
    for (size_t i = 0; i < games_.size(); ++i) {
      G& g = games_[i];
      const int mover = g.player;
      const Outcome out = g.play(static_cast<int>(actions[i]));
      float* r = rewards + 2 * i;
      r[0] = r[1] = 0.0f;
      done[i] = out != kOngoing;
      if (out == kMoverWins) {
        r[mover] = 1.0f;
        r[mover ^ 1] = -1.0f;
      }
      if (out != kOngoing) restart(g);
      write(g, obs + i * kObs, mask + i * G::kActions, agent + i);
    }
  }

 private:
  static void write(const G& g, float* obs, int8_t* mask, int64_t* agent) {
    g.write_obs(obs);
    g.mask(mask);
    *agent = g.player;
  }

  int random_action(const G& g) {
    int8_t legal[G::kActions];
    g.mask(legal);
    int count = 0;
    for (int a = 0; a < G::kActions; ++a) count += legal[a];
    int k = static_cast<int>(rng_.below(static_cast<uint64_t>(count)));
    int a = 0;
    for (; a < G::kActions; ++a)
      if (legal[a] && k-- == 0) break;
    return a;
  }
  void restart(G& g) {
    g.reset();
    if (opening_plies_ == 0) return;
    const int k = static_cast<int>(rng_.below(static_cast<uint64_t>(opening_plies_) + 1));
    for (int i = 0; i < k; ++i) g.play(random_action(g));  // never ends the game: k <= kMaxOpening
  }

  std::vector<G> games_;
  Rng rng_;
  int opening_plies_ = 0;
};

}  // namespace boards
}  // namespace league
