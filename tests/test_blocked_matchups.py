"""Matchups drawn in blocks (``sampler.matchup_draws``): each episode's matchup keeps the league's
distribution, a block plays only its draws, and a sampler then runs fewer policies per step."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from league.envs.factory import EnvFactory
from league.policy import RandomPolicy, RandomPolicyFactory
from league.sampling import BlockedMatchups, OpponentSampling, Sampler

AGENTS = ("player_0", "player_1")
PROBS = {"a": 0.6, "b": 0.3, "c": 0.1}


def _opponent(matchup) -> str:
    return next(p for p in matchup.policies.values() if p != "main")


def test_each_episode_keeps_the_sources_distribution() -> None:
    source = BlockedMatchups(OpponentSampling("main", PROBS), draws=2, block=16)
    rng = np.random.default_rng(0)
    drawn = [source.next_matchup(AGENTS, i, rng) for i in range(32_000)]
    counts = Counter(_opponent(m) for m in drawn)
    for pid, p in PROBS.items():
        assert abs(counts[pid] / len(drawn) - p) < 0.03, (pid, counts)
    seat0 = sum(m.policies["player_0"] == "main" for m in drawn) / len(drawn)
    assert abs(seat0 - 0.5) < 0.03
    assert all(m.learning_agents == frozenset(a for a, p in m.policies.items() if p == "main") for m in drawn[:50])


def test_a_block_plays_only_its_draws_and_the_next_block_draws_again() -> None:
    source = BlockedMatchups(OpponentSampling("main", {f"v{i}": 1.0 for i in range(20)}), draws=2, block=8)
    rng = np.random.default_rng(1)
    drawn = [source.next_matchup(AGENTS, i, rng) for i in range(8 * 50)]
    blocks = [{tuple(sorted(m.policies.items())) for m in drawn[i:i + 8]} for i in range(0, len(drawn), 8)]
    assert all(len(b) <= 2 for b in blocks)
    assert len(set().union(*blocks)) > 20  # fresh draws per block, not the first two forever


def test_agent_lists_keep_their_own_draws() -> None:
    source = BlockedMatchups(OpponentSampling("main", PROBS), draws=1, block=4)
    rng = np.random.default_rng(2)
    three = ("player_0", "player_1", "player_2")
    for i in range(12):
        for agents in (AGENTS, three):
            assert set(source.next_matchup(agents, i, rng).policies) == set(agents)


@pytest.mark.parametrize(("draws", "block"), [(0, 8), (2, 0), (-1, 4)])
def test_bad_block_settings_are_refused(draws: int, block: int) -> None:
    with pytest.raises(ValueError, match="draws >= 1 and block >= 1"):
        BlockedMatchups(OpponentSampling("main", PROBS), draws, block)
    if draws < 0:
        with pytest.raises(ValueError, match="matchup_draws must be >= 0"):
            Sampler("tictactoe", policies={"main": RandomPolicyFactory()}, matchups=OpponentSampling("main", PROBS),
                    matchup_draws=draws)


class _CountingFactory(RandomPolicyFactory):
    """Random players that log which policy acted at each call (one call = one forward pass)."""

    def __init__(self, pid: str, log: list[str]) -> None:
        super().__init__()
        self.pid, self.log = pid, log

    def make_policy(self, seed: int | None = None, learns: bool = False) -> RandomPolicy:
        policy = super().make_policy(seed, learns)
        act, pid, log = policy.compute_actions, self.pid, self.log

        def counted(obs, action_mask, explore=True):
            log.append(pid)
            return act(obs, action_mask, explore)

        policy.compute_actions = counted  # type: ignore[method-assign]
        return policy


@pytest.mark.parametrize("backend", ["cpp", "pettingzoo"])
def test_a_sampler_with_blocked_draws_runs_fewer_policies_per_step(backend: str) -> None:
    # Twelve frozen opponents drawn uniformly: every step runs one call per policy in play.
    pool = [f"main@v{i}" for i in range(12)]
    calls_per_step = {}
    for draws in (0, 1):
        log: list[str] = []
        factories = {pid: _CountingFactory(pid, log) for pid in ["main", *pool]}
        sampler = Sampler(EnvFactory("connect_four", backend=backend), policies=factories, frozen=tuple(pool),
                          matchups=OpponentSampling("main", dict.fromkeys(pool, 1.0)), num_envs=16,
                          fragment_length=40, seed=3, matchup_draws=draws)
        batch = sampler.sample()
        episodes = sampler.pop_episode_stats()
        assert batch.env_steps == 16 * 40 and episodes
        opponents = Counter(p for ep in episodes for p in ep["policies"].values() if p != "main")
        assert len(opponents) >= 2  # block after block, new draws from the pool
        first = len(log) / 40
        # A new source is drawn in blocks too: the next fragments (past the episodes the old
        # source started) run as few policies per step.
        sampler.set_matchups(OpponentSampling("main", dict.fromkeys(pool, 1.0)))
        sampler.sample()
        log.clear()
        sampler.sample()
        calls_per_step[draws] = (first, len(log) / 40)
    for blocked, unblocked in zip(calls_per_step[1], calls_per_step[0]):  # first source, then the new one
        assert blocked < 0.6 * unblocked, calls_per_step
