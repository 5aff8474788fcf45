"""The learner on CUDA: many policies on one GPU, the batch moved once, results equal to CPU.

Every test here is marked ``gpu`` and skipped (with the reason) where CUDA is absent.
"""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch

from league.algos import PPO
from league.algos import ppo_stacked
from league.algos.ppo import PPO
from league.batch import Columns as C
from league.batch import MultiAgentBatch, SampleBatch
from league.envs.base import AgentSpec
from league.learn import Learner

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA (torch.cuda.is_available() is False)"),
]

BOARD = AgentSpec(obs_shape=(6, 7, 2), num_actions=7, has_action_mask=True)


def ppo_batch(rows: int, seed: int) -> SampleBatch:
    rng = np.random.default_rng(seed)
    mask = (rng.random((rows, 7)) < 0.7).astype(np.float32)
    mask[:, 3] = 1.0
    return SampleBatch(
        {
            C.OBS: (rng.random((rows, 6, 7, 2)) < 0.3).astype(np.float32),
            C.ACTIONS: np.full(rows, 3, np.int64),
            C.ACTION_MASK: mask,
            C.ACTION_LOGP: np.log(1.0 / mask.sum(1)).astype(np.float32),
            C.VF_PREDS: rng.normal(size=rows).astype(np.float32),
            C.ADVANTAGES: rng.normal(size=rows).astype(np.float32),
            C.VALUE_TARGETS: rng.normal(size=rows).astype(np.float32),
        }
    )


def _policies() -> dict[str, PPO]:
    """Four stackable policies (two models, different lr) plus one plain PPO (the stream path)."""
    out: dict[str, PPO] = {}
    for i in range(4):
        model = "mlp" if i % 2 else "conv"
        out[f"p{i}"] = PPO(BOARD, {"model": model, "minibatch_size": 64, "num_epochs": 1, "lr": 1e-3 * (1 + i // 2)})
    out["plain"] = PPO(BOARD, {"model": "mlp", "minibatch_size": 64, "num_epochs": 1})
    return out


def _run(device: str, batch: MultiAgentBatch) -> tuple[dict, dict]:
    learner = Learner(device, seed=5)
    for pid, algo in _policies().items():
        learner.add_policy(pid, algo)
    learner.add_policy("frozen", PPO(BOARD, {"model": "mlp"}), frozen=True)
    stats = learner.learn_on_batch(batch)
    weights = learner.get_weights()
    learner.close()
    return weights, stats


def test_many_policies_on_cuda_match_cpu(monkeypatch):
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", False)  # compare float32 with float32
    batch = MultiAgentBatch({pid: ppo_batch(128, i) for i, pid in enumerate([*_policies(), "frozen"])}, 128)
    cpu_weights, cpu_stats = _run("cpu", batch)
    gpu_weights, gpu_stats = _run("cuda", batch)
    assert set(gpu_stats) == set(_policies())
    for pid, weights in cpu_weights.items():
        for key, value in weights.items():
            np.testing.assert_allclose(gpu_weights[pid][key], value, rtol=1e-4, atol=1e-4, err_msg=f"{pid}.{key}")
    for pid in cpu_stats:
        assert gpu_stats[pid]["total_loss"] == pytest.approx(cpu_stats[pid]["total_loss"], rel=1e-3, abs=1e-4)


def test_stacked_group_moves_its_batch_to_the_gpu_once(monkeypatch):
    calls = []
    real = ppo_stacked.stack_columns

    def counting(batches, names, device):
        out = real(batches, names, device)
        calls.append((len(batches), {t.device.type for t in out.values()}))
        return out

    monkeypatch.setattr(ppo_stacked, "stack_columns", counting)
    learner = Learner("cuda", seed=0)
    for i in range(4):
        learner.add_policy(f"p{i}", PPO(BOARD, {"model": "conv", "minibatch_size": 32, "num_epochs": 3}))
    learner.learn_on_batch(MultiAgentBatch({f"p{i}": ppo_batch(96, i) for i in range(4)}, 96))
    # One upload for the whole group, however many epochs and minibatches follow.
    assert calls == [(4, {"cuda"})]
    # The models stay on the GPU: their saved state (torch.save keeps each tensor's device) is CUDA's.
    states = [torch.load(io.BytesIO(learner.get_state(pid)), weights_only=True)["model"] for pid in learner.policy_ids()]
    assert all(t.is_cuda for state in states for t in state.values())


def _board_batch(rows: int, seed: int) -> SampleBatch:
    """A PPO batch of real connect-four positions (random games), random targets."""
    from league.population.yardstick import random_play_positions

    rng = np.random.default_rng(seed)
    obs, mask = random_play_positions("connect_four", rows // 10 + 1, seed=seed)
    obs, mask = obs[:rows], mask[:rows].astype(np.float32)
    return SampleBatch(
        {
            C.OBS: obs,
            C.ACTIONS: np.array([rng.choice(np.flatnonzero(m)) for m in mask], dtype=np.int64),
            C.ACTION_MASK: mask,
            C.ACTION_LOGP: np.log(1.0 / mask.sum(1)).astype(np.float32),
            C.VF_PREDS: rng.normal(size=len(obs)).astype(np.float32),
            C.ADVANTAGES: rng.normal(size=len(obs)).astype(np.float32),
            C.VALUE_TARGETS: rng.normal(size=len(obs)).astype(np.float32),
        }
    )


@pytest.mark.parametrize("depth", [2, 4])
def test_the_default_jobs_planes_and_search_on_cuda_match_cpu(monkeypatch, depth):
    """Threat planes (the torch reading on CUDA, C++ on CPU) and the distilled search (depth 4,
    the connect_four preset's: C++, the rows moved to the host and back; depth 2: the torch
    two-ply reading on the model's device) give the default job's update the same result on both."""
    import torch.backends.cuda

    from league.algos import make_algorithm
    from league.cli.train import composed_values
    from league.games.connect_four.rules import RULES
    from league.games.k_in_a_row import threat_planes

    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", False)
    monkeypatch.setattr(torch.backends.cuda.matmul, "allow_tf32", False)
    batch = _board_batch(600, seed=3)
    obs = torch.from_numpy(batch[C.OBS])
    assert torch.equal(threat_planes(obs.cuda(), RULES).cpu(), threat_planes(obs, RULES))
    params = composed_values()["algo"]["params"]
    assert params["model_kwargs"]["input_features"] == "connect_four_threats"
    assert params["aux_loss"] == "connect_four_search" and params["aux_loss_kwargs"] == {"depth": 4}
    params = {**params, "aux_loss_kwargs": {"depth": depth}}
    results = {}
    for device in ("cpu", "cuda"):
        learner = Learner(device, seed=5)
        learner.add_policy("main", make_algorithm("ppo", BOARD, params))
        stats = learner.learn_on_batch(MultiAgentBatch({"main": batch}, len(obs)))
        results[device] = (learner.get_weights()["main"], stats["main"])
        learner.close()
    (cpu_weights, cpu_stats), (gpu_weights, gpu_stats) = results["cpu"], results["cuda"]
    for key, value in cpu_weights.items():
        np.testing.assert_allclose(gpu_weights[key], value, rtol=1e-3, atol=1e-3, err_msg=key)
    assert gpu_stats["aux_loss"] == pytest.approx(cpu_stats["aux_loss"], rel=1e-3, abs=1e-4)
