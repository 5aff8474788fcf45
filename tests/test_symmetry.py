"""Symmetry-averaged models: exact invariance under the board's symmetries, bad shapes refused."""

import numpy as np
import pytest
import torch

from league.algos.models import build_model
from league.algos.symmetry import SymmetrizedModel, symmetry_group
from league.envs import make_env


def _random_position(name: str, plies: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    env = make_env(name)
    ts = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    for _ in range(plies):
        agent = next(iter(ts.obs))
        legal = np.flatnonzero(ts.masks[agent])
        ts = env.step({agent: int(rng.choice(legal))})
        if ts.done:
            ts = env.reset(seed=seed + 1)
    agent = next(iter(ts.obs))
    obs, mask = ts.obs[agent], ts.masks[agent]
    env.close()
    return obs, mask


def _ttt_transform(obs: np.ndarray, k: int, transpose: bool) -> np.ndarray:
    board = obs.transpose(1, 0, 2) if transpose else obs
    return np.rot90(board, k, axes=(0, 1)).copy()


def _assert_d4_invariant(model: torch.nn.Module) -> None:
    """Every rotation and reflection of a tic-tac-toe position: the same value, the logits moved with the cells."""
    obs, _ = _random_position("tictactoe", 3, seed=4)
    cells = np.arange(9).reshape(3, 3)
    logits, value = model(torch.as_tensor(obs[None]))
    for transpose in (False, True):
        for k in range(4):
            moved = _ttt_transform(obs, k, transpose)
            where = _ttt_transform(cells[..., None], k, transpose)[..., 0].reshape(-1)  # original cell now at each cell
            t_logits, t_value = model(torch.as_tensor(moved[None]))
            # the logit of original cell a is the transformed position's logit at the cell a moved to
            torch.testing.assert_close(t_logits[0, np.argsort(where)], logits[0], rtol=1e-5, atol=1e-5)
            torch.testing.assert_close(t_value, value, rtol=1e-5, atol=1e-5)


def test_d4_policy_and_value_are_invariant_on_tictactoe() -> None:
    torch.manual_seed(0)
    model = build_model("mlp", (3, 3, 2), 9, symmetry="d4")
    assert isinstance(model, SymmetrizedModel)
    _assert_d4_invariant(model)


def test_a_plain_model_is_not_invariant() -> None:
    # the check above must be able to fail: without the wrapper a rotation changes the logits
    torch.manual_seed(0)
    model = build_model("mlp", (3, 3, 2), 9)
    obs, _ = _random_position("tictactoe", 3, seed=4)
    logits, _ = model(torch.as_tensor(obs[None]))
    moved = _ttt_transform(obs, 1, False)
    where = _ttt_transform(np.arange(9).reshape(3, 3)[..., None], 1, False)[..., 0].reshape(-1)
    t_logits, _ = model(torch.as_tensor(moved[None]))
    assert not torch.allclose(t_logits[0, np.argsort(where)], logits[0], atol=1e-4)


def test_flip_lr_is_invariant_on_connect_four() -> None:
    torch.manual_seed(0)
    model = build_model("mlp", (6, 7, 2), 7, symmetry="flip_lr")
    obs, _ = _random_position("connect_four", 5, seed=2)
    logits, value = model(torch.as_tensor(obs[None]))
    mirrored = obs[:, ::-1].copy()
    m_logits, m_value = model(torch.as_tensor(mirrored[None]))
    torch.testing.assert_close(m_logits[0].flip(0), logits[0], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(m_value, value, rtol=1e-5, atol=1e-5)


def test_group_maps_are_permutations() -> None:
    obs_src, action_map = symmetry_group("d4", (3, 3, 2), 9)
    assert obs_src.shape == (8, 18) and action_map.shape == (8, 9)
    for row in (*obs_src, *action_map):
        assert sorted(row.tolist()) == list(range(row.size))
    assert len({tuple(r) for r in action_map}) == 8  # eight distinct symmetries


@pytest.mark.parametrize(
    ("kind", "shape", "actions", "match"),
    [
        ("d4", (6, 7, 2), 7, "square"),
        ("flip_lr", (3, 3, 2), 9, "one action per column"),
        ("d4", (18,), 9, r"\[H, W, C\]"),
        ("rot90", (3, 3, 2), 9, "unknown symmetry"),
    ],
)
def test_bad_symmetry_is_refused_by_name(kind: str, shape: tuple[int, ...], actions: int, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        symmetry_group(kind, shape, actions)
