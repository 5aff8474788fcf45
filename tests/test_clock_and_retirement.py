"""One clock for every algorithm, throttled weight broadcasts, and safe snapshot retirement.

Each test here failed on the code it was written against: DQN iterations were single
gradient steps each followed by a broadcast, and an evicted snapshot was removed from the
samplers while episodes that drew it were still running (``KeyError: 'main@v75'``).
"""

from __future__ import annotations

from typing import Any

import pytest

from league.algos import make_algorithm
from league.envs import make_env
from league.flow import BroadcastWeights, ParallelRollouts
from league.learn import Learner
from league.policy import RandomPolicyFactory
from league.sampling import OpponentSampling, Sampler
from run_helpers import tiny_run_config


def _spec() -> Any:
    return make_env("connect_four").spec("player_0")


# Safe retirement -----------------------------------------------------------------
def test_a_retired_policy_stays_until_the_episodes_that_drew_it_end():
    # Connect four episodes last 7+ plies: after 2 steps every env copy is mid-episode.
    sampler = Sampler(
        "connect_four",
        policies={"main": RandomPolicyFactory(), "old": RandomPolicyFactory()},
        frozen=("main", "old"),
        matchups=OpponentSampling("main", {"old": 1.0}),
        num_envs=4,
        fragment_length=2,
    )
    sampler.sample()
    sampler.set_matchups(OpponentSampling("main", {"main": 1.0}))
    sampler.remove_policy("old")
    assert "old" in sampler.policy_ids() and sampler.retiring_policies() == ["old"]
    for _ in range(40):  # the episodes in progress finish with "old"; none starts with it
        sampler.sample()
    assert "old" not in sampler.policy_ids() and sampler.retiring_policies() == []
    stats = sampler.pop_episode_stats()
    assert any("old" in ep["policies"].values() for ep in stats)


def test_a_policy_no_episode_plays_is_removed_at_once_and_can_come_back():
    sampler = Sampler(
        "tictactoe",
        policies={"main": RandomPolicyFactory(), "old": RandomPolicyFactory()},
        frozen=("main", "old"),
        matchups=OpponentSampling("main", {"main": 1.0}),
        num_envs=2,
        fragment_length=2,
    )
    sampler.remove_policy("old")
    assert "old" not in sampler.policy_ids()
    sampler.add_policy("old", RandomPolicyFactory(), learns=False)
    assert "old" in sampler.policy_ids() and sampler.retiring_policies() == []


def test_selfplay_league_evicting_every_iteration_never_loses_a_policy_mid_episode(tmp_path):
    # A snapshot every iteration and a pool of one: each snapshot is evicted one iteration
    # after it was taken, while long connect-four episodes that drew it still run.
    from league.trainer import Trainer

    cfg = tiny_run_config(
        env={"name": "connect_four"},
        sampler={"num_envs": 8, "fragment_length": 4},
        league={"snapshot_steps": 1, "max_snapshots": 1, "self_play_prob": 0.0},
        iteration={"min_env_steps": 0},
        eval={"interval": 0},
        checkpoint={"interval": 0},
        stop={"iterations": 30},
    )
    trainer = Trainer(cfg, tmp_path)
    try:
        summary = trainer.train()
        assert summary["iterations"] == 30
        assert trainer.league.evicted >= 20
        # Evicted snapshots left the payoff table and, once unused, the samplers.
        held = {s.policy_id for s in trainer.pool.snapshots}
        assert set(trainer.payoff.players()) - {"main", "random"} <= held
        assert len(trainer.samplers[0].policy_ids()) <= 2 + len(held) + len(trainer.samplers[0].retiring_policies())
    finally:
        trainer.close()


# One clock -----------------------------------------------------------------------
def test_a_dqn_iteration_is_bounded_by_env_steps_not_gradient_steps(tmp_path):
    from league.trainer import Trainer

    dqn = {"train_batch_size": 16, "learning_starts": 32, "training_intensity": 8.0, "model": "mlp"}
    cfg = tiny_run_config(
        algo={"name": "dqn", "params": dqn},
        sampler={"num_envs": 4, "fragment_length": 16},  # 64 env steps per fragment
        iteration={"min_env_steps": 256},
        eval={"interval": 2},
        checkpoint={"interval": 0},
        stop={"iterations": 4},
    )
    trainer = Trainer(cfg, tmp_path)
    try:
        trainer.train()
        rows = list(trainer.history)
        assert len(rows) == 4
        assert all(r["env_steps"] >= 256 * (i + 1) for i, r in enumerate(rows))
        counters = rows[-1]["counters"]
        # Many gradient steps per iteration, one broadcast per fragment at most.
        assert sum(r["train_steps"] for r in rows) > 4 * 4
        assert counters["num_weight_broadcasts"] <= counters["num_env_steps_sampled"] // 64 + 1
    finally:
        trainer.close()


