"""Running a test module's samplers through an inference server too (issue 36).

``pytestmark = pytest.mark.usefixtures("sampler_inference")`` with ``from inference_helpers
import sampler_inference`` runs every test of the module twice: with each ``Sampler`` built
as the test builds it (``local``), and with a fresh ``InferenceServer`` on CPU handed to each
sampler the test builds without one (``server``): the server path must pass every sampler test.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from league.sampling import Sampler
from league.sampling.inference import InferenceServer

#: Servers built for the test now running (a test may inspect them).
SERVERS: list[InferenceServer] = []


@pytest.fixture(params=["local", "server"])
def sampler_inference(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """``local`` or ``server``: where the samplers built in this test run their forward passes."""
    SERVERS.clear()
    if request.param == "server":
        original = Sampler.__init__

        def with_server(self: Sampler, *args: Any, **kwargs: Any) -> None:
            if kwargs.get("inference") is None:
                server = InferenceServer("cpu", torch_threads=0)
                SERVERS.append(server)
                kwargs["inference"] = server
            original(self, *args, **kwargs)

        monkeypatch.setattr(Sampler, "__init__", with_server)
    yield request.param
    SERVERS.clear()
