"""Data-parallel learning: sharding, and 2 gloo replicas matching one learner on the whole batch."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import torch
import torch.multiprocessing as mp

from league.learn.algorithm import PolicyState, batch_to_tensors
from league.algos.ppo import PPO
from league.batch import Columns as C
from league.batch import MultiAgentBatch, SampleBatch
from league.envs.base import AgentSpec
from league.learn import DataParallelLearner, Learner, shard_batch

SPEC = AgentSpec(obs_shape=(5,), num_actions=4, has_action_mask=True)
ROWS = 64
# One epoch, one minibatch of the whole (shard of the) batch, per-row loss terms only
# (no advantage standardisation): the single learner's step and the replicas' averaged
# step then follow the same gradient.
CONFIG = {"model": "mlp", "model_kwargs": {"hidden": [32]}, "num_epochs": 1, "minibatch_size": ROWS, "standardize_advantages": False, "lr": 1e-2}


def make_batch(rows: int = ROWS, seed: int = 0) -> MultiAgentBatch:
    rng = np.random.default_rng(seed)
    mask = np.ones((rows, SPEC.num_actions), np.float32)
    mask[:, 3] = rng.random(rows) < 0.5
    columns = {
        C.OBS: rng.normal(size=(rows, *SPEC.obs_shape)).astype(np.float32),
        C.ACTIONS: rng.integers(0, 3, rows).astype(np.int64),
        C.ACTION_MASK: mask,
        C.ACTION_LOGP: np.full(rows, -1.3, np.float32),
        C.VF_PREDS: rng.normal(size=rows).astype(np.float32),
        C.ADVANTAGES: rng.normal(size=rows).astype(np.float32),
        C.VALUE_TARGETS: rng.normal(size=rows).astype(np.float32),
    }
    return MultiAgentBatch({"big": SampleBatch(columns)}, rows)


class GradPPO(PPO):
    """PPO plus compute_gradients: the gradient of the loss on the whole given batch."""

    def compute_gradients(self, state: PolicyState, batch: SampleBatch):
        t = batch_to_tensors(batch, list(batch.keys()), torch.device("cpu"))
        loss, stats = self.loss(state.model, t)
        state.model.zero_grad()
        loss.backward()
        return [p.grad.detach().clone().numpy() for p in state.model.parameters()], stats


def test_shard_batch_equal_contiguous_shards():
    rows = SampleBatch({"x": np.arange(11)})
    shards = shard_batch(MultiAgentBatch({"p": rows, "q": rows[:2]}, 7), 3)
    assert [s["p"]["x"].tolist() for s in shards] == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    assert [len(s["q"]) for s in shards] == [0, 0, 0]
    assert [s.env_steps for s in shards] == [3, 2, 2]
    with pytest.raises(ValueError, match="num_shards must be an integer >= 1"):
        shard_batch(MultiAgentBatch({}, 0), 0)


def _replica(rank: int, world_size: int, init_method: str, results: dict) -> None:
    torch.set_num_threads(1)
    # Different seeds: rank 0's initial weights must win. A short timeout: if the other
    # process died, fail in seconds instead of hanging.
    learner = DataParallelLearner(rank, world_size, init_method, seed=rank, timeout_s=60)
    try:
        learner.add_policy("big", GradPPO(SPEC, CONFIG))
        initial = learner.get_weights()["big"]
        shard = shard_batch(make_batch(), world_size)[rank]
        local = Learner(seed=rank)
        local.add_policy("big", GradPPO(SPEC, CONFIG), weights=initial)
        shard_only = local.compute_gradients(shard)["big"]  # this replica's gradient before averaging
        averaged = learner.compute_gradients(shard)["big"]
        learner.learn_on_batch(shard)
        results[rank] = {"initial": initial, "shard_only": shard_only, "averaged": averaged, "after": learner.get_weights()["big"]}
    finally:
        learner.close()


def _rank_one(_: int, init_method: str, out_path: str) -> None:
    """Entry point of the spawned process (``mp.spawn`` passes the process index first)."""
    results: dict = {}
    _replica(1, 2, init_method, results)
    with open(out_path, "wb") as f:
        pickle.dump(results, f)


def test_two_gloo_replicas_match_one_learner_on_the_whole_batch(tmp_path):
    # Rank 1 runs in a spawned process, rank 0 here: one fresh interpreter instead of two.
    init_method, out_path = f"file://{tmp_path / 'rendezvous'}", str(tmp_path / "rank1.pkl")
    child = mp.spawn(_rank_one, args=(init_method, out_path), nprocs=1, join=False)
    results: dict = {}
    try:
        _replica(0, 2, init_method, results)
    finally:
        child.join()
    with open(out_path, "rb") as f:
        results.update(pickle.load(f))
    r0, r1 = results[0], results[1]
    for key in r0["initial"]:
        np.testing.assert_array_equal(r0["initial"][key], r1["initial"][key])

    single = Learner()
    single.add_policy("big", GradPPO(SPEC, CONFIG), weights=r0["initial"])
    whole = single.compute_gradients(make_batch())["big"]
    single.learn_on_batch(make_batch())
    for g_whole, g0, g1, own0 in zip(whole, r0["averaged"], r1["averaged"], r0["shard_only"]):
        np.testing.assert_allclose(g0, g1, rtol=0, atol=0)  # every replica holds the same average
        np.testing.assert_allclose(g0, g_whole, rtol=1e-5, atol=1e-6)
    assert max(np.abs(own - g).max() for own, g in zip(r0["shard_only"], whole)) > 1e-3  # averaging mattered
    for key, value in single.get_weights()["big"].items():
        np.testing.assert_array_equal(r0["after"][key], r1["after"][key])  # replicas stay identical
        np.testing.assert_allclose(r0["after"][key], value, rtol=1e-5, atol=1e-6)


@pytest.mark.ray
def test_data_parallel_group_of_ray_actors(ray_session):
    from league.algos.ppo import PPO  # importable by Ray workers
    from league.learn import DataParallelGroup

    group = DataParallelGroup(2, num_cpus=0)
    try:
        group.add_policy("big", PPO(SPEC, CONFIG))
        initial = group.get_weights()
        stats = group.learn_on_batch(make_batch())
        assert set(stats) == {"big"} and np.isfinite(stats["big"]["total_loss"])
        single = Learner()
        single.add_policy("big", PPO(SPEC, CONFIG), weights=initial["big"])
        single.learn_on_batch(make_batch())
        for key, value in single.get_weights()["big"].items():
            np.testing.assert_allclose(group.get_weights()["big"][key], value, rtol=1e-5, atol=1e-6)
    finally:
        group.close()


def test_data_parallel_group_refuses_an_unknown_precision_before_starting_actors():
    from league.learn import DataParallelGroup

    with pytest.raises(ValueError, match=r"precision must be one of \['fp32', 'bf16'\], got 'fp8'"):
        DataParallelGroup(2, precision="fp8")


@pytest.mark.ray
def test_data_parallel_group_updates_in_bf16(ray_session):
    # learner.precision reaches every replica: the group's bf16 update lands near a single
    # fp32 learner's, but not on it (bf16 rounding), and the weights stay fp32.
    from league.algos.ppo import PPO
    from league.learn import DataParallelGroup

    group = DataParallelGroup(2, num_cpus=0, precision="bf16")
    try:
        assert group.precision == "bf16"
        group.add_policy("big", PPO(SPEC, CONFIG))
        initial = group.get_weights()
        stats = group.learn_on_batch(make_batch())
        assert np.isfinite(stats["big"]["total_loss"])
        single = Learner()
        single.add_policy("big", PPO(SPEC, CONFIG), weights=initial["big"])
        single.learn_on_batch(make_batch())
        after = group.get_weights()["big"]
        params = {key: value for key, value in single.get_weights()["big"].items() if key != "weights_version"}
        gaps = [np.abs(after[key] - value).max() for key, value in params.items()]
        assert all(after[key].dtype == np.float32 for key in params)
        assert 0 < max(gaps) < 0.05, gaps
    finally:
        group.close()
