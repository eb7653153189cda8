"""Work started in the background (``background``), and the live read a plan starts before it parses
the project's files (``catalog.live.Live.read_ahead``), with a stand-in for the Thrift reader: the real one
is read ahead against a metastore server in ``test_thrift_reader_remote``."""
from __future__ import annotations

import io
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from schemaflow.background import Background
from schemaflow.catalog import thrift_reader
from schemaflow.errors import SchemaflowError
from schemaflow.model import Catalog
from schemaflow.project import Project, Settings
from schemaflow.catalog.live import Live


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


class FakeReader:
    """Reads ``catalog`` in whichever thread asks; records who asked for what."""

    def __init__(self, catalog: Catalog, refuse: BaseException | None = None) -> None:
        self.catalog, self.refuse = catalog, refuse
        self.reads: list[tuple[tuple[str, ...], threading.Thread]] = []
        self.started = threading.Event()
        self.slow: set[tuple[str, ...]] = set()  # reads that last a moment
        self.reading = self.overlapped = False  # two reads at once on one connection

    def read(self, databases: tuple[str, ...]) -> Catalog:
        self.overlapped |= self.reading
        self.reading = True
        self.reads.append((databases, threading.current_thread()))
        self.started.set()
        try:
            if databases in self.slow:
                time.sleep(0.1)
            if self.refuse is not None:
                raise self.refuse
            return self.catalog
        finally:
            self.reading = False


def live_with(monkeypatch: pytest.MonkeyPatch, reader: Any, tmp_path: Path, direct: bool = True,
              **settings: Any) -> Live:
    monkeypatch.setattr(thrift_reader.ThriftReader, "connect", classmethod(lambda cls, uri: reader))
    project = Project(tmp_path, Settings(metastore_uri="thrift://metastore:9083", **settings))
    return Live(project, progress=io.StringIO(), direct=direct)


def test_a_read_ahead_reads_in_the_background_and_the_read_of_those_databases_takes_it(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    catalog = Catalog(databases=("sales",))
    reader = FakeReader(catalog)
    live = live_with(monkeypatch, reader, tmp_path)
    live.read_ahead(("sales",))
    assert reader.started.wait(10)  # before anyone reads
    assert live.read(("sales",)) is catalog
    assert [(databases, thread is threading.current_thread()) for databases, thread in reader.reads] == [
        (("sales",), False)]
    # Said where a read without it says it, when the caller reaches the read.
    assert live.progress.getvalue() == "Reading thrift://metastore:9083 ...\n"  # type: ignore[attr-defined]
    # Taken once: a second read, or a read of other databases, reads again.
    assert live.read(("sales",)) is catalog and live.read(("hr",)) is catalog
    assert [(databases, thread is threading.current_thread()) for databases, thread in reader.reads] == [
        (("sales",), False), (("sales",), True), (("hr",), True)]


def test_a_read_ahead_of_other_databases_than_the_read_is_not_used(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    reader = FakeReader(Catalog())
    live = live_with(monkeypatch, reader, tmp_path)
    reader.slow.add(("sales",))
    live.read_ahead(("sales",))
    assert reader.started.wait(10)
    live.read(("hr", "sales"))
    assert [databases for databases, _ in reader.reads] == [("sales",), ("hr", "sales")]
    assert not reader.overlapped  # the read waited for the one ahead to end: they share a connection


def test_an_error_of_a_read_ahead_is_raised_by_the_read(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    reader = FakeReader(Catalog(), refuse=SchemaflowError("reading the tables of database sales: refused"))
    live = live_with(monkeypatch, reader, tmp_path)
    live.read_ahead(("sales",))
    assert reader.started.wait(10)
    with pytest.raises(SchemaflowError, match="^reading the tables of database sales: refused$"):
        live.read(("sales",))


@pytest.mark.parametrize("settings, direct, databases", [
    ({}, True, ()),  # the files name the databases: unknown before they are parsed
    ({}, False, ("sales",)),  # apply: reads through Spark
    ({"targets": {"prod": {}}}, True, ("sales",)),  # targets, none chosen: the read says so
])
def test_nothing_is_read_ahead_where_the_read_would_not_be_direct_or_its_databases_are_unknown(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, settings: dict[str, Any], direct: bool,
        databases: tuple[str, ...]) -> None:
    reader = FakeReader(Catalog())
    live = live_with(monkeypatch, reader, tmp_path, direct, **settings)
    live.read_ahead(databases)
    assert live.backend._ahead is None and reader.reads == []  # type: ignore[attr-defined]
