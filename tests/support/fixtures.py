"""pytest fixtures several test files share; tests/conftest.py imports them, which makes them
available to every test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from support import fuzzing


@pytest.fixture(scope="module")
def worker() -> Iterator[fuzzing.Worker]:
    """A forked reader worker of the fuzzing engine (time limit generous: the suite shares 2 cores)."""
    w = fuzzing.Worker(timeout=10.0)
    yield w
    w.close()
