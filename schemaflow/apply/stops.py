"""Stopping an apply when asked to: SIGINT (Ctrl-C) and SIGTERM (a CI job's cancel) end it between two steps.

Raised where it lands, a signal would cut a metastore call in half: py4j's connection is then left
mid-answer, later calls on it fail with tracebacks of their own, and the step it cut may be half
written. While an apply runs its steps, the first SIGINT or SIGTERM is only noted (and said); the
executor stops before the next step, as after a failed one, and says what was applied and what was
not. A second signal stops at once (``KeyboardInterrupt``), leaving the step that runs begun: its
object keeps this run's claim, which the next apply takes over and finishes.

Before the steps (while the plan is made, at the confirmation, while the objects are claimed) nothing is written
that a stop could cut: SIGINT, and SIGTERM too (``terminated``), stop at once there, and the apply says that nothing
was applied.

Signal handlers belong to the main thread: an apply run in another thread (a test's) is stopped as
any code there is.
"""
from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class StopRequest:
    """The signal that asked the apply to stop, once one has."""

    def __init__(self) -> None:
        self.signal: int | None = None

    @property
    def name(self) -> str:
        return signal.Signals(self.signal).name if self.signal is not None else ""


@contextmanager
def stop_between_steps() -> Iterator[StopRequest]:
    """While inside: SIGINT and SIGTERM are noted in the ``StopRequest`` yielded (and said on stderr), a second
    one raises ``KeyboardInterrupt``; the handlers before are put back on the way out."""
    request = StopRequest()
    if threading.current_thread() is not threading.main_thread():
        yield request
        return

    def noted(signum: int, frame: FrameType | None) -> None:
        if request.signal is not None:
            raise KeyboardInterrupt(signal.Signals(signum).name)
        request.signal = signum
        sys.stderr.write(f"\n{request.name}: stopping once the step that runs has landed (signal again to stop at "
                         "once, leaving it begun) ...\n")
        sys.stderr.flush()

    before = {signum: signal.getsignal(signum) for signum in SIGNALS}
    for signum in SIGNALS:
        signal.signal(signum, noted)
    try:
        yield request
    finally:
        for signum, handler in before.items():
            signal.signal(signum, handler)


def signal_name(stop: KeyboardInterrupt) -> str:
    """The signal a ``KeyboardInterrupt`` stands for: the one its text names (``stop_between_steps``,
    ``terminated``), else SIGINT, which Python raises it for."""
    named = str(stop)
    return named if named in {signum.name for signum in SIGNALS} else signal.SIGINT.name


@contextmanager
def terminated() -> Iterator[None]:
    """While inside: SIGTERM raises ``KeyboardInterrupt`` as SIGINT does (Python's default for it ends the process
    there and then, saying nothing); the handler before is put back on the way out."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt(signal.Signals(signum).name)

    before = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)
