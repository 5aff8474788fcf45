"""The parts of a training run that :mod:`league.trainer`'s loop uses.

``state`` (the run's built parts as one :class:`~league.run.state.Run`, and ``build_run``),
``build`` (algorithms, learner, samplers, plan from a config), ``evaluation`` (episode
results into the league, evaluation rounds), ``checkpointer`` (periodic and final checkpoints,
``summary.json``), ``budget`` (a ``train()`` call's stop criteria and deadline), ``records``
(metrics rows, summaries, checkpoints' contents, the run's counters), ``recovery`` (a dead
learner actor's policies restored).
"""
