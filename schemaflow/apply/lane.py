"""A second lane for an apply's writes: a step's last write runs while the next step's statements do.

A step ends with its stamp, one ``get_table`` and one guarded ``alter_table`` of its own object
(about 7-15 ms on a PostgreSQL-backed metastore server), and the next step's ``CREATE`` or
``ALTER`` need not wait for it. Handed to a lane, the stamp runs in a thread of its own, on a
second connection to the metastore, while the executor goes on (bench/scale.py: creating 5,500
objects took 1.55x the bare statements with every stamp in turn).

At most one write is in the lane: handing it another first waits for the one in it, so a failure
is met before a second step has begun, and what a failed apply reports stays exact. The thread is
one for the whole apply (each Python thread that calls into the JVM has a py4j connection of its
own) and a daemon, so a process that stops does not wait for it.
"""
from __future__ import annotations

import queue
import threading
from collections.abc import Callable


class LaneFailed(Exception):
    """The write in the lane, the last of step ``index`` (0-based), raised ``cause``."""

    def __init__(self, index: int, cause: Exception) -> None:
        super().__init__(str(cause))
        self.index = index
        self.cause = cause


class Lane:
    """Runs the writes handed to it, one at a time, in a thread of its own."""

    def __init__(self) -> None:
        self._writes: queue.Queue[Callable[[], None] | None] = queue.Queue()
        self._outcomes: queue.Queue[Exception | None] = queue.Queue()
        self._pending: tuple[int, str] | None = None  # the step and object of the write in the lane
        self._thread = threading.Thread(target=self._run, name="apply-lane", daemon=True)
        self._thread.start()

    @property
    def pending(self) -> str | None:
        """The object the write in the lane is for, if one is."""
        return self._pending[1] if self._pending else None

    def hand(self, index: int, key: str, write: Callable[[], None]) -> None:
        """Run ``write`` (the last write of step ``index``, to ``key``) in the lane, once the one in it has landed."""
        self.wait()
        self._pending = (index, key)
        self._writes.put(write)

    def wait(self) -> None:
        """Wait for the write in the lane, if any; raise ``LaneFailed`` if it failed."""
        if self._pending is None:
            return
        (index, _), self._pending = self._pending, None
        failure = self._outcomes.get()
        if failure is not None:
            raise LaneFailed(index, failure)

    def close(self) -> None:
        """End the thread, once the write in it, if any, has ended (its outcome is dropped: ``wait`` first)."""
        if self._pending is not None:
            self._outcomes.get()
            self._pending = None
        self._writes.put(None)
        self._thread.join()

    def _run(self) -> None:
        while (write := self._writes.get()) is not None:
            try:
                write()
            except Exception as error:  # noqa: BLE001 -- handed to the executor's thread by wait()
                self._outcomes.put(error)
            else:
                self._outcomes.put(None)
