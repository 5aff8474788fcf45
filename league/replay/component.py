"""What a replay buffer's sampler and writer share: a kind, constructor arguments, a saved state."""

from __future__ import annotations

from typing import Any, ClassVar

__all__ = ["Component"]


class Component:
    """A stateless-by-default part of a buffer; stateful ones override :meth:`state_dict`."""

    kind: ClassVar[str] = ""

    _owner: object | None = None  # the buffer it belongs to (a part serves one buffer)

    def config(self) -> dict[str, Any]:
        """JSON constructor arguments plus ``kind`` (what save files record)."""
        return {"kind": self.kind}

    def state_dict(self) -> dict[str, Any]:
        """State as plain values and numpy arrays (none by default)."""
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict` output (nothing by default)."""

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.config().items() if k != "kind")
        return f"{type(self).__name__}({args})"
