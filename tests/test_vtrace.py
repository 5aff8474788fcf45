"""V-trace: against the paper's definition written as plain loops, on-policy identities, chunking."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from league.algos.postprocessing import compute_gae
from league.algos.vtrace import chunk_ends, reverse_linear_scan, vtrace
from league.batch import Columns as C
from league.batch import MultiAgentBatch, SampleBatch


def reference_vtrace(blogp, tlogp, rewards, values, boot, ends, gamma, lam, rho_bar, c_bar, pg_rho_bar):
    """Espeholt et al. (2018), eq. (1), summed term by term for every row of every chunk."""
    n = len(rewards)
    rho = np.exp(np.asarray(tlogp, np.float64) - np.asarray(blogp, np.float64))
    vs, adv = np.zeros(n), np.zeros(n)
    start = 0
    for end in np.flatnonzero(ends):
        idx = range(start, end + 1)
        v_next = {i: (values[i + 1] if i < end else boot[end]) for i in idx}
        for s in idx:
            total, trace = 0.0, 1.0  # trace = gamma^(t-s) * prod_{i=s}^{t-1} c_i
            for t in range(s, end + 1):
                delta = min(rho_bar, rho[t]) * (rewards[t] + gamma * v_next[t] - values[t])
                total += trace * delta
                trace *= gamma * lam * min(c_bar, rho[t])
            vs[s] = values[s] + total
        for s in idx:
            vs_next = vs[s + 1] if s < end else boot[end]
            adv[s] = min(pg_rho_bar, rho[s]) * (rewards[s] + gamma * vs_next - values[s])
        start = end + 1
    return vs, adv


def _random_chunks(rng, lengths, terminated_last=True):
    n = sum(lengths)
    ends = np.zeros(n, bool)
    boot = np.zeros(n, np.float32)
    pos = 0
    for k, length in enumerate(lengths):
        pos += length
        ends[pos - 1] = True
        value = 0.0 if (terminated_last and k == len(lengths) - 1) else rng.normal()
        boot[pos - length : pos] = value  # per-row column, as the sampler writes it
    return {
        "blogp": np.log(rng.uniform(0.05, 1.0, n)).astype(np.float32),
        "tlogp": np.log(rng.uniform(0.05, 1.0, n)).astype(np.float32),
        "rewards": rng.normal(size=n).astype(np.float32),
        "values": rng.normal(size=n).astype(np.float32),
        "boot": boot,
        "ends": ends,
    }


def _run(d, **kw):
    t = {k: torch.from_numpy(v) for k, v in d.items()}
    return vtrace(t["blogp"], t["tlogp"], t["rewards"], t["values"], t["boot"], t["ends"], **kw)


@pytest.mark.parametrize("n", [1, 2, 3, 7, 8, 9, 64, 1000])
def test_reverse_linear_scan_matches_loop(n):
    rng = np.random.default_rng(n)
    a, x = rng.uniform(0, 1, n), rng.normal(size=n)
    a[rng.random(n) < 0.1] = 0.0
    expected, carry = np.zeros(n), 0.0
    for i in reversed(range(n)):
        carry = x[i] + a[i] * carry
        expected[i] = carry
    y = reverse_linear_scan(torch.from_numpy(a), torch.from_numpy(x))
    np.testing.assert_allclose(y.numpy(), expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize(
    "params",
    [
        dict(gamma=0.9, lam=1.0, rho_bar=1.0, c_bar=1.0, pg_rho_bar=1.0),
        dict(gamma=0.97, lam=0.8, rho_bar=1.2, c_bar=0.7, pg_rho_bar=1.5),
        dict(gamma=1.0, lam=1.0, rho_bar=0.5, c_bar=0.5, pg_rho_bar=0.5),
    ],
)
def test_off_policy_with_clipping_matches_paper_definition_over_concatenated_chunks(params):
    rng = np.random.default_rng(0)
    d = _random_chunks(rng, [5, 1, 12, 3, 30])
    rho = np.exp(d["tlogp"] - d["blogp"])
    assert (rho > params["rho_bar"]).any() and (rho < params["c_bar"]).any()  # clipping is exercised
    out = _run(d, **params)
    vs, adv = reference_vtrace(d["blogp"], d["tlogp"], d["rewards"], d["values"], d["boot"], d["ends"], **params)
    np.testing.assert_allclose(out.vs.numpy(), vs, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(out.pg_advantages.numpy(), adv, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(out.rhos.numpy(), rho, rtol=1e-5)


def test_each_chunk_is_independent_of_its_neighbours():
    rng = np.random.default_rng(1)
    d = _random_chunks(rng, [4, 6, 5])
    whole = _run(d, gamma=0.95, c_bar=0.8)
    middle = {k: v[4:10] for k, v in d.items()}
    alone = _run(middle, gamma=0.95, c_bar=0.8)
    np.testing.assert_allclose(whole.vs.numpy()[4:10], alone.vs.numpy(), rtol=1e-6)
    np.testing.assert_allclose(whole.pg_advantages.numpy()[4:10], alone.pg_advantages.numpy(), rtol=1e-6)


def test_on_policy_lambda_one_gives_n_step_returns():
    rng = np.random.default_rng(2)
    d = _random_chunks(rng, [3, 8, 1])
    d["tlogp"] = d["blogp"].copy()  # rho = 1 everywhere
    gamma = 0.9
    out = _run(d, gamma=gamma)
    expected = np.zeros(len(d["rewards"]))
    start = 0
    for end in np.flatnonzero(d["ends"]):
        for s in range(start, end + 1):
            ret = sum(gamma ** (t - s) * d["rewards"][t] for t in range(s, end + 1))
            expected[s] = ret + gamma ** (end + 1 - s) * d["boot"][end]
        start = end + 1
    np.testing.assert_allclose(out.vs.numpy(), expected, rtol=1e-5, atol=1e-6)
    # On-policy with lam=1 the pg advantage is the n-step return minus the value.
    np.testing.assert_allclose(out.pg_advantages.numpy(), expected - d["values"], rtol=1e-4, atol=1e-5)


def test_on_policy_targets_equal_gae_value_targets_per_chunk():
    rng = np.random.default_rng(3)
    lengths = [7, 2, 11]
    d = _random_chunks(rng, lengths, terminated_last=False)
    d["tlogp"] = d["blogp"].copy()
    out = _run(d, gamma=0.99, lam=0.9)
    start = 0
    for length in lengths:
        sl = slice(start, start + length)
        _, targets = compute_gae(d["rewards"][sl], d["values"][sl], float(d["boot"][start]), 0.99, 0.9)
        np.testing.assert_allclose(out.vs.numpy()[sl], targets, rtol=1e-5, atol=1e-5)
        start += length


def test_outputs_carry_no_gradient_and_inputs_are_untouched():
    rng = np.random.default_rng(4)
    d = _random_chunks(rng, [4, 4])
    values = torch.from_numpy(d["values"]).requires_grad_(True)
    t = {k: torch.from_numpy(v) for k, v in d.items()}
    out = vtrace(t["blogp"], t["tlogp"], t["rewards"], values, t["boot"], t["ends"], gamma=0.9)
    assert not out.vs.requires_grad and not out.pg_advantages.requires_grad
    np.testing.assert_array_equal(values.detach().numpy(), d["values"])


def test_bad_inputs_are_named():
    t = {k: torch.from_numpy(v) for k, v in _random_chunks(np.random.default_rng(5), [3]).items()}
    not_ended = t["ends"].clone()
    not_ended[-1] = False
    with pytest.raises(ValueError, match="last row must end a chunk"):
        vtrace(t["blogp"], t["tlogp"], t["rewards"], t["values"], t["boot"], not_ended, gamma=0.9)
    with pytest.raises(ValueError, match="rewards has shape"):
        vtrace(t["blogp"], t["tlogp"], t["rewards"][:2], t["values"], t["boot"], t["ends"], gamma=0.9)
    with pytest.raises(TypeError, match="target_logp must be a torch.Tensor"):
        vtrace(t["blogp"], t["tlogp"].numpy(), t["rewards"], t["values"], t["boot"], t["ends"], gamma=0.9)
    with pytest.raises(ValueError, match="rho_bar, c_bar, pg_rho_bar must be positive"):
        vtrace(t["blogp"], t["tlogp"], t["rewards"], t["values"], t["boot"], t["ends"], gamma=0.9, c_bar=0.0)


def test_chunk_ends_from_episode_agent_time_and_done_flags():
    batch = {
        C.EPS_ID: np.array([1, 1, 1, 2, 2, 2, 2, 2, 3, 3]),
        C.AGENT_INDEX: np.array([0, 0, 0, 0, 0, 1, 1, 1, 0, 0]),
        C.T: np.array([0, 1, 2, 5, 6, 0, 1, 3, 0, 1]),
        C.TERMINATEDS: np.array([0, 0, 0, 0, 0, 0, 0, 0, 1, 0], bool),
    }
    #            eps change ^   agent change ^  t gap ^  terminated ^    last row ^
    expected = [0, 0, 1, 0, 1, 0, 1, 1, 1, 1]
    np.testing.assert_array_equal(chunk_ends(batch), np.array(expected, bool))
    with pytest.raises(ValueError, match=r"\['t'\]"):
        chunk_ends({C.EPS_ID: np.zeros(2), C.AGENT_INDEX: np.zeros(2)})


@pytest.mark.parametrize("num_samplers, num_envs", [(2, 3), (1, 1)])
def test_on_policy_vtrace_reproduces_sampler_gae_on_real_concatenated_fragments(num_samplers, num_envs):
    """Sampler fragments (chunks cut at fragment ends, carried-over rows, terminations and
    truncations) concatenated as ConcatBatches does: on-policy V-trace with the behaviour
    values must equal the GAE targets each chunk got on the sampler. With one sampler and
    one env, consecutive pieces of an episode are adjacent and merge into one chunk."""
    from league.algos.impala import IMPALA
    from league.envs import make_env
    from league.sampling import FixedMatchups, Sampler

    gamma, lam = 0.9, 0.8

    class WithGAE(IMPALA):
        def postprocess_trajectory(self, traj, next_step):
            traj = super().postprocess_trajectory(traj, next_step)
            traj[C.ADVANTAGES], traj[C.VALUE_TARGETS] = compute_gae(
                traj[C.REWARDS], traj[C.VF_PREDS], float(traj[C.BOOTSTRAP_VALUE][0]), gamma, lam
            )
            return traj

    algo = WithGAE(make_env("cartpole", max_episode_steps=25).spec("agent_0"), {"model": "mlp"})
    samplers = [
        Sampler(
            "cartpole", {"max_episode_steps": 25}, {"main": algo}, FixedMatchups({"agent_0": "main"}),
            num_envs=num_envs, fragment_length=16, seed=i, worker_index=i,
        )
        for i in range(num_samplers)
    ]
    batch = MultiAgentBatch.concat([s.sample() for _ in range(8 // num_samplers) for s in samplers])["main"]
    assert batch[C.TERMINATEDS].any() and batch[C.TRUNCATEDS].any()
    ends = chunk_ends(batch)
    t = {k: torch.from_numpy(batch[k]) for k in (C.ACTION_LOGP, C.REWARDS, C.VF_PREDS, C.BOOTSTRAP_VALUE)}
    out = vtrace(
        t[C.ACTION_LOGP], t[C.ACTION_LOGP], t[C.REWARDS], t[C.VF_PREDS], t[C.BOOTSTRAP_VALUE],
        torch.from_numpy(ends), gamma=gamma, lam=lam,
    )
    # GAE over the chunks chunk_ends found, each bootstrapped from its last row's value.
    expected, start = np.zeros(len(batch), np.float32), 0
    for end in np.flatnonzero(ends):
        sl = slice(start, end + 1)
        _, expected[sl] = compute_gae(
            batch[C.REWARDS][sl], batch[C.VF_PREDS][sl], float(batch[C.BOOTSTRAP_VALUE][end]), gamma, lam
        )
        start = end + 1
    np.testing.assert_allclose(out.vs.numpy(), expected, rtol=1e-4, atol=1e-4)

    eps, boot = batch[C.EPS_ID], batch[C.BOOTSTRAP_VALUE]
    piece_ends = np.append((eps[1:] != eps[:-1]) | (boot[1:] != boot[:-1]), True)
    if num_envs > 1:
        # Pieces of one episode are never adjacent here: the chunks are the sampler's own.
        np.testing.assert_array_equal(ends, piece_ends)
        np.testing.assert_allclose(out.vs.numpy(), batch[C.VALUE_TARGETS], rtol=1e-4, atol=1e-4)
    else:
        joins = np.flatnonzero(piece_ends & ~ends)
        assert len(joins) > 0  # consecutive pieces merged into longer chunks...
        # ...which is sound because a piece's bootstrap is the next row's behaviour value.
        np.testing.assert_allclose(boot[joins], batch[C.VF_PREDS][joins + 1], rtol=1e-6)


def test_sample_batch_columns_work_directly():
    batch = SampleBatch({C.EPS_ID: np.array([4, 4]), C.AGENT_INDEX: np.array([0, 0]), C.T: np.array([0, 1])})
    np.testing.assert_array_equal(chunk_ends(batch), [False, True])
