"""The inference server (issue 36): samplers' forward passes on one server, as the local path plays.

Equivalence with the local path (same seeds, same columns, row for row), one model per policy
id however many samplers play it, league snapshots added and retired through the samplers'
seam, weights loaded once, bad config refused, league-train runs through it (in-process and on
Ray), and the server on CUDA where there is one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from league.algos import make_algorithm
from league.batch import Columns as C
from league.config import parse_run_config
from league.envs import make_env
from league.envs.factory import EnvFactory
from league.policy import RandomPolicyFactory
from league.sampling import FixedMatchups, OpponentSampling, Sampler
from league.sampling.inference import InferenceServer, ServedPolicy, check_inference_config, resolve_device
from league.sampling.versioning import WEIGHTS_VERSION
from tests.test_combinations import _check_run, _run, _values

BOARD = "connect_four"


def _algo(name: str, **params: Any):
    env = make_env(BOARD)
    spec = env.spec(env.possible_agents[0])
    env.close()
    return make_algorithm(name, spec, {"model": "mlp", **params})


def _sampler(policies: dict, server: InferenceServer | None, worker_index: int = 0, **kw: Any) -> Sampler:
    agents = make_env(BOARD).possible_agents
    matchups = kw.pop("matchups", OpponentSampling("main", {"snap": 0.5}))
    return Sampler(EnvFactory(BOARD, backend="cpp"), policies=policies, frozen=tuple(p for p in policies if p != "main"),
                   matchups=matchups if matchups is not None else FixedMatchups({a: "main" for a in agents}),
                   num_envs=4, fragment_length=20, seed=3, worker_index=worker_index, inference=server)  # fmt: skip


def _same_batches(a, b) -> None:
    assert set(a.policy_batches) == set(b.policy_batches) and a.env_steps == b.env_steps
    for pid in a.policy_batches:
        x, y = a[pid], b[pid]
        assert set(x.keys()) == set(y.keys()), pid
        for key in x.keys():
            if key != C.EPS_ID:  # episode ids carry a random incarnation per sampler
                np.testing.assert_array_equal(x[key], y[key], err_msg=f"{pid}/{key}")


@pytest.mark.parametrize("algo", ["ppo", "dqn"])
def test_the_server_path_gives_the_local_paths_batches_row_for_row(algo):
    # Same seeds: the same sampled actions (PPO's per-sampler generator, DQN's per-sampler
    # epsilon schedule), log-probs, values, versions and postprocessed columns, against a snapshot.
    factory = _algo(algo)
    policies = {"main": factory, "snap": factory, "random": RandomPolicyFactory()}
    server = InferenceServer("cpu", torch_threads=0)
    a = _sampler(policies, None)
    b = _sampler(policies, server)
    weights = {"main": a.get_weights(["main"])["main"], "snap": {k: v * 0.5 for k, v in a.get_weights(["snap"])["snap"].items()}}
    weights["snap"][WEIGHTS_VERSION] = np.array(7)
    a.set_weights(weights)
    b.set_weights(weights)
    assert isinstance(b._policies["main"], ServedPolicy) and not isinstance(b._policies["random"], ServedPolicy)
    for _ in range(3):
        _same_batches(a.sample(), b.sample())
    assert [(e["returns"], e["policies"]) for e in a.pop_episode_stats()] == [(e["returns"], e["policies"]) for e in b.pop_episode_stats()]
    ev = OpponentSampling("main", {"snap": 1.0})
    assert [e["returns"] for e in a.evaluate(6, ev)] == [e["returns"] for e in b.evaluate(6, ev)]
    assert server.policy_ids() == ["main", "snap"]  # the random player stays on the sampler


def test_greedy_outputs_equal_the_policys_own():
    factory = _algo("ppo")
    policy = factory.make_policy(seed=5)
    server = InferenceServer("cpu", torch_threads=0)
    assert server.add_policy(0, "main", factory, policy.get_weights(), True, seed=5)
    rng = np.random.default_rng(0)
    obs = (rng.random((9, 6, 7, 2)) < 0.3).astype(np.float32)
    mask = (rng.random((9, 7)) < 0.6).astype(np.int8)
    mask[:, 0] = 1
    ours = server.compute_actions(0, [("main", obs, mask)], explore=False)[0]
    theirs = policy.compute_actions(obs, mask, explore=False)
    assert set(ours) == set(theirs) | {WEIGHTS_VERSION}
    for key in theirs:
        np.testing.assert_array_equal(ours[key], theirs[key])
    assert (ours[WEIGHTS_VERSION] == 0).all()


def test_one_model_per_policy_id_and_snapshots_follow_the_samplers_seam():
    factory = _algo("ppo")
    server = InferenceServer("cpu", torch_threads=0)
    samplers = [_sampler({"main": factory, "snap": factory}, server, worker_index=i) for i in range(3)]
    assert server.num_models() == 2  # main and snap, once each, for three samplers
    # Weights loaded once reach every sampler, with their version stamped on the rows.
    w = {k: np.zeros_like(v) for k, v in samplers[0].get_weights(["main"])["main"].items()}
    w[WEIGHTS_VERSION] = np.array(4)
    server.set_weights({"main": w})
    for s in samplers:
        assert all(np.array_equal(v, w[k]) for k, v in s.get_weights(["main"])["main"].items())
    assert (samplers[1].sample()["main"][WEIGHTS_VERSION] == 4).all()
    # A snapshot the league adds: one model; retired from every sampler: gone once no episode plays it.
    for s in samplers:
        s.add_policy("main@v1", factory, w, learns=False)
    assert server.num_models() == 3
    samplers[0].remove_policy("main@v1")  # no episode plays it: forgotten at once
    assert "main@v1" in server.policy_ids()
    for s in samplers[1:]:
        s.remove_policy("main@v1")
    assert server.policy_ids() == ["main", "snap"]
    # A snapshot still played by an episode in progress stays until that episode ends.
    s = samplers[0]
    s.set_matchups(OpponentSampling("main", {"snap": 1.0}))
    s.sample()
    s.remove_policy("snap")
    assert "snap" in s.retiring_policies() and "snap" in server.policy_ids()
    s.set_matchups(FixedMatchups({a: "main" for a in make_env(BOARD).possible_agents}))
    for _ in range(5):
        s.sample()
    assert s.retiring_policies() == [] and "snap" in server.policy_ids()  # the other samplers still play it
    # A sampler restarted with the same index starts afresh on the server.
    _sampler({"main": factory}, server, worker_index=0, matchups=None)
    assert sorted(server._hosted["snap"].clients) == [1, 2]


def _boards(rows: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    mask = (rng.random((rows, 7)) < 0.6).astype(np.int8)
    mask[:, 0] = 1
    return (rng.random((rows, 6, 7, 2)) < 0.3).astype(np.float32), mask


def _two_client_server(factory, weights) -> InferenceServer:
    server = InferenceServer("cpu", torch_threads=0)
    for client in (0, 1):
        server.add_policy(client, "main", factory, weights, True, seed=10 + client)
    return server


def test_waiting_samplers_rows_share_one_forward_pass_and_keep_their_own_results():
    from league.sampling.inference import _Call

    factory = _algo("ppo")
    weights = factory.make_policy(seed=0).get_weights()  # the model's initialisation is not seeded: one for both servers
    requests = {client: [("main", *_boards(5 + client, client))] for client in (0, 1)}
    alone = _two_client_server(factory, weights)
    expected = {client: alone.compute_actions(client, requests[client], explore=False)[0] for client in (0, 1)}
    assert alone.merged_forwards == 0  # one sampler's rows: exactly the local path
    together = _two_client_server(factory, weights)
    calls = [_Call(client, requests[client], False) for client in (0, 1)]
    together._serve(calls)  # two samplers' calls waiting at once: served as one batch
    assert together.merged_forwards == 1
    for call in calls:
        got, want = call.results[0], expected[call.client]
        assert set(got) == set(want) and len(got[C.ACTIONS]) == len(requests[call.client][0][1])
        np.testing.assert_array_equal(got[C.ACTIONS], want[C.ACTIONS])
        np.testing.assert_allclose(got[C.VF_PREDS], want[C.VF_PREDS], atol=1e-5)
        np.testing.assert_allclose(got[C.ACTION_LOGP], want[C.ACTION_LOGP], atol=1e-5)
    # A request for a policy the server does not hold fails that call alone.
    bad, good = _Call(0, [("nobody", *_boards(2, 0))], False), _Call(1, requests[1], False)
    together._serve([bad, good])
    assert isinstance(bad.error, KeyError) and good.error is None and good.results is not None


def test_concurrent_calls_from_threads_are_all_answered():
    import threading

    factory = _algo("ppo")
    server = _two_client_server(factory, factory.make_policy(seed=0).get_weights())
    boards = {client: _boards(8, client) for client in (0, 1)}
    want = {client: server.compute_actions(client, [("main", *boards[client])], explore=False)[0][C.ACTIONS] for client in (0, 1)}
    got: dict[tuple[int, int], np.ndarray] = {}

    def play(client: int) -> None:
        for i in range(30):
            got[(client, i)] = server.compute_actions(client, [("main", *boards[client])], explore=False)[0][C.ACTIONS]

    threads = [threading.Thread(target=play, args=(c,)) for c in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads) and len(got) == 60
    assert all(np.array_equal(a, want[client]) for (client, _), a in got.items())


def test_dqn_exploration_resets_per_sampler_on_the_server():
    factory = _algo("dqn", epsilon_steps=100)
    server = InferenceServer("cpu", torch_threads=0)
    a, b = (_sampler({"main": factory, "snap": factory}, server, worker_index=i) for i in range(2))
    a.sample()
    steps = {c: p.steps for c, p in server._hosted["main"].clients.items()}
    assert steps[0] > 0 and steps[1] == 0  # each sampler its own schedule, as on the local path
    a.reset_exploration(["main"])
    assert server._hosted["main"].clients[0].steps == 0


def test_bad_inference_config_is_refused():
    with pytest.raises(ValueError, match="sampler.inference must be"):
        check_inference_config("gpu", "cpu", 0, 0)
    with pytest.raises(ValueError, match="inference_device must be"):
        check_inference_config("server", "tpu", 0, 0)
    with pytest.raises(ValueError, match="GPU share would sit unused"):
        check_inference_config("server", "cpu", 0, 0.5)
    with pytest.raises(ValueError, match=">= 0"):
        check_inference_config("local", "auto", -1, 0)
    with pytest.raises(ValueError, match="sampler.inference must be"):
        parse_run_config({"sampler": {"inference": "remote"}})
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="torch sees no CUDA"):
            parse_run_config({"sampler": {"inference": "server", "inference_device": "cuda"}})
        assert resolve_device("auto") == "cpu"


def _served_run(algo: str, recipe: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **extra: Any) -> list[InferenceServer]:
    """A combination-matrix run with its samplers on an inference server; the servers built."""
    from league.run import build

    servers: list[Any] = []
    samplers: list[Any] = []
    original, make_samplers = build.make_inference_server, build.make_samplers

    def recording(*args: Any, **kwargs: Any):  # noqa: ANN202
        servers.append(original(*args, **kwargs))
        return servers[-1]

    def keeping(*args: Any, **kwargs: Any):  # noqa: ANN202
        samplers[:] = make_samplers(*args, **kwargs)
        return list(samplers)

    monkeypatch.setattr(build, "make_inference_server", recording)
    monkeypatch.setattr(build, "make_samplers", keeping)
    values = _values(algo, recipe, sampler={"inference": "server", "inference_device": "cpu", "num_samplers": 2}, **extra)
    trainer, summary = _run(values, tmp_path / "run")
    _check_run(trainer, summary, tmp_path / "run", recipe)
    assert "BroadcastWeights(1 samplers" in str(trainer.plan)  # weights go to the server alone
    server = servers[-1]
    hosted = set(server.policy_ids())
    assert set(trainer.learning) <= hosted and "random" not in hosted
    frozen = {pid for pid in trainer.league.frozen_policies() if "@" in pid}
    retiring = {pid for s in samplers for pid in s.retiring_policies()}  # evicted, but an episode in progress plays it
    assert frozen <= hosted and hosted - frozen - retiring == set(trainer.learning)  # evicted snapshots left it
    assert len(summary["snapshots"]) < len(frozen | retiring) + trainer.clock.iteration  # some were evicted
    learner_w, served_w = trainer.learner.get_weights(trainer.learning), server.get_weights(trainer.learning)
    for pid in trainer.learning:  # broadcast weights reached it (the last update's may be throttled: nothing sampled since)
        assert 0 < int(served_w[pid][WEIGHTS_VERSION]) <= int(learner_w[pid][WEIGHTS_VERSION])
    if algo == "ppo":  # bulk_sync: every update's weights are sent before the next fragment
        assert all(np.array_equal(learner_w[pid][k], served_w[pid][k]) for pid in trainer.learning for k in learner_w[pid])
    return servers


@pytest.mark.parametrize(("algo", "recipe"), [("ppo", "selfplay"), ("dqn", "alphastar")])
def test_league_runs_take_evict_and_evaluate_snapshots_through_the_server(algo, recipe, tmp_path, monkeypatch):
    servers = _served_run(algo, recipe, tmp_path, monkeypatch)
    assert len(servers) == 1  # one per build of the samplers


@pytest.mark.ray
def test_ray_samplers_share_a_ray_server(ray_session, tmp_path):
    # league-train's shape: two sampler actors and the server actor, weights broadcast to it alone.
    values = _values("ppo", "selfplay", sampler={"inference": "server", "inference_device": "cpu", "num_samplers": 2,
                                                 "remote": True, "num_cpus": 0})  # fmt: skip
    trainer, summary = _run(values, tmp_path / "run")
    _check_run(trainer, summary, tmp_path / "run", "selfplay")


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA (torch.cuda.is_available() is False)")
def test_a_cuda_server_acts_as_the_cpu_one():
    factory = _algo("ppo")
    weights = factory.make_policy(seed=1).get_weights()
    rng = np.random.default_rng(1)
    obs = (rng.random((64, 6, 7, 2)) < 0.3).astype(np.float32)
    mask = np.ones((64, 7), np.int8)
    out = {}
    for device in ("cpu", "cuda"):
        server = InferenceServer(device, torch_threads=0)
        server.add_policy(0, "main", factory, weights, True, seed=2)
        out[device] = server.compute_actions(0, [("main", obs, mask)], explore=False)[0]
        assert server.device_name().startswith(device)
    np.testing.assert_array_equal(out["cpu"][C.ACTIONS], out["cuda"][C.ACTIONS])
    np.testing.assert_allclose(out["cpu"][C.VF_PREDS], out["cuda"][C.VF_PREDS], atol=1e-4)
