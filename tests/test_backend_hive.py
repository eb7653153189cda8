"""The Hive metastore as a catalog backend (``catalog.hive.backend``, ``hive``), in what it does without a JVM: the
backend a project gets by default, what it says it reads, which metastore it reads without Spark, the hints a plan
gets, and the read a plan starts ahead in the background, with a stand-in for the Thrift reader (the real one is read
ahead against a metastore server in ``test_thrift_reader_remote``). What it does through Spark is tested in the
``*_spark`` modules, and against metastore servers in the ``*_remote`` ones."""
from __future__ import annotations

import io
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from schemaflow.catalog.hive import thrift_reader
from schemaflow.catalog.backends import DEFAULT, Opening, backend_names, open_backend
from schemaflow.catalog.hive.backend import HiveBackend, direct_uri
from schemaflow.catalog.live import Live
from schemaflow.errors import SchemaflowError
from schemaflow.model import Catalog
from schemaflow.project import Project, Settings

URI = "thrift://metastore:9083"


def backend(tmp_path: Path, direct: bool = False, **settings: Any) -> HiveBackend:
    """The ``hive`` backend of a project with ``settings``, as the registry opens it."""
    opened = open_backend(Project(tmp_path, Settings(**settings)), Opening(io.StringIO(), direct))
    assert isinstance(opened, HiveBackend)
    return opened


def test_it_is_the_backend_a_project_gets_by_default_and_connects_nothing_until_asked(tmp_path: Path) -> None:
    assert (Settings().metastore_type, DEFAULT) == ("hive", "hive") and "hive" in backend_names()
    opened = backend(tmp_path, direct=True)
    assert opened.connected is None and opened._reader is None  # nothing is connected until asked


def test_it_says_which_metastore_it_reads_and_on_which_target(tmp_path: Path) -> None:
    assert backend(tmp_path, derby_dir="/p/.schemaflow").where() == "the embedded metastore in /p/.schemaflow"
    assert backend(tmp_path, metastore_uri=URI, target="prod").where() == f"{URI} (target prod)"
    with pytest.raises(SchemaflowError, match=r"^schemaflow.yaml defines targets \(prod\) and none was chosen: "):
        backend(tmp_path, metastore_uri=URI, targets={"prod": {}}).where()


@pytest.mark.parametrize("settings, read", [
    ({}, None),  # the embedded metastore: read through Spark, or through its local server (test_local_server)
    ({"metastore_uri": URI}, URI),
    ({"metastore_uri": URI, "spark_conf": {"spark.hadoop.hive.metastore.sasl.enabled": "true"}}, None),
    ({"metastore_uri": URI, "spark_conf": {"spark.hive.metastore.client.socket.timeout": "600"}}, None),
    ({"metastore_uri": URI, "spark_conf": {"spark.sql.hive.metastore.version": "2.3.10"}}, URI),  # which client: no tuning
    ({"metastore_uri": URI, "spark_conf": {"spark.sql.session.timeZone": "UTC"}}, URI),
], ids=["embedded", "thrift", "sasl", "client timeout", "client release", "spark setting"])
def test_a_thrift_metastore_is_read_without_a_jvm_unless_the_user_tunes_its_client(
        settings: dict[str, Any], read: str | None) -> None:
    assert direct_uri(Settings(**settings)) == read


def test_an_embedded_metastore_gives_a_plan_no_hints(tmp_path: Path) -> None:
    assert backend(tmp_path, direct=True).hints() is None


# --- the read a plan starts ahead ----------------------------------------------------------------

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
    project = Project(tmp_path, Settings(metastore_uri=URI, **settings))
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
