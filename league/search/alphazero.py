"""AlphaZero (Silver et al. 2018) as a league algorithm: ``algo=alphazero``.

A policy of this algorithm acts by search. At every move, in every env copy it plays, it runs
PUCT (:func:`league.search.puct.puct_visits`, batched across the copies) from the copy's game
state, which the sampler's env hands over (:meth:`~league.envs.batched.BatchedMultiAgentEnv.simulator_states`;
the policy declares :attr:`~league.policy.Policy.needs_states`, so no other policy pays for
it), guided by its own model: the usual actor-critic model of :mod:`league.algos.models`, its
masked softmax the prior and its value head the leaf value. It plays a move drawn from the
root's visit counts (to the power ``1 / temperature``) for the first ``temperature_moves``
plies of a game and the most visited move after them, with Dirichlet noise on the root's
prior while exploring (``explore=True``: every league game; evaluation plays the most visited
move, no noise). Each row records the search's visit distribution (:data:`SEARCH_POLICY`).

With ``search: gumbel`` the search is Gumbel AlphaZero's (:mod:`league.search.gumbel`:
Gumbel-top-k root moves, sequential halving, ``num_considered_actions``, ``c_visit``,
``c_scale``): while exploring the policy plays the move sequential halving selected (the Gumbel
noise explores; no temperature, no Dirichlet noise), greedily the improved policy's most likely
move, and :data:`SEARCH_POLICY` is the improved policy ``softmax(logits + sigma(completed Q))``.

The learner fits the model to the search: ``cross_entropy(visits, prior) + value_coef *
(value - z)^2``, with ``z`` the game's outcome from the mover's side (the sampler's GAE with
``gamma = lam = 1``: the Monte Carlo return, bootstrapped from the value head only where a
fragment cut the game), in epochs of minibatch SGD with PPO's optimiser.

It is a league member like any other: its snapshots are the same policy type and search too,
it plays PPO or DQN players in a mixed run (``policies=ppo_vs_alphazero``), and payoff and
ratings count its games. ``league-train`` refuses it (exit 2, naming the key) on an env whose
batched env cannot hand states (:func:`check_search_algorithms`). Without states (a truncated
row's bootstrap; env copies that cannot hand them, e.g. ``league-eval``'s PettingZoo copies of
the C++ boards) the policy plays its network's prior; ``league-eval ... search=N`` plays it with
PUCT of N simulations as the league does.

Acting costs about ``num_simulations`` forward passes per move, each batched across the env
copies, and as many simulator steps (clone, apply) per copy; PUCT's tree runs in the C++
core (``league._core.PUCTForest``), Gumbel's too (``GumbelForest``). 128 tic-tac-toe boards at 16
simulations act at about 3.7k env steps/s, 24x slower than PPO (``benchmarks/bench_puct_tree.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import nn

from league.algos import ALGORITHMS
from league.algos.actor_critic import SEARCH_POLICY, ActorCriticOptions, GAEActorCritic, fresh_rows_plan, value_error
from league.algos.distributions import ActionDist, masked_log_probs
from league.algos.sgd import check_max_policy_lag, check_minibatch_size, minibatch_sgd
from league.algos.torch_policy import ActorCriticPolicy
from league.batch import Columns as C
from league.batch import SampleBatch
from league.envs.base import AgentSpec
from league.envs.batched import SimulatorStates
from league.learn.algorithm import PolicyState, batch_to_tensors
from league.policy import Policy
from league.search import gumbel
from league.search.gumbel import gumbel_search
from league.search.puct import one_thread, policy_evaluator, puct_visits
from league.search.simulator import Simulator, SimulatorCache, simulator_for

if TYPE_CHECKING:
    from league.flow.iterators import LocalIterator
    from league.runtime.faces import LearnerHandle

__all__ = ["SEARCH_POLICY", "AlphaZero", "AlphaZeroConfig", "AlphaZeroPolicy", "check_search_algorithms"]

#: The searches ``alphazero.search`` names.
SEARCHES = ("puct", "gumbel")

_INPUTS = [C.OBS, C.ACTION_MASK, SEARCH_POLICY, C.VALUE_TARGETS]


@dataclass
class AlphaZeroConfig(ActorCriticOptions):
    """AlphaZero's hyperparameters (model options: :class:`ActorCriticOptions`)."""

    lr: float = 1e-3
    # The search: "puct" (AlphaZero's visits) or "gumbel" (Gumbel AlphaZero: sequential halving
    # over Gumbel-sampled moves, the improved policy as the target; league.search.gumbel).
    search: str = "puct"
    # Simulations per move (each a leaf evaluated by the model, batched across env copies).
    num_simulations: int = 16
    c_puct: float = 1.25
    # Gumbel's: moves considered at the root (m), and sigma(q) = (c_visit + max N) * c_scale * q.
    num_considered_actions: int = gumbel.NUM_CONSIDERED_ACTIONS
    c_visit: float = gumbel.C_VISIT
    c_scale: float = gumbel.C_SCALE
    # PUCT: moves drawn from visits ** (1 / temperature) for the first temperature_moves plies
    # of a game (while exploring), the most visited one after (Gumbel: its noise explores).
    temperature: float = 1.0
    temperature_moves: int = 4
    # PUCT: Dirichlet noise on the root prior while exploring: (1 - fraction) * P + fraction * Dir(alpha).
    dirichlet_alpha: float = 0.5
    dirichlet_fraction: float = 0.25
    value_coef: float = 1.0
    num_epochs: int = 4
    minibatch_size: int = 256
    train_batch_size: int = 1024  # agent steps per policy per update
    max_grad_norm: float = 1.0
    # The value target: gamma = lam = 1 is the game's outcome (a Monte Carlo return).
    gamma: float = 1.0
    lam: float = 1.0
    # Train on rows produced by weights at most this many updates old (0: on-policy).
    max_policy_lag: int = 0

    def __post_init__(self) -> None:
        self.check_options("alphazero")
        if self.search not in SEARCHES:
            raise ValueError(f"alphazero.search must be one of {SEARCHES}, got {self.search!r}")
        for name in ("lr", "c_puct", "temperature", "num_epochs", "minibatch_size", "train_batch_size", "max_grad_norm",
                     "c_scale"):
            if not getattr(self, name) > 0:
                raise ValueError(f"alphazero.{name} must be positive, got {getattr(self, name)}")
        if not self.c_visit >= 0:
            raise ValueError(f"alphazero.c_visit must be >= 0, got {self.c_visit}")
        if isinstance(self.num_considered_actions, bool) or not isinstance(self.num_considered_actions, int) or self.num_considered_actions < 1:
            raise ValueError(f"alphazero.num_considered_actions must be an integer >= 1, got {self.num_considered_actions!r}")
        for name in ("num_simulations", "temperature_moves"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"alphazero.{name} must be an integer >= 0, got {value!r}")
        if not self.dirichlet_alpha > 0 or not 0 <= self.dirichlet_fraction <= 1:
            raise ValueError(f"alphazero.dirichlet_alpha must be > 0 and dirichlet_fraction in [0, 1], got "
                             f"{self.dirichlet_alpha}, {self.dirichlet_fraction}")
        if not self.value_coef >= 0:
            raise ValueError(f"alphazero.value_coef must be >= 0, got {self.value_coef}")
        if not 0 <= self.gamma <= 1 or not 0 <= self.lam <= 1:
            raise ValueError(f"alphazero.gamma and alphazero.lam must lie in [0, 1], got {self.gamma}, {self.lam}")
        check_minibatch_size("alphazero", self.minibatch_size, self.train_batch_size)
        check_max_policy_lag("alphazero", self.max_policy_lag)


