"""Work counted, not timed: the lines of Python a piece of code executes.

A bound on hostile input (a billion laughs, a chain of 5,000 operators, a folder that links to itself)
is a bound on work. Seconds depend on the machine and on what else runs beside the test; the number of
calls does not, so a test compares calls: the hostile case against a small benign one, or the same
input at two sizes, to tell linear growth from quadratic or exponential.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import FrameType
from typing import Any


def lines(run: Callable[[], Any]) -> int:
    """How many lines of Python ``run`` executes (a line run again by a loop counts again), whether it
    returns or raises."""
    count = 0

    def trace(frame: FrameType, event: str, arg: Any) -> Callable[..., Any]:
        nonlocal count
        count += event == "line"
        return trace

    previous = sys.gettrace()
    sys.settrace(trace)
    try:
        run()
    except Exception:  # noqa: BLE001 - the work done before an error counts the same; callers check the error
        pass
    finally:
        sys.settrace(previous)
    return count


def growth(run: Callable[[int], Any], size: int) -> float:
    """How many times more lines ``run(2 * size)`` executes than ``run(size)``: about 2 when the work is
    linear in the size, 4 when it is quadratic."""
    return lines(lambda: run(2 * size)) / lines(lambda: run(size))
