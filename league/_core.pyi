"""Type stubs of ``league._core``, the pybind11 extension built from ``csrc/`` (issue 35).

Kept by hand next to the bindings (``csrc/bindings.cpp``, ``csrc/replay_bindings.cpp``,
``csrc/board_bindings.cpp``, ``csrc/search_bindings.cpp``): a binding added, renamed or retyped there is changed here too.
Array arguments are checked by the C++ side (dtype, shape, contiguity, writability) and
typed here as ``np.ndarray``.
"""

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, SupportsFloat, SupportsIndex, SupportsInt

import numpy as np

_Int = SupportsInt | SupportsIndex
_Float = SupportsFloat | SupportsIndex

def concat_columns(batches: Sequence[Mapping[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Concatenate a sequence of dict[str, ndarray] column-wise (GIL released for the copy)."""

class ReplayCore:
    """One replay buffer (uniform, or prioritized when alpha is given); see league.replay."""

    def __init__(self, capacity: _Int, seed: _Int, alpha: _Float | None = None) -> None: ...
    def add(self, columns: Mapping[str, np.ndarray], priorities: np.ndarray | None = None) -> None: ...
    def sample(self, batch_size: _Int, beta: _Float | None = None) -> dict[str, np.ndarray]: ...
    def update_priorities(self, batch_indexes: np.ndarray, priorities: np.ndarray) -> None: ...
    def __len__(self) -> int: ...
    @property
    def capacity(self) -> int: ...
    @property
    def alpha(self) -> float | None: ...
    @property
    def max_priority(self) -> float: ...
    def schema(self) -> list[tuple[str, np.dtype[Any], tuple[int, ...]]]:
        """[(name, dtype, trailing shape)] in storage order; [] before the first add."""
    def leaf_values(self) -> np.ndarray:
        """p ** alpha of slots [0, len) (prioritized only)."""
    def tree_roots(self) -> tuple[float, float]:
        """(sum of all p ** alpha, min p ** alpha)."""
    def state(self) -> dict[str, Any]:
        """Everything a save needs, copied under the buffer's lock."""
    def restore(
        self,
        columns: list[tuple[str, np.ndarray]],
        size: _Int,
        next: _Int,
        rng: Sequence[_Int],
        leaf_values: np.ndarray | None,
        max_priority: _Float,
    ) -> None: ...

class _GameBatch:
    """What every C++ game batch offers (no such class at run time: typing only)."""

    shape: ClassVar[tuple[int, ...]]
    num_actions: ClassVar[int]
    max_opening_plies: ClassVar[int]
    opening_plies: int
    def __init__(self, num_envs: _Int, seed: _Int = 0) -> None: ...
    def seed(self, seed: _Int) -> None: ...
    def random_actions(self, out: np.ndarray) -> None: ...
    @property
    def num_envs(self) -> int: ...
    def observe(self, obs: np.ndarray, mask: np.ndarray, agent: np.ndarray) -> None: ...
    def set_autoreset(self, flags: np.ndarray) -> None: ...
    def active(self, out: np.ndarray) -> None: ...
    def reset_all(self) -> None: ...
    def reset_one(self, index: _Int) -> None: ...
    def step(
        self, actions: np.ndarray, obs: np.ndarray, mask: np.ndarray, agent: np.ndarray, rewards: np.ndarray, done: np.ndarray
    ) -> None: ...

class TicTacToeBatch(_GameBatch):
    """N tic-tac-toe games (PettingZoo tictactoe_v3 rules)."""

    def cells(self, index: _Int) -> bytes: ...

class ConnectFourBatch(_GameBatch):
    """N connect-four games (PettingZoo connect_four_v3 rules)."""

    def cells(self, index: _Int) -> bytes: ...

class LeducPokerBatch(_GameBatch):
    """N Leduc poker games (OpenSpiel leduc_poker rules and information-state tensors)."""

    def cards(self, index: _Int) -> tuple[int, int, int]: ...

CONNECT_FOUR_WIN_SCORE: int

def connect_four_negamax_scores(
    mine: np.ndarray, theirs: np.ndarray, legal: np.ndarray, depth: _Int, out: np.ndarray, threads: _Int = 1
) -> None: ...
def connect_four_exact_scores(
    mine: np.ndarray,
    theirs: np.ndarray,
    legal: np.ndarray,
    depth: _Int,
    out: np.ndarray,
    threads: _Int = 1,
    forcing: bool = True,
) -> None: ...
def board_threat_planes(obs: np.ndarray, k: _Int, gravity: bool, out: np.ndarray) -> None: ...

PUCT_EXPAND: int
PUCT_TERMINAL: int
PUCT_IDLE: int

class PUCTForest:
    """PUCT search trees' node statistics, batched over trees (csrc/search_tree.h; league.search.puct)."""

    def __init__(self, num_players: _Int, num_actions: _Int, c_puct: _Float) -> None: ...
    @property
    def num_players(self) -> int: ...
    @property
    def num_actions(self) -> int: ...
    @property
    def c_puct(self) -> float: ...
    @property
    def num_nodes(self) -> int: ...
    @property
    def num_trees(self) -> int: ...
    def add_trees(self, players: Any, terminal: Any, legal_counts: Any, legal_actions: Any) -> np.ndarray:
        """New trees, one root each: their tree ids (int64)."""
    def roots(self, trees: Any) -> np.ndarray: ...
    def select(self, trees: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(nodes, indices, actions, status int8): one descent per tree (PUCT_EXPAND, PUCT_TERMINAL, PUCT_IDLE)."""
    def expand(self, trees: Any, players: Any, terminal: Any, legal_counts: Any, legal_actions: Any, returns: Any) -> np.ndarray:
        """Each tree's frontier child: its node ids."""
    def set_priors(self, nodes: Any, priors: Any) -> None: ...
    def mix_noise(self, nodes: Any, noise: Any, fraction: _Float) -> None: ...
    def backup(self, trees: Any, returns: Any) -> None: ...
    def root_visits(self, trees: Any) -> np.ndarray:
        """float64[K, num_actions]."""
    def node(self, node: _Int) -> dict[str, Any]: ...

class GumbelForest(PUCTForest):
    """Gumbel search trees on the PUCT forest's storage (csrc/gumbel_tree.h; league.search.gumbel)."""

    def __init__(self, num_players: _Int, num_actions: _Int, c_visit: _Float, c_scale: _Float) -> None: ...
    def set_estimates(self, nodes: Any, values: Any) -> None:
        """Each node's value estimate for its mover."""
    def consider(self, trees: Any, gumbel: Any, num_considered: _Int, simulations: _Int) -> None:
        """Starts each tree's search: Gumbel noise per root legal move (concatenated), the considered moves, the schedule."""
    def results(self, trees: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(policy float64[K, A], actions int64[K], visits float64[K, A])."""
    def estimate(self, node: _Int) -> float: ...
