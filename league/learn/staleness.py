"""Which rows a policy may still learn from: policy lag and weight epochs.

Every row a sampler records carries ``weights_version``: the version of the weights that
chose its action (:mod:`league.sampling.versioning`). The learner knows, per policy, its
current ``version`` and the ``epoch``: the version at which the current weights' lineage
began (the policy's creation, or the latest reset or restore). A row is

- from **another epoch** when its version is below ``epoch`` (produced before a reset or
  restore) or above ``version`` (produced by a lineage this learner does not know, e.g.
  a dead learner's): always dropped, whatever the algorithm;
- **stale** when ``version - row version`` exceeds the algorithm's ``max_policy_lag``
  (0 for PPO and A2C: on-policy; larger for IMPALA/APPO, whose V-trace corrects for a
  bounded lag; ``None``, as for DQN: any age).

Within one agent's trajectory chunk versions never decrease (weights only get newer),
so the rows dropped from a chunk are always a prefix and what remains is still one
contiguous chunk with the same bootstrap state (V-trace relies on that).

Plans opt in with :class:`FreshRowsLearner`, which asks the learner to drop such rows
itself (``drop_stale_rows=True``), under the learner's lock, in the same call as the
update: a reset can never slip in between the check and the update. A plain
``learn_on_batch`` call still trains on exactly the batch it is given (a caller replaying
a saved batch on purpose gets what it asked for). Dropping at the update, not upstream,
keeps a plan live: a step whose rows were all stale still happens (as a no-op) and is
still followed by a weight broadcast, so samplers that missed one catch up.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from league.batch import MultiAgentBatch, SampleBatch
from league.sampling.versioning import WEIGHTS_VERSION

if TYPE_CHECKING:
    from league.runtime.faces import Grads, LearnerHandle, Stats

__all__ = ["FreshRows", "select_fresh_rows", "FreshRowsLearner", "FRESHNESS_STATS"]

#: Statistics a learner adds per trained policy when it drops rows (all floats):
#: the policy's version and epoch after the call, rows trained on, the mean lag of those
#: rows, and the rows dropped so far (stale / from another epoch) since the policy was added.
FRESHNESS_STATS = (
    "weights_version",
    "weights_epoch",
    "rows_trained",
    "policy_lag_mean",
    "stale_rows_dropped",
    "old_epoch_rows_dropped",
)


class FreshRows(NamedTuple):
    """Outcome of :func:`select_fresh_rows` on one policy's batch."""

    #: The rows to learn from (the input batch itself when nothing was dropped).
    batch: SampleBatch
    #: Rows dropped for a lag above ``max_policy_lag``.
    stale: int
    #: Rows dropped for coming from another epoch.
    old_epoch: int
    #: Mean ``version - row version`` over the kept rows (0.0 when unknown or none kept).
    lag_mean: float


def select_fresh_rows(batch: SampleBatch, version: int, epoch: int, max_lag: int | None) -> FreshRows:
    """The rows of ``batch`` produced by this lineage's weights at most ``max_lag`` updates ago.

    A batch without a ``weights_version`` column is kept whole: nothing says which
    weights produced it (rows recorded by hand, policies without a version).
    """
    if WEIGHTS_VERSION not in batch or len(batch) == 0:
        return FreshRows(batch, 0, 0, 0.0)
    rows = np.asarray(batch[WEIGHTS_VERSION], dtype=np.int64)
    lag = version - rows
    other_epoch = (rows < epoch) | (lag < 0)
    stale = ~other_epoch & (lag > max_lag) if max_lag is not None else np.zeros(len(rows), dtype=bool)
    keep = ~(other_epoch | stale)
    lag_mean = float(lag[keep].mean()) if keep.any() else 0.0
    if keep.all():
        return FreshRows(batch, 0, 0, lag_mean)
    return FreshRows(batch[np.flatnonzero(keep)], int(stale.sum()), int(other_epoch.sum()), lag_mean)


class FreshRowsLearner:
    """A learner as a plan's training operators should see it: updates use fresh rows only.

    ``TrainOneStep(FreshRowsLearner(learner), ...)`` calls
    ``learner.learn_on_batch(batch, policy_ids, drop_stale_rows=True)`` (and likewise
    ``compute_gradients``), so each policy trains only on rows of its current epoch at
    most its algorithm's ``max_policy_lag`` updates old. ``learner`` is a
    :class:`~league.learn.Learner`, a group, or a Ray actor handle of one. Everything
    else (weights, targets, gradients' application) goes to ``learner`` directly.
    """

    def __init__(self, learner: LearnerHandle | FreshRowsLearner) -> None:
        self.learner: LearnerHandle = learner.learner if isinstance(learner, FreshRowsLearner) else learner

    def learn_on_batch(self, batch: MultiAgentBatch, policy_ids: list[str] | None = None, **kwargs: Any) -> Stats:
        """The learner's update on the fresh rows of ``batch``."""
        from league.runtime.actors import call
        from league.runtime.faces import LearnerFace

        return call(self.learner, LearnerFace.learn_on_batch, batch, policy_ids, drop_stale_rows=True, **kwargs)

    def compute_gradients(self, batch: MultiAgentBatch, policy_ids: list[str] | None = None) -> Grads:
        """The learner's gradients on the fresh rows of ``batch``."""
        from league.runtime.actors import call
        from league.runtime.faces import LearnerFace

        return call(self.learner, LearnerFace.compute_gradients, batch, policy_ids, drop_stale_rows=True)

    def apply_gradients(self, grads: Grads) -> Stats | None:
        """Passed to the learner unchanged."""
        from league.runtime.actors import call
        from league.runtime.faces import LearnerFace

        return call(self.learner, LearnerFace.apply_gradients, grads)

    def __repr__(self) -> str:
        return f"FreshRowsLearner({self.learner!r})"
