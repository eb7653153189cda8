"""A test run stopped with SIGTERM (as a CI job's cancel stops it) ends as one stopped with Ctrl-C.

Python's default for SIGTERM is to die at once, with no ``finally`` and no fixture teardown, so the
metastore servers and the PostgreSQL server the fixtures started (each in a session of its own, out of
reach of the signal) would go on running. Raised as ``KeyboardInterrupt`` instead, the signal lets
pytest tear the fixtures down, and each server is stopped as at the end of a run. A plugin of its
own (``pytest_plugins`` in conftest.py), so that a test can run pytest with it alone.
"""
from __future__ import annotations

import signal
from types import FrameType

import pytest


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"stopped by signal {signum}")


def pytest_configure(config: pytest.Config) -> None:
    signal.signal(signal.SIGTERM, _interrupt)
