// Leduc poker with OpenSpiel's rules (leduc_poker, two players, its default parameters)
// and information-state tensor, for game_batch.h's Batch<G>. Plain C++ that trusts its
// input: the bindings (board_bindings.cpp) check shapes, dtypes and legality first.
//
// Rules: a deck of six cards 0..5, card c of rank c / 2 (two jacks, two queens, two
// kings). Both players ante 1 chip, player 0's private card is dealt, then player 1's.
// Two betting rounds, player 0 first in each; actions fold (0, only when facing a bet),
// call/check (1) and raise (2, at most two raises a round) by 2 chips in round one and 4
// in round two. A round ends with a call that matches a raise or with a second check;
// one public card is dealt between the rounds. A fold loses what the folder put in;
// at the showdown a private card pairing the public card wins, else the higher rank,
// else the pot is split. Rewards come once, when the game ends: each player's chips
// won or lost.
//
// Information-state tensor of the player to move (30 floats, OpenSpiel's layout): its
// seat one-hot [0, 2), its private card one-hot [2, 8), the public card one-hot [8, 14)
// once dealt, then each round's actions in order, two entries per action (call sets
// the first, raise the second), four actions a round: round one at [14, 22), round two
// at [22, 30). tests/test_poker.py checks it against OpenSpiel over random games.
#pragma once

#include <cstdint>
#include <cstring>

#include "rng.h"

namespace league {
namespace poker {

struct Leduc {
  static constexpr int kActions = 3, kObsSize = 30, kMaxOpening = 0;
  static constexpr int kObsShape[1] = {kObsSize};
  static constexpr int kFold = 0, kCall = 1, kRaise = 2;
  static constexpr int kCards = 6, kMaxRaises = 2, kMaxActionsPerRound = 4;
  static constexpr int kBetSize[2] = {2, 4};

  int8_t private_card[2];
  int8_t public_card;  // -1 until dealt
  uint8_t player;      // agent index to move
  uint8_t round;       // 0 or 1
  uint8_t raises;      // raises this round
  uint8_t actions_in_round[2];
  uint8_t history[2][kMaxActionsPerRound];  // call or raise, per round
  int contribution[2];                      // chips each player has put in

  void reset(Rng& rng) {
    private_card[0] = static_cast<int8_t>(rng.below(kCards));
    const int other = static_cast<int>(rng.below(kCards - 1));  // one of the five cards left
    private_card[1] = static_cast<int8_t>(other >= private_card[0] ? other + 1 : other);
    public_card = -1;
    player = round = raises = 0;
    actions_in_round[0] = actions_in_round[1] = 0;
    contribution[0] = contribution[1] = 1;  // the antes
  }
  bool facing_bet() const { return contribution[player] < contribution[player ^ 1]; }
  bool legal(int64_t a) const {
    if (a == kCall) return true;
    if (a == kRaise) return raises < kMaxRaises;
    return a == kFold && facing_bet();
  }
  void mask(int8_t* out) const {
    for (int a = 0; a < kActions; ++a) out[a] = legal(a);
  }

  bool play(int a, Rng& rng, float* rewards) {
    rewards[0] = rewards[1] = 0.0f;
    const int me = player, other = player ^ 1;
    if (a == kFold) {
      rewards[me] = static_cast<float>(-contribution[me]);
      rewards[other] = static_cast<float>(contribution[me]);
      return true;
    }
    const bool ends_round = a == kCall && (facing_bet() || actions_in_round[round] > 0);
    history[round][actions_in_round[round]++] = static_cast<uint8_t>(a);
    contribution[me] = contribution[other];  // a call matches; a raise matches, then adds
    if (a == kRaise) {
      contribution[me] += kBetSize[round];
      ++raises;
    }
    if (!ends_round) {
      player = static_cast<uint8_t>(other);
      return false;
    }
    if (round == 1) {
      showdown(rewards);
      return true;
    }
    deal_public(rng);
    round = 1;
    raises = 0;
    player = 0;
    return false;
  }

  void write_obs(float* obs) const {
    std::memset(obs, 0, kObsSize * sizeof(float));
    obs[player] = 1.0f;
    obs[2 + private_card[player]] = 1.0f;
    if (public_card >= 0) obs[8 + public_card] = 1.0f;
    for (int r = 0; r < 2; ++r)
      for (int k = 0; k < actions_in_round[r]; ++k)
        obs[14 + 8 * r + 2 * k + (history[r][k] == kRaise)] = 1.0f;
  }

 private:
  void deal_public(Rng& rng) {
    int k = static_cast<int>(rng.below(kCards - 2));  // the k-th card neither player holds
    for (int c = 0; c < kCards; ++c) {
      if (c == private_card[0] || c == private_card[1]) continue;
      if (k-- == 0) {
        public_card = static_cast<int8_t>(c);
        break;
      }
    }
  }
  int strength(int p) const {  // a pair beats any rank; ranks 0..2
    const int rank = private_card[p] / 2;
    return rank == public_card / 2 ? 3 + rank : rank;
  }
  void showdown(float* rewards) const {
    const int s0 = strength(0), s1 = strength(1);
    if (s0 == s1) return;  // split pot
    const int winner = s0 > s1 ? 0 : 1;
    rewards[winner] = static_cast<float>(contribution[winner ^ 1]);
    rewards[winner ^ 1] = static_cast<float>(-contribution[winner ^ 1]);
  }
};

}  // namespace poker
}  // namespace league
