"""Work shared among processes on this machine's cores: forks of this one where that is safe.

Reading a project's files is Python through and through, and one process uses one core: ``fmt``
formats the files in a process per core (``pool``), and every command that reads the schemas reads
half of a large project's files, and analyses half of its views, in a fork of itself (``halves``).
Forks start fastest and have what this process has imported and read, without it being sent to
them; a fork of a process that runs other threads could deadlock (one may hold a lock the fork
copies held), so such a process (a program that embeds schemaflow, a test runner's) starts ``fmt``'s
workers from a fork server, and does the halves' work itself (``forks_safely``).
"""
from __future__ import annotations

import multiprocessing
import os
import pickle
import signal
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from typing import TypeVar
from collections.abc import Callable, Sequence

Item = TypeVar("Item")
Result = TypeVar("Result")


def forks_safely() -> bool:
    """Whether a fork of this process would start safely: the platform forks, and this process runs one thread."""
    return "fork" in multiprocessing.get_all_start_methods() and threads() == 1


def pool(workers: int, preload: str) -> ProcessPoolExecutor:
    """``workers`` processes: forks of this one, which start fastest (a fork server took 0.8 s to 4 s
    for 250 files, measured), unless ``forks_safely`` says no: then from a fork server, which imports the
    module ``preload`` (where the work is) once for them all. Where neither is to be had, the platform's way."""
    methods = multiprocessing.get_all_start_methods()
    method = "fork" if forks_safely() else "forkserver"
    if method not in methods:
        return ProcessPoolExecutor(workers)
    context = multiprocessing.get_context(method)
    if method == "forkserver":
        context.set_forkserver_preload([preload])
    return ProcessPoolExecutor(workers, mp_context=context)


def threads() -> int:
    """How many threads this process runs: as the OS counts them where it says (Linux, as Python's own
    fork warning counts them), which includes threads started below ``threading`` (a test runner's)."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return threading.active_count()


def ended(before: int, seconds: float = 1.0) -> None:
    """Wait (up to ``seconds``) until the system counts no more threads in this process than ``before``: threads that
    have ended in Python (joined) may still be exiting (measured: on a busy machine), and ``forks_safely`` counts the
    system's."""
    deadline = time.monotonic() + seconds
    while threads() > before and time.monotonic() < deadline:
        time.sleep(0.001)


def halves(work: Callable[[Sequence[Item]], Result], items: Sequence[Item], at_least: int) -> list[Result]:
    """``work`` of ``items``: ``[work(items)]``, or, for ``at_least`` items or more where two cores and a safe fork
    are to be had, ``[work(first half), work(second half)]``, the second worked at the same time in a fork of
    this process and pickled back. ``work`` must print nothing and leave no state behind that the caller
    reads: what it returns is all that comes back. Should the fork fail, its half is worked here."""
    if len(items) < at_least or (os.cpu_count() or 1) < 2 or not forks_safely():
        return [work(items)]
    first, second = items[:len(items) // 2], items[len(items) // 2:]
    reading, writing = os.pipe()
    child = os.fork()
    if child == 0:  # the fork: its half pickled into the pipe, then gone, running none of this process's exit code
        code = 1
        try:
            os.close(reading)
            with os.fdopen(writing, "wb") as out:
                pickle.dump(work(second), out, protocol=pickle.HIGHEST_PROTOCOL)
            code = 0
        finally:
            os._exit(code)
    os.close(writing)
    with os.fdopen(reading, "rb") as given:
        try:
            mine = work(first)
            sent = given.read()
        except BaseException:  # interrupted, or work failed here: the fork is not waited for
            os.kill(child, signal.SIGKILL)
            os.waitpid(child, 0)
            raise
    _, status = os.waitpid(child, 0)
    return [mine, pickle.loads(sent) if status == 0 else work(second)]
