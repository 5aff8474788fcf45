"""league.learn.onednn: a CPU learner's fp32 products in oneDNN only where they stay fp32."""

from __future__ import annotations

import numpy as np
import torch

from league.algos import make_algorithm
from league.batch import MultiAgentBatch
from league.envs.base import AgentSpec
from league.learn import Learner
from league.learn.onednn import MIN_ROWS, fp32_matmuls, onednn_keeps_fp32
from tests.test_learner import SMALL, ppo_batch

BOARD = AgentSpec((6, 7, 2), 7, True)


def test_products_inside_the_block_are_fp32_whatever_the_cpu():
    # 1 + 2**-12 has 13 significant bits: bfloat16 (8) would round it to 1.
    a = torch.full((64, 256), 1 + 2**-12)
    with fp32_matmuls():
        product = a @ torch.ones(256, 32)
    assert torch.equal(product, torch.full((64, 32), 256 * (1 + 2**-12)))
    assert isinstance(onednn_keeps_fp32(), bool)


def test_the_math_mode_is_on_during_a_cpu_fp32_update_only():
    modes = []
    algo = make_algorithm("ppo", BOARD, {**SMALL, "model": "conv", "model_kwargs": {}})
    learn = algo.learn
    algo.learn = lambda state, batch: modes.append(torch.backends.mkldnn.matmul.fp32_precision) or learn(state, batch)
    learner = Learner("cpu", seed=0)
    learner.add_policy("p", algo)
    before = torch.backends.mkldnn.matmul.fp32_precision
    stats = learner.learn_on_batch(MultiAgentBatch({"p": ppo_batch(BOARD, 64, 0)}, 64))["p"]
    assert all(np.isfinite(v) for v in stats.values())
    assert modes == ["bf16" if onednn_keeps_fp32() else before]
    assert torch.backends.mkldnn.matmul.fp32_precision == before  # put back after the update


def test_small_batches_keep_the_default_products():
    # Below MIN_ROWS a product is bound by its call, where MKL's is the cheaper (onednn.MIN_ROWS).
    before = torch.backends.mkldnn.matmul.fp32_precision
    with fp32_matmuls(MIN_ROWS - 1):
        assert torch.backends.mkldnn.matmul.fp32_precision == before
    with fp32_matmuls(MIN_ROWS):
        assert torch.backends.mkldnn.matmul.fp32_precision == ("bf16" if onednn_keeps_fp32() else before)
    assert torch.backends.mkldnn.matmul.fp32_precision == before


def test_a_policy_acts_in_the_mode_its_batch_size_gets():
    from league.algos.torch_policy import ActorCriticPolicy

    seen: list[str] = []

    class Probe(torch.nn.Module):
        def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            seen.append(torch.backends.mkldnn.matmul.fp32_precision)
            return torch.zeros(len(obs), 3), torch.zeros(len(obs))

    policy = ActorCriticPolicy(Probe(), seed=0)
    before = torch.backends.mkldnn.matmul.fp32_precision
    for rows in (8, MIN_ROWS):
        policy.compute_actions(np.zeros((rows, 4), np.float32), np.ones((rows, 3), bool))
    assert seen == [before, "bf16" if onednn_keeps_fp32() else before]