class AlphaZeroPolicy(ActorCriticPolicy):
    """The sampler-side policy: PUCT from each row's game state (see the module docstring)."""

    needs_states = True

    def __init__(self, model: nn.Module, dist: ActionDist, config: AlphaZeroConfig, learns: bool = True, seed: int | None = None) -> None:
        super().__init__(model, dist, learns=learns, seed=seed)
        self.config = config
        self._rng = np.random.default_rng(seed)
        self._evaluate = policy_evaluator(self)
        self._simulator = SimulatorCache("algo=alphazero")

    def compute_actions(self, obs: np.ndarray, action_mask: np.ndarray, explore: bool = True) -> dict[str, np.ndarray]:
        """Without game states: the network's prior acts (as an actor-critic policy), and the
        prior is the :data:`SEARCH_POLICY` column (the columns :meth:`compute_actions_at` gives)."""
        out = super().compute_actions(obs, action_mask, explore)
        return {
            C.ACTIONS: out[C.ACTIONS], C.VF_PREDS: out[C.VF_PREDS],
            SEARCH_POLICY: self.action_probabilities(obs, action_mask).astype(np.float32),
        }

    def compute_actions_at(
        self, states: SimulatorStates, obs: np.ndarray, action_mask: np.ndarray, explore: bool = True
    ) -> dict[str, np.ndarray]:
        """PUCT of ``num_simulations`` from every row's state, batched: actions, the visit
        distribution (:data:`SEARCH_POLICY`) and the value head's ``vf_preds`` at the root."""
        cfg = self.config
        if len(states.states) != len(obs):
            raise ValueError(f"alphazero: {len(states.states)} game states for {len(obs)} rows")
        if cfg.num_simulations == 0:
            return self.compute_actions(obs, action_mask, explore)
        sim = self._simulator(states.env_name, states.env_kwargs)
        if cfg.search == "gumbel":
            return self._gumbel_actions(sim, states, explore)
        noise = (cfg.dirichlet_alpha, cfg.dirichlet_fraction) if explore else None
        # The search's many small forward passes on one thread: a sampler is a one-core worker, and
        # an in-process learner's thread count (learner.num_threads=2) had each of them wait on a
        # second thread (connect four, 8 boards, a loaded machine: 10.8 -> 55.7 env steps/s).
        with one_thread():
            visits = np.stack(puct_visits(sim, states.states, self._evaluate, cfg.num_simulations, self._rng, cfg.c_puct, noise))
            priors, values = self._evaluate(obs, action_mask)
        totals = visits.sum(axis=1, keepdims=True)
        policy = np.where(totals > 0, visits / np.maximum(totals, 1.0), priors)
        ply = getattr(sim, "ply", None)
        actions = np.empty(len(obs), dtype=np.int64)
        for i, (row, state) in enumerate(zip(policy, states.states)):
            if explore and (ply is None or ply(state) < cfg.temperature_moves):
                weights = row ** (1.0 / cfg.temperature) if cfg.temperature != 1.0 else row
                actions[i] = int(self._rng.choice(len(row), p=weights / weights.sum()))
            else:
                best = np.flatnonzero(row == row.max())
                actions[i] = int(best[self._rng.integers(len(best))]) if explore else int(best[0])
        return {
            C.ACTIONS: actions,
            C.VF_PREDS: np.zeros(len(obs), np.float32) if values is None else values.astype(np.float32),
            SEARCH_POLICY: policy.astype(np.float32),
        }

    def _gumbel_actions(self, sim: Simulator, states: SimulatorStates, explore: bool) -> dict[str, np.ndarray]:
        """Gumbel search: the move sequential halving selected (``explore``: with Gumbel noise) or
        the improved policy's most likely one (greedy, no noise); the improved policy is the target."""
        cfg = self.config
        with one_thread():
            out = gumbel_search(sim, states.states, self._evaluate, cfg.num_simulations, self._rng,
                                cfg.num_considered_actions, cfg.c_visit, cfg.c_scale, gumbel=explore)
        actions = out.actions if explore else out.policy.argmax(axis=1)
        return {C.ACTIONS: actions.astype(np.int64), C.VF_PREDS: out.values.astype(np.float32),
                SEARCH_POLICY: out.policy.astype(np.float32)}


