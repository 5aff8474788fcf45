"""minibatch_sgd: each epoch's rows in the learner rng's order, statistics averaged over the steps."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from league.algos.sgd import minibatch_bounds, minibatch_sgd
from league.learn.algorithm import PolicyState


def _state(seed: int) -> PolicyState:
    torch.manual_seed(0)
    model = nn.Linear(1, 1)
    return PolicyState(model=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.0), rng=np.random.default_rng(seed))


def test_every_step_sees_the_rngs_permutation_and_the_statistics_are_their_means():
    rows, epochs, size = 10, 3, 4
    seen: list[list[int]] = []

    def loss_fn(model, mb):
        ids = mb["id"]
        seen.append(ids.tolist())
        loss = (model(ids.float().unsqueeze(1)) ** 2).mean()
        return loss, {"first_id": ids[0].float(), "rows": float(len(ids))}  # a tensor and a float

    out = minibatch_sgd(loss_fn, _state(7), {"id": torch.arange(rows)}, rows, epochs, size, 1e9, "test")
    rng = np.random.default_rng(7)
    expected = [perm[a:b].tolist() for perm in (rng.permutation(rows) for _ in range(epochs)) for a, b in minibatch_bounds(rows, size)]
    assert seen == expected
    assert out["num_sgd_updates"] == len(expected) == 9  # three minibatches (4, 4, 2 rows) an epoch
    assert out["first_id"] == pytest.approx(np.mean([ids[0] for ids in expected]))
    assert out["rows"] == pytest.approx(np.mean([len(ids) for ids in expected]))
    assert out["grad_norm"] > 0 and all(isinstance(v, float) for v in out.values())


def test_a_non_finite_loss_is_named():
    def loss_fn(model, mb):
        loss = model(mb["x"]).mean()
        return loss, {"total_loss": torch.tensor(float("nan"))}

    with pytest.raises(FloatingPointError, match="test loss became non-finite"):
        minibatch_sgd(loss_fn, _state(0), {"x": torch.ones(4, 1)}, 4, 1, 4, 1.0, "test")
