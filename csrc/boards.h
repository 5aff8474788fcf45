// Batched two-player board games: tic-tac-toe and connect four with PettingZoo's rules
// (tictactoe_v3, connect_four_v3) and observation layout. Plain C++ that trusts its
// input: the bindings (board_bindings.cpp) check shapes, dtypes and legality first.
//
// Layout shared by both games: cell k of the board is observation entry (k, plane) of
// a row-major [rows, cols, 2] array, plane 0 holding the pieces of the player to move
// and plane 1 the opponent's (PettingZoo's observe() for the agent whose turn it is).
// Tic-tac-toe's cell k is action k (PettingZoo's squares reshaped to 3x3); connect
// four's cell is row * 7 + col with row 0 at the top, and action c drops a piece into
// the lowest empty row of column c.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

namespace league {
namespace boards {

// What a move did: the game goes on, the mover won, or the board filled up (draw).
enum Outcome : int8_t { kOngoing = 0, kMoverWins = 1, kDraw = 2 };

struct TicTacToe {
  static constexpr int kRows = 3, kCols = 3, kCells = 9, kActions = 9;
  uint8_t cells[kCells];  // 0 empty, 1 + agent index of the piece's owner
  uint8_t player;         // agent index to move (0 = player_1 moves first)
  uint8_t moves;

  void reset() {
    std::memset(cells, 0, sizeof cells);
    player = 0;
    moves = 0;
  }
  bool legal(int64_t a) const { return a >= 0 && a < kActions && cells[a] == 0; }
  void mask(int8_t* out) const {
    for (int a = 0; a < kActions; ++a) out[a] = cells[a] == 0;
  }
  Outcome play(int a) {
    const uint8_t piece = player + 1;
    cells[a] = piece;
    ++moves;
    // Only the mover can have completed a line: the game stops at the first one.
    const int r = a / 3, c = a % 3;
    bool win = (cells[r * 3] == piece && cells[r * 3 + 1] == piece && cells[r * 3 + 2] == piece) ||
               (cells[c] == piece && cells[c + 3] == piece && cells[c + 6] == piece);
    if (!win && r == c) win = cells[0] == piece && cells[4] == piece && cells[8] == piece;
    if (!win && r + c == 2) win = cells[2] == piece && cells[4] == piece && cells[6] == piece;
    player ^= 1;
    if (win) return kMoverWins;
    return moves == kCells ? kDraw : kOngoing;
  }
};

struct ConnectFour {
  static constexpr int kRows = 6, kCols = 7, kCells = 42, kActions = 7;
  uint8_t cells[kCells];
  uint8_t heights[kCols];  // pieces in each column
  uint8_t player;
  uint8_t moves;

  void reset() {
    std::memset(cells, 0, sizeof cells);
    std::memset(heights, 0, sizeof heights);
    player = 0;
    moves = 0;
  }
  bool legal(int64_t a) const { return a >= 0 && a < kActions && heights[a] < kRows; }
  void mask(int8_t* out) const {
    for (int a = 0; a < kActions; ++a) out[a] = heights[a] < kRows;
  }
  int run(int r, int c, int dr, int dc, uint8_t piece) const {
    int n = 0;
    for (r += dr, c += dc; r >= 0 && r < kRows && c >= 0 && c < kCols && cells[r * kCols + c] == piece;
         r += dr, c += dc)
      ++n;
    return n;
  }
  Outcome play(int c) {
    const uint8_t piece = player + 1;
    const int r = kRows - 1 - heights[c];
    cells[r * kCols + c] = piece;
    ++heights[c];
    ++moves;
    // A four through the new piece (none existed before: the game would have ended).
    static constexpr int kDirs[4][2] = {{0, 1}, {1, 0}, {1, 1}, {1, -1}};
    bool win = false;
    for (const auto& d : kDirs) {
      if (1 + run(r, c, d[0], d[1], piece) + run(r, c, -d[0], -d[1], piece) >= 4) {
        win = true;
        break;
      }
    }
    player ^= 1;
    if (win) return kMoverWins;
    return moves == kCells ? kDraw : kOngoing;
  }
};

// N copies of game G stepped together. Every output row describes the copy's state
// after the call: for a copy whose game just ended, the first state of its next game
// (it is reset at once), with the final rewards in that step's reward row.
template <class G>
class Batch {
 public:
  static constexpr int kObs = G::kCells * 2;

  explicit Batch(int64_t n) : games_(static_cast<size_t>(n)) {
    for (auto& g : games_) g.reset();
  }
  int64_t size() const { return static_cast<int64_t>(games_.size()); }
  const G& game(int64_t i) const { return games_[static_cast<size_t>(i)]; }

  // Index of the first copy whose action is illegal, or -1 (nothing is changed).
  int64_t first_illegal(const int64_t* actions) const {
    for (size_t i = 0; i < games_.size(); ++i)
      if (!games_[i].legal(actions[i])) return static_cast<int64_t>(i);
    return -1;
  }

  void reset_all() {
    for (auto& g : games_) g.reset();
  }
  void reset_one(int64_t i) { games_[static_cast<size_t>(i)].reset(); }

  // Observation, mask and agent to move of every copy.
  void observe(float* obs, int8_t* mask, int8_t* agent) const {
    for (size_t i = 0; i < games_.size(); ++i) write(games_[i], obs + i * kObs, mask + i * G::kActions, agent + i);
  }

  // One move in every copy. rewards: [n, 2] by agent index; done: 1 where the game ended.
  void step(const int64_t* actions, float* obs, int8_t* mask, int8_t* agent, float* rewards, uint8_t* done) {
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
      if (out != kOngoing) g.reset();
      write(g, obs + i * kObs, mask + i * G::kActions, agent + i);
    }
  }

 private:
  static void write(const G& g, float* obs, int8_t* mask, int8_t* agent) {
    const uint8_t mine = g.player + 1;
    for (int k = 0; k < G::kCells; ++k) {
      const uint8_t v = g.cells[k];
      obs[2 * k] = v == mine ? 1.0f : 0.0f;
      obs[2 * k + 1] = (v != 0 && v != mine) ? 1.0f : 0.0f;
    }
    g.mask(mask);
    *agent = static_cast<int8_t>(g.player);
  }

  std::vector<G> games_;
};

}  // namespace boards
}  // namespace league