class AlphaZero(GAEActorCritic):
    """AlphaZero for one Discrete (masked) action of a game a search can play (see the module docstring)."""

    name = "alphazero"
    config_class = AlphaZeroConfig

    def __init__(self, agent_spec: AgentSpec, config: Mapping[str, Any] | None = None) -> None:
        super().__init__(agent_spec, config)
        if agent_spec.continuous or agent_spec.action_nvec:
            raise ValueError("algo=alphazero searches over one Discrete action; this env's agents act on a Box or MultiDiscrete space")

    def make_policy(self, seed: int | None = None, learns: bool = True) -> Policy:
        """The searching policy (frozen snapshots too: they search as the learner's policy does)."""
        return AlphaZeroPolicy(self.make_model(), self.dist, self.config, learns=learns, seed=seed)

    def loss(self, model: nn.Module, mb: Mapping[str, torch.Tensor]) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """Cross-entropy of the prior to the visit distribution + ``value_coef`` x the squared value error."""
        logits, values = model(mb[C.OBS])
        logp = masked_log_probs(logits, mb[C.ACTION_MASK])
        target = mb[SEARCH_POLICY]
        policy_loss = -(target * logp).sum(dim=-1).mean()
        vf_loss = value_error(values, mb[C.VALUE_TARGETS], mb).pow(2).mean()
        loss = policy_loss + self.config.value_coef * vf_loss
        with torch.no_grad():
            probs = logp.exp()
            entropy = -(probs * logp).sum(dim=-1).mean()
            # How far the prior is from the search: KL(visits || prior) (0 where they agree).
            kl = (target * (torch.log(target.clamp_min(1e-12)) - logp)).sum(dim=-1).mean()
        return loss, {"total_loss": loss.detach(), "policy_loss": policy_loss.detach(), "vf_loss": vf_loss.detach(),
                      "entropy": entropy, "search_kl": kl}

    def learn(self, state: PolicyState, batch: SampleBatch) -> dict[str, float]:
        """``num_epochs`` passes of shuffled minibatch SGD on :meth:`loss`."""
        cfg = self.config
        t = batch_to_tensors(batch, self.loss_inputs(*_INPUTS), next(state.model.parameters()).device)
        self.prepare(state.model, t)
        return minibatch_sgd(self.loss, state, t, len(batch), cfg.num_epochs, cfg.minibatch_size, cfg.max_grad_norm, "AlphaZero")

    def plan_fragment(self, rollouts: LocalIterator, learner: LearnerHandle, policy_ids: list[str]) -> LocalIterator:
        """Rollouts -> SelectExperiences -> ConcatBatches -> TrainOneStep (rows of the current
        weights, up to ``max_policy_lag`` updates old), as PPO's."""
        return fresh_rows_plan(rollouts, learner, policy_ids, self.config.train_batch_size)


