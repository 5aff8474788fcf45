"""Resuming a run from a checkpoint: learner state, league, counters; refusals before anything runs.

What a resume restores exactly is tested here on the in-process trainer
(``sampler.remote: false``: no Ray, fully deterministic). Episodes in flight on samplers
are not checkpointed, so a resumed run's data is not the uninterrupted run's (see
league/trainer.py); what must be exact is the learner (its next update on the same batch),
the league and the counters, and a resume must be reproducible.
"""

from __future__ import annotations

import hashlib
import io
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import torch

from league.algos import make_algorithm
from league.checkpoint import CheckpointError, read_checkpoint
from league.envs import make_env
from league.learn import Learner
from league.sampling import Sampler, UniformMatchups
from league.trainer import MAIN, Trainer
from run_helpers import tiny_run_config as _config


def _train(cfg, run_dir: Path) -> Trainer:
    trainer = Trainer(cfg, run_dir)
    try:
        trainer.train()
    finally:
        trainer.close()
    return trainer


def _tensors(state: bytes) -> dict:
    return torch.load(io.BytesIO(state), weights_only=True)


def _assert_same_weights(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for k in a:
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)


def _tree_hashes(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*")) if p.is_file()}


# Learner state ------------------------------------------------------------------
def _batches(algo, learner: Learner, n: int) -> list:
    sampler = Sampler("tictactoe", policies={MAIN: algo}, matchups=UniformMatchups([MAIN]), num_envs=4, fragment_length=24, seed=1)
    sampler.set_weights(learner.get_weights())
    return [sampler.sample() for _ in range(n)]


def test_restored_learner_makes_the_identical_next_update():
    spec = make_env("tictactoe").spec("player_1")
    # Small minibatches: the update depends on the shuffling RNG, not just weights and Adam.
    algo = make_algorithm("ppo", spec, {"train_batch_size": 32, "minibatch_size": 16, "num_epochs": 2})
    original = Learner(seed=0)
    original.add_policy(MAIN, algo)
    first, second = _batches(algo, original, 2)
    original.learn_on_batch(first)
    state = original.get_state(MAIN)

    restored = Learner(seed=123)  # another seed: everything must come from the state
    restored.add_policy(MAIN, algo)
    restored.set_state(MAIN, state)
    weights_only = Learner(seed=123)  # control: weights alone are not enough
    weights_only.add_policy(MAIN, algo)
    weights_only.set_weights(original.get_weights())

    for learner in (original, restored, weights_only):
        learner.learn_on_batch(second)
    _assert_same_weights(restored.get_weights()[MAIN], original.get_weights()[MAIN])
    assert _tensors(restored.get_state(MAIN))["num_updates"] == 2
    differs = any(
        not np.array_equal(a, b) for a, b in zip(weights_only.get_weights()[MAIN].values(), original.get_weights()[MAIN].values())
    )
    assert differs


def test_learner_state_carries_the_target_network():
    spec = make_env("tictactoe").spec("player_1")
    algo = make_algorithm("dqn", spec, {"model": "mlp", "dueling": False})
    original = Learner(seed=0)
    original.add_policy(MAIN, algo)
    # Online weights move away from the target, which keeps the old ones.
    original.set_weights({MAIN: {k: v + 1.0 for k, v in original.get_weights()[MAIN].items()}})
    saved = _tensors(original.get_state(MAIN))
    assert saved["extra"]["target_model"].keys() == saved["model"].keys()

    restored = Learner(seed=5)
    restored.add_policy(MAIN, algo)
    restored.set_state(MAIN, original.get_state(MAIN))
    again = _tensors(restored.get_state(MAIN))
    for k, v in saved["extra"]["target_model"].items():
        torch.testing.assert_close(again["extra"]["target_model"][k], v, rtol=0, atol=0)
        assert not torch.equal(again["model"][k], v)


# Trainer resume -----------------------------------------------------------------
@pytest.fixture(scope="module")
def first_part(tmp_path_factory) -> tuple[Trainer, Path]:
    run_dir = tmp_path_factory.mktemp("first")
    return _train(_config(), run_dir), run_dir


def test_resume_restores_league_learner_and_counters(first_part, tmp_path):
    first, first_dir = first_part
    ckpt = read_checkpoint(first_dir / "checkpoints" / "final")
    assert ckpt.iteration == 2 and sorted(p.name for p in (first_dir / "checkpoints").iterdir()) == [
        "final", "iter_00000001", "iter_00000002"
    ]

    trainer = Trainer(_config(resume=str(first_dir), stop={"iterations": 4}), tmp_path / "setup_only")
    try:
        trainer.setup()
        assert trainer.resumed_from == first_dir / "checkpoints" / "final"
        assert (trainer.iteration, trainer.env_steps) == (2, first.env_steps)
        assert trainer.plan.metrics.counters["num_env_steps_sampled"] == first.env_steps
        assert [s.policy_id for s in trainer.pool.snapshots] == ["main@v1", "main@v2"]
        assert trainer.payoff.to_dict() == first.payoff.to_dict() and first.payoff.players()
        assert trainer.win_rates == first.win_rates
        restored, saved = _tensors(trainer.learner.get_state(MAIN)), _tensors(ckpt.learner_states[MAIN])
        assert restored["num_updates"] == saved["num_updates"] > 0 and restored["rng"] == saved["rng"]
        for k, v in saved["model"].items():
            assert torch.equal(restored["model"][k], v)
        assert restored["optimizer"]["state"].keys() == saved["optimizer"]["state"].keys()
        sampler = trainer.samplers[0]
        assert set(sampler.policy_ids()) == {MAIN, "random", "main@v1", "main@v2"}
        _assert_same_weights(sampler.get_weights([MAIN])[MAIN], ckpt.policies[MAIN])
        _assert_same_weights(sampler.get_weights(["main@v1"])["main@v1"], ckpt.policies["main@v1"])
    finally:
        trainer.close()
    assert not (tmp_path / "setup_only").exists()  # setup alone writes nothing


def test_resumed_run_continues_and_is_reproducible(first_part, tmp_path):
    first, first_dir = first_part
    before = _tree_hashes(first_dir / "checkpoints")
    runs = [_train(_config(resume=str(first_dir), stop={"iterations": 4}), tmp_path / name) for name in ("b", "c")]
    b, c = runs
    assert b.iteration == 4 and b.env_steps > first.env_steps
    rows = [json.loads(line) for line in (tmp_path / "b" / "metrics.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in rows] == [3, 4] and rows[0]["env_steps"] > first.env_steps
    assert [s.policy_id for s in b.pool.snapshots] == ["main@v2", "main@v3", "main@v4"]  # max_snapshots 3
    summary = json.loads((tmp_path / "b" / "summary.json").read_text())
    assert summary["resumed_from"] == str(first_dir / "checkpoints" / "final") and summary["start_iteration"] == 2
    assert read_checkpoint(tmp_path / "b" / "checkpoints" / "final").iteration == 4
    # The same checkpoint, resumed twice: the same run.
    _assert_same_weights(b.learner.get_weights()[MAIN], c.learner.get_weights()[MAIN])
    assert b.payoff.to_dict() == c.payoff.to_dict() and b.env_steps == c.env_steps
    assert _tree_hashes(first_dir / "checkpoints") == before  # the resumed-from run is untouched


def test_multi_policy_run_resumes_both_learners_and_the_payoff(tmp_path):
    small = {"train_batch_size": 32, "minibatch_size": 32, "num_epochs": 1}
    policies = {"a": {"algo": "ppo", "params": small}, "b": {"algo": "ppo", "params": {**small, "lr": 1e-3}}}
    first = _train(_config(policies=policies, eval={"interval": 0}), tmp_path / "a")
    resumed = Trainer(_config(policies=policies, eval={"interval": 0}, resume=str(tmp_path / "a")), tmp_path / "b")
    try:
        resumed.setup()
        assert resumed.pool is None and resumed.payoff.to_dict() == first.payoff.to_dict()
        for pid in ("a", "b"):
            _assert_same_weights(resumed.learner.get_weights()[pid], first.learner.get_weights()[pid])
    finally:
        resumed.close()


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"env": {"name": "connect_four"}}, r"env 'tictactoe' \{\} != 'connect_four'"),
        ({"algo": {"name": "ppo", "params": {"model_kwargs": {"hidden": 16}}}}, r"policy 'main' model shapes differ"),
        ({"policies": {"x": {"algo": "ppo"}, "y": {"algo": "ppo"}}}, r"learning policies \['main'\] != \['x', 'y'\]"),
    ],
)
def test_incompatible_resume_is_refused_before_anything_is_written(first_part, tmp_path, overrides, message):
    _, first_dir = first_part
    before = _tree_hashes(first_dir)
    trainer = Trainer(_config(resume=str(first_dir), **overrides), tmp_path / "new_run")
    try:
        with pytest.raises(CheckpointError, match=message):
            trainer.train()
    finally:
        trainer.close()
    assert not (tmp_path / "new_run").exists()
    assert _tree_hashes(first_dir) == before


