"""Learners: policies on devices, updated from batches."""

from league.learn.learner import Learner

__all__ = ["Learner"]
