"""The shared masked categorical (league.algos.distributions) and what the actor-critic algorithms share."""

from __future__ import annotations

import ast
from pathlib import Path

import torch
from torch.func import vmap

from league.algos.a2c import A2C
from league.algos.actor_critic import GAEActorCritic
from league.algos.distributions import MASKED_LOGIT, entropy, log_prob, masked_log_probs, masked_logits
from league.algos.ppo import PPO

ALGOS = Path(__file__).resolve().parents[1] / "league" / "algos"


def _inputs(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    logits = torch.randn(6, 5, generator=gen) * 3
    mask = (torch.rand(6, 5, generator=gen) < 0.6).float()
    mask[:, 2] = 1.0  # at least one legal action per row
    mask[0] = torch.tensor([0.0, 0.0, 1.0, 0.0, 0.0])  # a single legal action
    actions = torch.tensor([2, 2, 2, 2, 2, 2])
    return logits, mask, actions


def test_same_numbers_as_the_formula_the_algorithms_used_to_inline():
    logits, mask, actions = _inputs()
    old_logp_all = torch.log_softmax(torch.where(mask.bool(), logits, torch.full_like(logits, -1e9)), dim=-1)
    old_logp = old_logp_all.gather(1, actions.long().unsqueeze(1)).squeeze(1)
    old_entropy = -(old_logp_all.exp() * old_logp_all).sum(-1)
    log_probs = masked_log_probs(logits, mask)
    assert torch.equal(log_probs, old_logp_all)
    assert torch.equal(log_prob(log_probs, actions.float()), old_logp)  # float actions columns work too
    assert torch.equal(entropy(log_probs), old_entropy)


def test_illegal_actions_get_zero_probability_finite_log_probs_and_no_nan():
    logits, mask, actions = _inputs(1)
    log_probs = masked_log_probs(logits, mask)
    assert torch.isfinite(log_probs).all()
    assert (log_probs.exp()[mask == 0] == 0).all()
    torch.testing.assert_close(log_probs.exp().sum(-1), torch.ones(6))
    ent = entropy(log_probs)
    assert torch.isfinite(ent).all() and ent[0] == 0  # one legal action: no uncertainty
    assert (masked_logits(logits, mask)[mask == 0] == MASKED_LOGIT).all()
    # Gradients through the masked entries are finite (zero), not NaN.
    logits.requires_grad_(True)
    (entropy(masked_log_probs(logits, mask)).sum() + log_prob(masked_log_probs(logits, mask), actions).sum()).backward()
    assert torch.isfinite(logits.grad).all() and (logits.grad[mask == 0] == 0).all()


def test_vmap_safe():
    logits, mask, actions = _inputs(2)
    k_logits = torch.stack([logits, logits * 2])

    def one(lg: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        lp = masked_log_probs(lg, mask)
        return log_prob(lp, actions), entropy(lp)

    lp, ent = vmap(one)(k_logits)
    for k in range(2):
        torch.testing.assert_close(lp[k], one(k_logits[k])[0])
        torch.testing.assert_close(ent[k], one(k_logits[k])[1])


def test_ppo_and_a2c_share_one_gae_postprocessing():
    assert issubclass(PPO, GAEActorCritic) and issubclass(A2C, GAEActorCritic)
    assert "postprocess_trajectory" not in vars(PPO) and "postprocess_trajectory" not in vars(A2C)


def _imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
        elif isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
    return out


def test_stacked_update_imports_no_algorithm():
    """ppo.py -> ppo_stacked.py only: the stacked loop takes PPO's loss as an argument."""
    algorithm_modules = {"league.algos", "league.algos.ppo", "league.algos.a2c", "league.algos.impala", "league.algos.dqn"}
    assert not _imported_modules(ALGOS / "ppo_stacked.py") & algorithm_modules


def test_every_public_name_of_the_module_is_documented():
    import league.algos.distributions as dist

    assert dist.__doc__
    for name in dist.__all__:
        obj = getattr(dist, name)
        if callable(obj):
            assert obj.__doc__, name
