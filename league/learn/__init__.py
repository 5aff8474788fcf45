"""Learners: policies on devices, updated from batches."""

from league.learn.learner import HostedPolicy, Learner

__all__ = ["Learner", "HostedPolicy"]
