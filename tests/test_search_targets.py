"""Search as a policy-improvement target of PPO (issue 37, league/search/targets.py): off costs
nothing, on the policy still acts from its own distribution and records a Gumbel search's
improved policy, the loss fits it on the rows that have one, league-train runs it, and an env
that cannot hand states is a config error naming the key."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from league.algos import PPO
from league.algos.actor_critic import SEARCH_POLICY, search_cross_entropy
from league.algos.torch_policy import ActorCriticPolicy
from league.cli.train import run_job
from league.envs.boards import BoardBatchedEnv
from league.search.targets import SearchTargetPolicy
from tests.run_helpers import composed_values

SMALL = {"train_batch_size": 64, "minibatch_size": 32, "num_epochs": 1, "model": "mlp"}


def _spec():
    return BoardBatchedEnv("tictactoe", 1).agent_spec


def _minibatch(algo: PPO, n: int = 16, with_targets: bool = True) -> dict[str, torch.Tensor]:
    rng = np.random.default_rng(0)
    mask = torch.from_numpy((rng.random((n, 9)) < 0.7).astype(np.int8))
    mask[:, 4] = 1
    target = torch.rand(n, 9) * mask
    target = target / target.sum(dim=1, keepdim=True)
    target[: n // 2] = 0  # rows without a search
    mb = {
        "obs": torch.from_numpy(rng.integers(0, 2, size=(n, 3, 3, 2)).astype(np.float32)), "action_mask": mask,
        "actions": torch.full((n,), 4), "action_logp": torch.full((n,), -2.0), "vf_preds": torch.zeros(n),
        "advantages": torch.randn(n), "value_targets": torch.randn(n),
    }  # fmt: skip
    if with_targets:
        mb[SEARCH_POLICY] = target
    algo.prepare(algo.make_model(), mb)
    return mb


def test_off_by_default_and_then_free_no_states_no_column_no_term():
    algo = PPO(_spec(), SMALL)
    assert algo.config.search_simulations == 0 and SEARCH_POLICY not in algo.inputs
    policy = algo.make_policy(seed=0)
    assert type(policy) is ActorCriticPolicy and not policy.needs_states  # the runner reads no state for it
    loss, stats = algo.loss(algo.make_model(), _minibatch(algo, with_targets=False))  # no column needed
    assert "search_loss" not in stats and torch.isfinite(loss)


def test_on_the_policy_acts_as_ppo_and_records_the_improved_policy():
    env = BoardBatchedEnv("tictactoe", 6, seed=0)
    algo = PPO(env.agent_spec, {**SMALL, "search_simulations": 8})
    policy = algo.make_policy(seed=3)
    assert isinstance(policy, SearchTargetPolicy) and policy.needs_states
    plain = ActorCriticPolicy(algo.make_model(), algo.dist, seed=3)
    plain.set_weights(policy.get_weights())
    bs = env.reset(seed=0)
    for _ in range(3):
        states = env.simulator_states(bs.env_index)
        out = policy.compute_actions_at(states, bs.obs, bs.masks, explore=True)
        ref = plain.compute_actions(bs.obs, bs.masks, explore=True)
        # The same actions, log-probabilities and values as PPO's own policy: on-policy rows.
        for key in ("actions", "action_logp", "vf_preds"):
            assert np.array_equal(out[key], ref[key]), key
        target = out[SEARCH_POLICY]
        assert np.allclose(target.sum(axis=1), 1.0, atol=1e-6) and (target[bs.masks == 0] == 0).all()
        bs = env.step(out["actions"])
    # Evaluation (greedy) and rows without states: no search, an all-zero column.
    assert not policy.compute_actions_at(states, bs.obs, bs.masks, explore=False)[SEARCH_POLICY].any()
    assert not policy.compute_actions(bs.obs, bs.masks)[SEARCH_POLICY].any()
    # Snapshots do not search.
    assert type(algo.make_policy(learns=False)) is ActorCriticPolicy


def test_the_loss_adds_the_cross_entropy_on_rows_that_have_a_target():
    on = PPO(_spec(), {**SMALL, "search_simulations": 4, "search_coef": 2.0})
    off = PPO(_spec(), SMALL)
    model = on.make_model()
    mb = _minibatch(on)
    loss_on, stats = on.loss(model, mb)
    loss_off, _ = off.loss(model, mb)
    logits, _ = model(mb["obs"])
    logp = torch.log_softmax(logits.masked_fill(mb["action_mask"] == 0, -1e9), dim=-1)
    rows = mb[SEARCH_POLICY].sum(dim=1) > 0
    expected = -(mb[SEARCH_POLICY][rows] * logp[rows]).sum(dim=1).mean()
    assert torch.allclose(stats["search_loss"], expected, atol=1e-5)
    assert torch.allclose(loss_on, loss_off + 2.0 * expected, atol=1e-5)
    assert float(search_cross_entropy(logits.detach(), mb["action_mask"], torch.zeros_like(logits))) == 0.0


def _values(*overrides: str, **extra: Any) -> dict[str, Any]:
    values = composed_values("algo=ppo", "env=tictactoe", *overrides)
    values["algo"]["params"].update(SMALL)
    values.update(
        sampler={**values["sampler"], "num_samplers": 1, "num_envs": 8, "fragment_length": 8, "remote": False, "mode": "bulk_sync"},
        iteration={"min_env_steps": 64, "min_time_s": 0}, stop={**values["stop"], "iterations": 4, "time_s": 0, "env_steps": 0},
        eval={**values["eval"], "interval": 2, "episodes": 4}, logging={**values["logging"], "tensorboard": False, "progress": False},
        preset="none",
    )  # fmt: skip
    values.update(extra)
    return values


def test_ppo_with_a_search_target_trains_through_league_train(tmp_path: Path):
    from league.config import parse_run_config
    from league.trainer import Trainer

    trainer = Trainer(parse_run_config(_values("algo.params.search_simulations=4")), tmp_path / "run")
    try:
        summary = trainer.train()
    finally:
        trainer.close()
    assert summary["iterations"] == 4
    rows = [r for r in trainer.history if "main/search_loss" in r]
    assert rows and all(np.isfinite(r["main/search_loss"]) and r["main/search_loss"] > 0 for r in rows)
    # And through the CLI's entry (run_job), off: no search statistic.
    summary = run_job(_values(), str(tmp_path / "plain"))
    assert summary["iterations"] == 4


@pytest.mark.parametrize("overrides", [
    ["env=simple_spread"], ["env=tictactoe", "env.backend=pettingzoo"],
])  # fmt: skip
def test_a_search_target_on_an_env_that_cannot_be_searched_is_a_config_error(overrides, tmp_path, capsys):
    values = composed_values("algo=ppo", "algo.params.search_simulations=4", *overrides)
    with pytest.raises(SystemExit) as exit_info:
        run_job(values, str(tmp_path))
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "algo.params.search_simulations" in err and "cannot hand a search its game states" in err, err
    with pytest.raises(ValueError, match="search_simulations"):
        PPO(_spec(), {"search_simulations": -1})


def test_the_stacked_update_with_a_search_target_equals_the_one_by_one_update():
    from league.batch import MultiAgentBatch
    from league.learn import Learner
    from tests.test_learner import BOARD, max_diff, ppo_batch

    batches = {}
    for i in range(2):
        batch = ppo_batch(BOARD, 32, i)
        target = np.random.default_rng(i).random((32, 9)).astype(np.float32) * batch["action_mask"]
        target[:8] = 0  # rows without a search
        batch[SEARCH_POLICY] = target / np.maximum(target.sum(axis=1, keepdims=True), 1e-9)
        batches[f"p{i}"] = batch
    results = {}
    for stack in (False, True):
        learner = Learner(seed=2, stack_same_shaped=stack)
        for i, lr in enumerate((1e-3, 3e-4)):
            learner.add_policy(f"p{i}", PPO(BOARD, {**SMALL, "lr": lr, "search_simulations": 4, "minibatch_size": 16}))
        stats = learner.learn_on_batch(MultiAgentBatch(batches, 32))
        results[stack] = (learner.get_weights(), stats)
    assert max_diff(results[False][0], results[True][0]) < 1e-5
    for pid in batches:
        assert results[True][1][pid]["search_loss"] == pytest.approx(results[False][1][pid]["search_loss"], rel=1e-4)
