"""Work started in the background (``background``): run while the caller goes on, collected later, its error raised
where it is collected. The read a plan starts ahead with it is the Hive backend's (``test_backend_hive``); the
catalogs without an engine share ``ReadAhead`` (here; the Glue backend's in ``test_backend_glue``)."""
from __future__ import annotations

import threading

import pytest

from schemaflow.background import Background
from schemaflow.catalog.backend import ReadAhead
from schemaflow.model import Catalog
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


def test_a_read_ahead_is_taken_by_the_read_of_the_same_databases_and_waited_for_by_another() -> None:
    reads: list[tuple[tuple[str, ...], str]] = []
    started = threading.Event()

    def read(databases: tuple[str, ...]) -> Catalog:
        reads.append((databases, threading.current_thread().name))
        started.set()
        return Catalog(databases=databases)

    ahead = ReadAhead()
    ahead.start(("a", "b"), read)
    ahead.start(("c",), read)  # one read ahead at a time: the first stays
    assert started.wait(10)
    assert ahead.take(("a", "b"), read) == Catalog(databases=("a", "b"))
    assert reads == [(("a", "b"), "catalog-read")]  # read once, in the background
    assert ahead.take(("a", "b"), read) == Catalog(databases=("a", "b"))  # taken: the next read is a read of its own
    assert reads[-1] == (("a", "b"), threading.current_thread().name)

    ahead.start(("a",), read)
    assert ahead.take(("b",), read) == Catalog(databases=("b",))  # other databases: read here, after the one ahead
    assert [databases for databases, _ in reads[-2:]] == [("a",), ("b",)]
    ahead.start((), read)  # nothing to read: nothing started
    assert ahead.take(("c",), read) == Catalog(databases=("c",)) and len(reads) == 5


def test_what_a_read_ahead_raised_is_raised_by_the_read_that_takes_it() -> None:
    def read(databases: tuple[str, ...]) -> Catalog:
        raise SchemaflowError(f"cannot reach the catalog for {databases[0]}")

    ahead = ReadAhead()
    ahead.start(("shop",), read)
    with pytest.raises(SchemaflowError, match="cannot reach the catalog for shop"):
        ahead.take(("shop",), read)
