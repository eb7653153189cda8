"""The journal of a rewrite's copy (``catalog.hive.rewrite_copy``), on a stand-in for the staging table's metastore entry:
marks appended in pieces a metastore keeps, read back with the last mark of each unit winning. The real metastore
is in tests/test_rewrite_spark.py and tests/test_rewrite_remote.py."""
from __future__ import annotations

from typing import Any

from schemaflow.catalog.hive.rewrite_copy import COPIED_PREFIX, MARK_CHARACTERS, PLANNED, Copying, _mark, _marks, journal_keys
from schemaflow.model import VERSION_KEY, Table, Column


class Parameters(dict):
    """A table's parameters as py4j shows a Java map."""

    def keySet(self) -> list[str]:
        return list(self)

    def put(self, key: str, value: str) -> None:
        self[key] = value


class Entry:
    def __init__(self) -> None:
        self.parameters = Parameters({VERSION_KEY: "claim", PLANNED: "digest"})

    def getParameters(self) -> Parameters:
        return self.parameters


class Client:
    def __init__(self) -> None:
        self.entry, self.writes = Entry(), []

    @property
    def msc(self) -> Any:
        return self

    def getTable(self, database: str, name: str) -> Entry:
        return self.entry

    def retrying(self, read: Any) -> Any:
        return read()

    def alter(self, table: Entry, expected: str | None) -> None:
        self.writes.append(expected)


PLAN = Copying("db.t", "db.t_rewrite_", Table("db", "t", (Column("id", "int"),), (Column("ds", "string"),)),
               (), (("ds", "string"),), (("ds", "string"),))


def test_a_chunk_of_many_long_partition_values_is_journaled_in_pieces_a_metastore_keeps_in_one_write() -> None:
    client = Client()
    marks = {(f"{i:04d}-" + "x" * 200,): f"{i}:3:1732700000000" for i in range(1000)}
    _mark(client, PLAN, marks)  # type: ignore[arg-type]
    pieces = [k for k in client.entry.parameters if k.startswith(COPIED_PREFIX)]
    assert len(pieces) > 1 and all(len(client.entry.parameters[k]) <= MARK_CHARACTERS for k in pieces)
    assert client.writes == ["claim"]  # one write, guarded by the copy's own stamp
    assert _marks(client.entry.parameters) == marks


def test_a_later_mark_replaces_an_earlier_one_and_an_empty_one_unmarks() -> None:
    client = Client()
    _mark(client, PLAN, {("a",): "1:1:1", ("b",): "2:1:1", (None,): "0:0:1"})  # type: ignore[arg-type]
    _mark(client, PLAN, {("a",): "5:2:9", ("b",): ""})  # type: ignore[arg-type]
    assert _marks(client.entry.parameters) == {("a",): "5:2:9", (None,): "0:0:1"}
    assert journal_keys(client.entry.parameters) == [f"{COPIED_PREFIX}000000", f"{COPIED_PREFIX}000001", PLANNED]