def test_corrupt_resume_checkpoint_is_refused(first_part, tmp_path):
    import shutil

    _, first_dir = first_part
    copy = tmp_path / "copy"
    shutil.copytree(first_dir / "checkpoints" / "final", copy)
    data = (copy / "policies.pt").read_bytes()
    (copy / "policies.pt").write_bytes(data[:-10])
    trainer = Trainer(_config(resume=str(copy)), tmp_path / "new_run")
    with pytest.raises(CheckpointError, match="truncated"):
        trainer.train()
    trainer.close()
    assert not (tmp_path / "new_run").exists()


def test_restarted_sampler_gets_the_league_back(tmp_path):
    """A restarted sampler re-runs __init__ (no snapshots); the trainer's restart hook re-sends them."""
    trainer = _train(_config(), tmp_path)
    snapshots = [s.policy_id for s in trainer.pool.snapshots]
    assert snapshots
    from league.policy import RandomPolicyFactory

    fresh = Sampler(  # what Ray's restart rebuilds: the sampler's constructor arguments only
        "tictactoe",
        policies={MAIN: trainer.algorithms[MAIN], "random": RandomPolicyFactory()},
        frozen=("random",),
        matchups=UniformMatchups([MAIN]),
        num_envs=2,
        fragment_length=16,
    )
    assert not set(snapshots) & set(fresh.policy_ids())
    trainer.restore_league_on(fresh)
    assert set(snapshots) <= set(fresh.policy_ids())
    # Its training episodes now draw opponents as the league does (snapshots, the fixed random
    # member and self-play at the pool's shares), not its constructor's self-play only.
    probs = trainer.pool.opponent_probabilities()
    assert len([p for p in probs if p.startswith(f"{MAIN}@")]) >= 2
    drawn: Counter[str] = Counter()
    for _ in range(400):  # about 1700 episodes
        fresh.sample()
        for ep in fresh.pop_episode_stats():
            drawn[next((p for p in ep["policies"].values() if p != MAIN), MAIN)] += 1
    assert set(drawn) == set(probs), (drawn, probs)
    total = sum(drawn.values())
    for pid, p in probs.items():
        assert abs(drawn[pid] / total - p) < 0.04, (pid, drawn, probs)


