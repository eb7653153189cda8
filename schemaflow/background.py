"""Work started in a thread now and collected later, so that it overlaps what the caller does meanwhile.

``result`` waits for it and returns what it returned, or raises what it raised, in the caller's
thread: an error surfaces where the caller would have met it had it done the work itself. The
thread is a daemon: a caller that stops before collecting (a project that does not validate) does
not wait for it to finish. It runs in a copy of the caller's context (``contextvars``), so the bounds the
caller holds there hold for it too: a command's budget of metadata reads (``catalog.metadata_bounds``) is
spent by its read in the background as by its own.
"""
from __future__ import annotations

import contextvars
import threading
from typing import Generic, TypeVar
from collections.abc import Callable

T = TypeVar("T")


class Background(Generic[T]):
    """``work()`` running in a thread of its own from the moment this is made."""

    def __init__(self, work: Callable[[], T], name: str) -> None:
        self._work = work
        self._value: T | None = None
        self._error: BaseException | None = None
        context = contextvars.copy_context()
        self._thread = threading.Thread(target=context.run, args=(self._run,), name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._value = self._work()
        except BaseException as error:  # noqa: BLE001 -- handed to the caller of result(), in its thread
            self._error = error

    def wait(self) -> None:
        """Wait for ``work()`` to end, whatever it returns or raises."""
        self._thread.join()

    def result(self) -> T:
        """What ``work()`` returned, once it has; raises what it raised."""
        self.wait()
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]  # set: work() returned
