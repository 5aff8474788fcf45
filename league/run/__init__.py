"""The parts of a training run that :mod:`league.trainer`'s loop uses.

``build`` (algorithms, learner, samplers, plan from a config), ``evaluation`` (episode
results into the league, evaluation rounds), ``recovery`` (a dead learner actor's
policies restored).
"""