def check_search_algorithms(algos: Mapping[str, str], env_name: str, env_kwargs: Mapping[str, Any], backend: str,
                            params: Mapping[str, Mapping[str, Any]] | None = None) -> None:
    """Config check: every algorithm in ``algos`` (config key -> algorithm name; ``params``: the
    same keys -> their ``params``) that searches can play env ``env_name``: the batched env
    samplers build for it hands a search its game states, and the simulator of those states
    exists. An algorithm searches when it acts by search (AlphaZero's kind) or its params ask
    for a search target (``search_simulations > 0``, PPO's).

    Raises:
        ValueError: naming the key, the env and what to do.
    """
    searching = {key: name for key, name in algos.items() if name in ALGORITHMS and issubclass(ALGORITHMS[name], AlphaZero)}
    for key, name in algos.items():
        simulations = (params or {}).get(key, {}).get("search_simulations", 0)
        if key not in searching and isinstance(simulations, int) and simulations > 0:
            searching[f"{key.rsplit('.', 1)[0]}.params.search_simulations"] = str(simulations)
    if not searching:
        return
    from league.envs.factory import EnvFactory

    key, name = next(iter(searching.items()))
    head = f"{key}={name} cannot play env '{env_name}'"
    if key.endswith(".search_simulations"):
        what = (
            "A search target is searched from each env copy's game state, so it needs a two-player perfect-information "
            "game with a simulator: env=tictactoe or env=connect_four (env.backend=cpp, their default), or "
            f"env.name=openspiel:<game>; set {key}=0 (no search) for this env"
        )
    else:
        what = (
            "AlphaZero searches from each env copy's game state, so it plays two-player perfect-information games with a "
            "simulator: env=tictactoe or env=connect_four (env.backend=cpp, their default), or env.name=openspiel:<game>; "
            "choose another algorithm (e.g. algo=ppo) for this env"
        )
    env = EnvFactory(env_name, env_kwargs, backend).batched(1, np.random.default_rng(0), openings=False)
    try:
        if not env.searchable:
            raise ValueError(f"{head}: its batched env ({type(env).__name__}) cannot hand a search its game states "
                             f"(BatchedMultiAgentEnv.simulator_states). {what}")
        env.reset(seed=0)
        states = env.simulator_states(np.zeros(1, dtype=np.int64))
        try:
            sim = simulator_for(states.env_name, states.env_kwargs, key)
        except ValueError as err:
            raise ValueError(f"{head}: {err}. {what}") from None
        if sim.num_actions != env.agent_spec.num_actions:
            raise ValueError(f"{head}: its simulator has {sim.num_actions} actions, the env {env.agent_spec.num_actions}. {what}")
    finally:
        env.close()


ALGORITHMS.setdefault(AlphaZero.name, AlphaZero)
