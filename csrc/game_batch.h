// N copies of a two-player turn-based game stepped together: the batched core behind
// league/envs/boards.py's envs (board games in boards.h, Leduc poker in poker.h).
//
// A game G offers: kActions, kObsSize, kObsShape (the observation's shape),
// kMaxOpening (the most random opening moves that can never decide a game; 0 where
// openings are not offered); a `player` member (agent index to move); reset(Rng&) (a
// new game, chance events such as deals drawn from the generator); legal(a); mask(out);
// write_obs(out) (the mover's view); play(a, Rng&, rewards[2]) (one move and the chance
// events after it; writes both agents' rewards for this move and returns whether the
// game ended).
#pragma once

#include <cstdint>
#include <vector>

#include "rng.h"

namespace league {

// Every output row describes the copy's state after the call: for a copy whose game
// just ended, the first state of its next game (it is reset at once), with the final
// rewards in that step's reward row. A copy whose autoreset flag is off stops instead when
// its game ends (evaluation quotas): it is inactive, not stepped, until it is reset.
template <class G>
class Batch {
 public:
  static constexpr int kObs = G::kObsSize;

  explicit Batch(int64_t n, uint64_t seed = 0)
      : games_(static_cast<size_t>(n)), rng_(seed), autoreset_(games_.size(), 1), active_(games_.size(), 1) {
    for (auto& g : games_) g.reset(rng_);
  }
  // Exploring starts: every game begun from now on opens with k uniformly random legal
  // moves, k drawn uniformly from 0..plies (at most G::kMaxOpening, so an opening never
  // decides a game). 0 (the default): games start from their first position.
  void set_opening_plies(int plies) { opening_plies_ = plies; }
  int opening_plies() const { return opening_plies_; }
  void seed(uint64_t s) { rng_.reseed(s); }
  int64_t size() const { return static_cast<int64_t>(games_.size()); }
  const G& game(int64_t i) const { return games_[static_cast<size_t>(i)]; }

  // Copies that stop: flags[i] == 0 has copy i stop when its game in progress ends instead
  // of starting the next one. A stopped copy is inactive: step() reads no action of it and
  // writes nothing of it but zero rewards and done, until reset_all() or reset_one() starts
  // it again. reset_all() turns every copy's flag back on.
  void set_autoreset(const uint8_t* flags) {
    for (size_t i = 0; i < games_.size(); ++i) autoreset_[i] = flags[i] != 0;
  }
  // 1 where a copy has a game in progress, 0 where it stopped.
  void active(uint8_t* out) const {
    for (size_t i = 0; i < games_.size(); ++i) out[i] = active_[i];
  }

  // Index of the first active copy whose action is illegal, or -1 (nothing is changed).
  int64_t first_illegal(const int64_t* actions) const {
    for (size_t i = 0; i < games_.size(); ++i)
      if (active_[i] && !games_[i].legal(actions[i])) return static_cast<int64_t>(i);
    return -1;
  }

  void reset_all() {
    for (auto& g : games_) restart(g);
    autoreset_.assign(games_.size(), 1);
    active_.assign(games_.size(), 1);
  }
  void reset_one(int64_t i) {
    restart(games_[static_cast<size_t>(i)]);
    active_[static_cast<size_t>(i)] = 1;
  }

  // A uniformly random legal action per active copy (random players and benchmarks, no numpy
  // draw); 0 for a stopped copy (not read by step()).
  void random_actions(int64_t* out) {
    for (size_t i = 0; i < games_.size(); ++i) out[i] = active_[i] ? random_action(games_[i]) : 0;
  }

  // Observation, mask and agent to move of every copy.
  void observe(float* obs, int8_t* mask, int64_t* agent) const {
    for (size_t i = 0; i < games_.size(); ++i) write(games_[i], obs + i * kObs, mask + i * G::kActions, agent + i);
  }

  // One move in every active copy. rewards: [n, 2] by agent index; done: 1 where the game
  // ended. A copy that stops (its autoreset flag off) keeps its last rows of obs, mask, agent.
  void step(const int64_t* actions, float* obs, int8_t* mask, int64_t* agent, float* rewards, uint8_t* done) {
    for (size_t i = 0; i < games_.size(); ++i) {
      if (!active_[i]) {
        done[i] = 0;
        rewards[2 * i] = rewards[2 * i + 1] = 0.0f;
        continue;
      }
      G& g = games_[i];
      const bool over = g.play(static_cast<int>(actions[i]), rng_, rewards + 2 * i);
      done[i] = over;
      if (over) {
        if (!autoreset_[i]) {
          active_[i] = 0;
          continue;
        }
        restart(g);
      }
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
    g.reset(rng_);
    if (opening_plies_ == 0) return;
    const int k = static_cast<int>(rng_.below(static_cast<uint64_t>(opening_plies_) + 1));
    float ignored[2];
    for (int i = 0; i < k; ++i) g.play(random_action(g), rng_, ignored);  // never ends: k <= kMaxOpening
  }

  std::vector<G> games_;
  Rng rng_;
  std::vector<uint8_t> autoreset_;  // per copy: start the next game when one ends (else stop)
  std::vector<uint8_t> active_;     // per copy: a game in progress
  int opening_plies_ = 0;
};

}  // namespace league
