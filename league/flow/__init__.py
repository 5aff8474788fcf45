"""Dataflow plans: training loops as short chains of named operators over streams of data.

In the spirit of "Distributed RL is a Dataflow Problem" (RLlib Flow): sources pull data
from samplers (Ray actors or local objects), operators transform, store, train and
broadcast, and a plan is a lazy :class:`LocalIterator` stepped in the driver::

    rollouts = ParallelRollouts(samplers, mode="bulk_sync")
    train = (rollouts.for_each(SelectExperiences(["main"]))
             .combine(ConcatBatches(4000))
             .for_each(StandardizeFields(["advantages"]))
             .for_each(TrainOneStep(learner))
             .for_each(BroadcastWeights(learner, samplers)))
    plan = StandardMetricsReporting(train, samplers)
    print(plan)          # the operator graph
    report = next(plan)  # one iteration's metrics

Errors inside an operator or a remote actor surface as :class:`PlanError` naming the
operator and its path. Operators know nothing algorithm-specific. Calling actors and
local objects alike, and surviving sampler restarts, is the runtime layer's
(:mod:`league.runtime`), below this one.
"""

from league.flow.errors import PlanError, PlanStalledError
from league.flow.iterators import PLAN_IDLE, Concurrently, LocalIterator
from league.flow.metrics import (
    LAST_TARGET_UPDATE_STEP,
    NUM_AGENT_STEPS_SAMPLED,
    NUM_AGENT_STEPS_STORED,
    NUM_AGENT_STEPS_TRAINED,
    NUM_ENV_STEPS_SAMPLED,
    NUM_ENV_STEPS_STORED,
    NUM_ENV_STEPS_TRAINED,
    NUM_SAMPLER_RESTARTS,
    NUM_STACKED_UPDATES,
    NUM_TARGET_UPDATES,
    NUM_WEIGHT_BROADCASTS,
    NUM_WEIGHT_BROADCASTS_COALESCED,
    OperatorStats,
    PlanMetrics,
    Timer,
)
from league.flow.replay_ops import CountTrainSteps, IntensityGatedReplay, UpdatePriorities
from league.flow.reporting import StandardMetricsReporting, summarize_episodes
from league.flow.sources import Dequeue, ParallelIterator, ParallelRollouts, Replay
from league.flow.stages import NOT_READY, Operator
from league.flow.training import (
    ApplyGradients,
    BroadcastWeights,
    ComputeGradients,
    Gradients,
    TrainOneStep,
    TrainResult,
    UpdateTargetNetwork,
)
from league.flow.transforms import (
    ConcatBatches,
    ConcatPolicyBatches,
    Enqueue,
    SelectExperiences,
    StandardizeFields,
    StoreToReplayBuffer,
    WaitUntilTimestepsElapsed,
)

__all__ = [
    "LocalIterator",
    "PLAN_IDLE",
    "Concurrently",
    "NOT_READY",
    "Operator",
    "PlanError",
    "PlanStalledError",
    "PlanMetrics",
    "Timer",
    "OperatorStats",
    "ParallelRollouts",
    "ParallelIterator",
    "Replay",
    "Dequeue",
    "SelectExperiences",
    "ConcatBatches",
    "ConcatPolicyBatches",
    "StandardizeFields",
    "StoreToReplayBuffer",
    "Enqueue",
    "WaitUntilTimestepsElapsed",
    "TrainOneStep",
    "TrainResult",
    "ComputeGradients",
    "ApplyGradients",
    "Gradients",
    "UpdateTargetNetwork",
    "BroadcastWeights",
    "StandardMetricsReporting",
    "summarize_episodes",
    "NUM_ENV_STEPS_SAMPLED",
    "NUM_AGENT_STEPS_SAMPLED",
    "NUM_ENV_STEPS_TRAINED",
    "NUM_AGENT_STEPS_TRAINED",
    "NUM_ENV_STEPS_STORED",
    "NUM_AGENT_STEPS_STORED",
    "NUM_TARGET_UPDATES",
    "LAST_TARGET_UPDATE_STEP",
    "NUM_WEIGHT_BROADCASTS",
    "NUM_WEIGHT_BROADCASTS_COALESCED",
    "NUM_SAMPLER_RESTARTS",
    "NUM_STACKED_UPDATES",
]