def test_broadcast_weights_is_throttled_to_new_samples():
    spec = _spec()
    algo = make_algorithm("ppo", spec, {"train_batch_size": 32, "minibatch_size": 32, "num_epochs": 1})
    learner = Learner()
    learner.add_policy("main", algo)
    sampler = Sampler("connect_four", policies={"main": algo}, matchups=OpponentSampling("main", {"main": 1.0}), num_envs=2, fragment_length=16)
    rollouts = ParallelRollouts([sampler], mode="bulk_sync")
    throttled = BroadcastWeights(learner, [sampler], ["main"], every_env_steps=64)
    plan = rollouts.for_each(throttled)
    for _ in range(8):  # 8 fragments of 32 env steps: a broadcast every other fragment
        next(plan)
    assert plan.metrics.counters["num_weight_broadcasts"] == 4
    with pytest.raises(ValueError, match="every_env_steps"):
        BroadcastWeights(learner, [sampler], ["main"], every_env_steps=-1)


# Ray: a run of its own ---------------------------------------------------------------
def test_league_train_starts_its_own_ray_unless_an_address_is_given(tmp_path, monkeypatch):
    ray = pytest.importorskip("ray")
    from league.trainer import Trainer

    calls: list[dict[str, Any]] = []

    class Stop(Exception):
        pass

    def fake_init(**kwargs: Any) -> None:
        calls.append(kwargs)
        raise Stop

    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", fake_init)
    for address, expected in ((None, "local"), ("auto", "auto")):
        cfg = tiny_run_config(sampler={"remote": True}, ray={"address": address})
        with pytest.raises(Stop):
            Trainer(cfg, tmp_path).setup()
        assert calls[-1]["address"] == expected


def test_auto_sampling_mode_is_synchronous_for_on_policy_learners():
    from league.run.build import make_algorithms, sampling_mode

    spec = make_env("tictactoe").spec("player_1")
    for algo, expected in (("ppo", "bulk_sync"), ("a2c", "bulk_sync"), ("dqn", "async"), ("appo", "async")):
        cfg = tiny_run_config(algo={"name": algo, "params": {}}, sampler={"mode": "auto"})
        assert sampling_mode(cfg, make_algorithms(cfg, spec, ["main"])) == expected, algo
    mixed = tiny_run_config(sampler={"mode": "auto"}, policies={"p": {"algo": "ppo"}, "d": {"algo": "dqn"}})
    assert sampling_mode(mixed, make_algorithms(mixed, spec, ["p", "d"])) == "bulk_sync"
    explicit = tiny_run_config(sampler={"mode": "async"})
    assert sampling_mode(explicit, make_algorithms(explicit, spec, ["main"])) == "async"


def test_evaluation_plays_a_list_of_matchups_exactly_once():
    # 3 env copies, 8 matchups: copies that finish their share draw no further matchup.
    from league.sampling import Matchup, MatchupBatch

    policies = {"a": RandomPolicyFactory(), "b": RandomPolicyFactory(), "c": RandomPolicyFactory()}
    sampler = Sampler("tictactoe", policies=policies, frozen=tuple(policies), matchups=OpponentSampling("a", {"b": 1.0}), num_envs=3)
    pairs = [("a", "b"), ("b", "a"), ("a", "c"), ("c", "a"), ("b", "c"), ("c", "b"), ("a", "a"), ("c", "c")]
    batch = MatchupBatch([Matchup({"player_1": x, "player_2": y}, frozenset()) for x, y in pairs])
    episodes = sampler.evaluate(len(pairs), batch)
    assert len(episodes) == len(pairs) and batch.wraps == 0
    played = sorted((e["policies"]["player_1"], e["policies"]["player_2"]) for e in episodes)
    assert played == sorted(pairs)