def test_resumed_run_repeats_the_uninterrupted_one_with_exact_resume(tmp_path):
    # One in-process sampler, bulk_sync, no evaluation: after each periodic checkpoint the
    # uninterrupted run rebuilds its samplers exactly as a resume does, so the two match.
    settings = dict(eval={"interval": 0}, checkpoint={"interval": 2, "keep_last": 5, "exact_resume": True})
    whole = _train(_config(stop={"iterations": 4}, **settings), tmp_path / "whole")
    _train(_config(stop={"iterations": 2}, **settings), tmp_path / "first")
    periodic = tmp_path / "first" / "checkpoints" / "iter_00000002"
    resumed = _train(_config(stop={"iterations": 4}, resume=str(periodic), **settings), tmp_path / "resumed")
    assert resumed.iteration == whole.iteration == 4 and resumed.env_steps == whole.env_steps
    _assert_same_weights(resumed.learner.get_weights()[MAIN], whole.learner.get_weights()[MAIN])
    assert resumed.payoff.to_dict() == whole.payoff.to_dict()
    rows = {name: [json.loads(line) for line in (tmp_path / name / "metrics.jsonl").read_text().splitlines()] for name in ("whole", "resumed")}
    for key in ("env_steps", "main/policy_loss", "main/vf_loss", "main/entropy"):
        assert [r[key] for r in rows["whole"][2:]] == [r[key] for r in rows["resumed"]], key
    # Episode metrics lag one iteration; the uninterrupted run's first row after the checkpoint
    # also reports the episodes flushed into it, which the resumed run counts in its checkpoint.
    for key in ("episodes", "main/episode_return_mean"):
        assert rows["whole"][3][key] == rows["resumed"][1][key], key


def test_a_train_budget_counts_from_the_resumed_iteration(first_part, tmp_path):
    # train(iterations=N) on a fresh Trainer that resumes: N more than the checkpoint's 2, not N in all.
    _, first_dir = first_part
    trainer = Trainer(_config(resume=str(first_dir)), tmp_path / "more")
    try:
        trainer.train(iterations=1)
        assert trainer.iteration == 3
    finally:
        trainer.close()
