"""Shared pytest fixtures.

``ray_session``: a local Ray instance shared by the whole test session. Request it in
any test that creates actors or tasks (and mark the test ``@pytest.mark.ray``)::

    @pytest.mark.ray
    def test_remote_thing(ray_session):
        actor = MyActor.options(num_cpus=0).remote()
        ...
        ray.kill(actor)

Ray starts once, on the first test that asks for it (``num_cpus=2``, no dashboard), and
shuts down when the session ends; tests must not call ``ray.init``/``ray.shutdown``
themselves. Create actors with ``num_cpus=0`` so tests never wait for CPUs held by
actors of other tests, and kill the actors you create. The fixture returns the ``ray``
module.

Ray workers cannot import test modules (``tests/`` is not on their path). To run a class
defined in a test file as an actor, ship the module by value first:
``ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])``.
"""

from __future__ import annotations

from collections.abc import Iterator
from types import ModuleType

import pytest


@pytest.fixture(scope="session")
def ray_session() -> Iterator[ModuleType]:
    """The ``ray`` module, initialised once for the whole test session."""
    ray = pytest.importorskip("ray")
    ray.init(address="local", num_cpus=2, include_dashboard=False, ignore_reinit_error=True)
    yield ray
    ray.shutdown()


@pytest.fixture(scope="session", autouse=True)
def _one_torch_thread() -> Iterator[None]:
    """Tests run on 2 busy cores: one intra-op thread avoids oversubscription stalls."""
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)