# Learner threads while the samplers sample ------------------------------------------------
def test_updates_that_overlap_sampling_get_the_while_sampling_thread_count():
    # The PPO+DQN mix on connect four ran at 0.72x its PPO-only twin with both policies' updates
    # on the env file's two threads: DQN trains while the two samplers hold both cores.
    from league.run.build import make_algorithms, update_threads

    spec = make_env("tictactoe").spec("player_1")
    learner = {"num_threads": 2, "num_threads_while_sampling": 1}
    mixed = tiny_run_config(sampler={"mode": "auto", "remote": True}, learner=learner,
                            policies={"p": {"algo": "ppo"}, "d": {"algo": "dqn"}})  # fmt: skip
    assert update_threads(mixed, make_algorithms(mixed, spec, ["p", "d"])) == {"p": 2, "d": 1}
    dqn = tiny_run_config(algo={"name": "dqn", "params": {}}, sampler={"mode": "auto", "remote": True}, learner=learner)
    assert update_threads(dqn, make_algorithms(dqn, spec, ["main"])) == {"main": 1}  # async: all overlap
    ppo_async = tiny_run_config(sampler={"mode": "async", "remote": True}, learner=learner)
    assert update_threads(ppo_async, make_algorithms(ppo_async, spec, ["main"])) == {"main": 1}
    in_process = tiny_run_config(sampler={"mode": "auto", "remote": False}, learner=learner,
                                 policies={"p": {"algo": "ppo"}, "d": {"algo": "dqn"}})  # fmt: skip
    assert update_threads(in_process, make_algorithms(in_process, spec, ["p", "d"])) == {"p": 2, "d": 2}  # nothing overlaps
    unset = tiny_run_config(sampler={"mode": "auto", "remote": True}, learner={"num_threads": 2},
                            policies={"p": {"algo": "ppo"}, "d": {"algo": "dqn"}})  # fmt: skip
    assert update_threads(unset, make_algorithms(unset, spec, ["p", "d"])) == {"p": 2, "d": 2}


def _ppo_rows(rows: int) -> Any:
    import numpy as np

    from league.batch import Columns as C
    from league.batch import SampleBatch

    rng = np.random.default_rng(0)
    return SampleBatch({
        C.OBS: (rng.random((rows, 6, 7, 2)) < 0.3).astype(np.float32), C.ACTIONS: np.full(rows, 3, np.int64),
        C.ACTION_MASK: np.ones((rows, 7), np.float32), C.ACTION_LOGP: np.full(rows, np.log(1 / 7), np.float32),
        C.VF_PREDS: np.zeros(rows, np.float32), C.ADVANTAGES: rng.normal(size=rows).astype(np.float32),
        C.VALUE_TARGETS: rng.normal(size=rows).astype(np.float32),
    })  # fmt: skip


def test_a_policy_updates_with_its_own_thread_count_and_puts_the_process_count_back():
    import torch

    from league.batch import MultiAgentBatch

    seen: dict[str, int] = {}
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        learner = Learner()
        for pid, threads in (("two", 2), ("own", None)):
            algo = make_algorithm("ppo", _spec(), {"model": "mlp", "minibatch_size": 8, "num_epochs": 1})
            real = algo.learn
            algo.learn = lambda state, rows, pid=pid, real=real: (seen.__setitem__(pid, torch.get_num_threads()), real(state, rows))[1]
            learner.add_policy(pid, algo, num_threads=threads)
        for pid in ("two", "own"):
            learner.learn_on_batch(MultiAgentBatch({pid: _ppo_rows(16)}, 16))
            assert torch.get_num_threads() == 1
        assert seen == {"two": 2, "own": 1}
        with pytest.raises(ValueError, match="num_threads must be an integer >= 1"):
            learner.add_policy("bad", make_algorithm("ppo", _spec(), {}), num_threads=0)
    finally:
        torch.set_num_threads(before)


def test_learner_config_checks_the_while_sampling_thread_count():
    from league.learn.placement import LearnerConfig

    assert LearnerConfig(num_threads_while_sampling=None).num_threads_while_sampling is None
    for bad in (0, 1.5, True):
        with pytest.raises(ValueError, match="num_threads_while_sampling must be an integer >= 1"):
            LearnerConfig(num_threads_while_sampling=bad)
