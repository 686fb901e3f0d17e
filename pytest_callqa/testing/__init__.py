"""Test helpers for pytest-callqa and the suites that use it: a fake OpenAI-compatible server.

Importing this package starts nothing; see :class:`~.fake_openai.FakeOpenAIServer`. The
names are loaded on first use so ``python -m pytest_callqa.testing.fake_openai`` runs the
module once, as ``__main__``, rather than importing it twice.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .fake_openai import FAULTS, FakeOpenAIServer, RequestInfo

__all__ = ["FAULTS", "FakeOpenAIServer", "RequestInfo"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        # Deferred so `python -m pytest_callqa.testing.fake_openai` runs the module once.
        from . import fake_openai

        return getattr(fake_openai, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
