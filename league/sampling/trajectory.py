"""Per-agent trajectory recording on a sampler (plain lists; one chunk -> one SampleBatch).

A row is opened when the agent acts and stays "pending" until the agent acts again or
its episode ends: rewards reported in between are added to it. Closed rows are cut into
chunks at fragment boundaries; the pending row's policy outputs are handed to the
postprocessor as the "next step" (for bootstrapping) and the row carries over.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from league.batch import Columns as C
from league.batch import SampleBatch

__all__ = ["AgentTrajectory"]


def _actions_column(actions: list) -> np.ndarray:
    """``int64[n]`` for discrete actions; ``float32[n, D]`` for Box actions (float vectors),
    ``int64[n, K]`` for MultiDiscrete ones (integer vectors)."""
    if actions and isinstance(actions[0], np.ndarray):
        stacked = np.stack(actions)
        return stacked.astype(np.float32 if stacked.dtype.kind == "f" else np.int64, copy=False)
    return np.asarray(actions, dtype=np.int64)


class AgentTrajectory:
    """Rows of one agent in one episode, in time order."""

    __slots__ = ("eps_id", "agent_index", "obs", "masks", "actions", "rewards", "extras", "t0", "terminated", "truncated")

    def __init__(self, eps_id: int, agent_index: int) -> None:
        self.eps_id = eps_id
        self.agent_index = agent_index
        self.obs: list[np.ndarray] = []
        self.masks: list[np.ndarray] = []
        self.actions: list[int] = []
        self.rewards: list[float] = []
        self.extras: dict[str, list] = {}
        self.t0 = 0  # agent-step index of the first row held
        self.terminated = False
        self.truncated = False

    def open_row(self, obs: np.ndarray, mask: np.ndarray, action: int, outputs: Mapping[str, np.ndarray], row: int) -> None:
        """The agent acted: record its observation, mask, action and policy outputs (row ``row``)."""
        self.obs.append(obs)
        self.masks.append(mask)
        self.actions.append(action)
        self.rewards.append(0.0)
        for k, v in outputs.items():
            if k != C.ACTIONS:
                self.extras.setdefault(k, []).append(v[row])

    def add_reward(self, r: float) -> None:
        """Credit ``r`` to the latest action (dropped if the agent has not acted yet)."""
        if self.rewards:
            self.rewards[-1] += r

    def __len__(self) -> int:
        return len(self.actions)

    def pending_outputs(self) -> dict[str, np.ndarray]:
        """Policy outputs of the pending (last) row plus its obs and mask, one row each, for bootstrapping."""
        out = {k: np.asarray(v[-1:]) for k, v in self.extras.items()}
        out[C.OBS] = self.obs[-1][None]
        out[C.ACTION_MASK] = self.masks[-1][None]
        return out

    def take_chunk(self, upto: int) -> SampleBatch:
        """Rows ``[0, upto)`` as a batch; they are removed, later rows are kept."""
        n = upto
        t = np.arange(self.t0, self.t0 + n, dtype=np.int32)
        dones = np.zeros(n, dtype=bool)
        cols = {
            C.OBS: np.stack(self.obs[:n]),
            C.ACTIONS: _actions_column(self.actions[:n]),
            C.ACTION_MASK: np.stack(self.masks[:n]),
            C.REWARDS: np.asarray(self.rewards[:n], dtype=np.float32),
            C.TERMINATEDS: dones,
            C.TRUNCATEDS: dones.copy(),
            C.EPS_ID: np.full(n, self.eps_id, dtype=np.int64),
            C.AGENT_INDEX: np.full(n, self.agent_index, dtype=np.int32),
            C.T: t,
        }
        for k, v in self.extras.items():
            cols[k] = np.asarray(v[:n])
            del v[:n]
        if n == len(self.actions):  # the chunk reaches the episode's end for this agent
            cols[C.TERMINATEDS][-1] = self.terminated
            cols[C.TRUNCATEDS][-1] = self.truncated
        del self.obs[:n], self.masks[:n], self.actions[:n], self.rewards[:n]
        self.t0 += n
        return SampleBatch._trusted(cols, n)
