"""Learners: policies on devices, updated from batches.

- :class:`Algorithm` / :class:`PolicyState`: the contract through which a learner hosts
  any algorithm, owned here (:mod:`league.learn.algorithm`); :mod:`league.algos`
  implements it, one layer up, so nothing here imports an algorithm.
- :class:`Learner`: any number of policies on one device (in-process or a Ray actor).
- :class:`LearnerGroup` / :class:`LearnerConfig`: learners as Ray actors with resource
  requests, policies assigned by mapping or by size (:mod:`league.learn.placement`);
  :class:`LearnerConfig` is also the run config's ``learner:`` section.
- :class:`DataParallelLearner` / :class:`DataParallelGroup`: one big policy on N
  replicas with averaged gradients (:mod:`league.learn.data_parallel`).
- :class:`StackedModels`: K same-shaped models updated as one (:mod:`league.learn.stacking`).
- :mod:`league.learn.staleness`: which rows a policy may learn from (weights versions,
  epochs after resets and restores, ``max_policy_lag``); plans train through
  :class:`~league.learn.staleness.FreshRowsLearner`.

None of these imports Ray at import time.
"""

from league.learn.algorithm import Algorithm, PolicyState
from league.learn.data_parallel import DataParallelGroup, DataParallelLearner, shard_batch
from league.learn.learner import Learner
from league.learn.placement import LearnerConfig, LearnerGroup, assign_policies, gpus_needed, resource_requests
from league.learn.stacking import StackedModels

__all__ = [
    "Algorithm",
    "PolicyState",
    "Learner",
    "LearnerGroup",
    "LearnerConfig",
    "assign_policies",
    "gpus_needed",
    "resource_requests",
    "DataParallelLearner",
    "DataParallelGroup",
    "shard_batch",
    "StackedModels",
]
