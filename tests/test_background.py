"""Work started in the background (``background``): run while the caller goes on, collected later, its error raised
where it is collected. The read a plan starts ahead with it is the Hive backend's (``test_backend_hive``)."""
from __future__ import annotations

import threading

import pytest

from schemaflow.background import Background
from schemaflow.errors import SchemaflowError


def test_the_work_runs_while_the_caller_goes_on_and_its_result_is_collected() -> None:
    caller_went_on = threading.Event()
    threads: list[threading.Thread] = []

    def work() -> str:
        threads.append(threading.current_thread())
        assert caller_went_on.wait(10)  # only the caller going on, before it collects, lets this finish
        return "done"

    running = Background(work, "work")
    caller_went_on.set()
    assert running.result() == "done"
    assert running.result() == "done"  # collected again: the same
    assert threads != [threading.current_thread()] and len(threads) == 1


def test_what_the_work_raised_is_raised_where_it_is_collected() -> None:
    def work() -> None:
        raise SchemaflowError("cannot reach the Hive metastore")

    running = Background(work, "work")
    with pytest.raises(SchemaflowError, match="^cannot reach the Hive metastore$"):
        running.result()
