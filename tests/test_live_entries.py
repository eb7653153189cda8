"""Drift and history read a catalog's entries (``CatalogReader.entries``: the model object and its raw parameters),
never a backend's wire shapes: here over a reader that holds the model alone, as a backend other than the Hive
metastore does; and the Hive metastore's reader gives as entries exactly the objects its ``read`` gives."""
from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace

import pytest

from schemaflow.capabilities import Capabilities
from schemaflow.catalog.backend import LiveEntry
from schemaflow.catalog.drift import MISSING, OUTSIDE, UNRECORDED, UNREAD, Drift, read_drift
from schemaflow.catalog.history import Applied, Entry, read_history, with_entries
from schemaflow.model import (APPLIED_AT_KEY, APPLIED_COMMIT_KEY, APPLIED_STATE_KEY, DROPPED_PREFIX, HISTORY_PREFIX,
                              MIGRATION_PREFIX, VERSION_KEY, Column, Database, Object, Table, state_digest)
from tests.catalogs import DAILY, ORDERS, applied, catalog, table

AT, COMMIT = "2026-12-01T10:00:00Z", "4f2a9c1d0e7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f"


@dataclass
class ModelReader:
    """The read side of a catalog that keeps the model and raw parameters (no Thrift anywhere)."""

    held: dict[str, list[LiveEntry]]
    properties: dict[str, Mapping[str, str]] = field(default_factory=dict)
    endpoint: str = "model:"

    def databases(self) -> tuple[str, ...]:
        return tuple(sorted(self.held))

    def database(self, name: str) -> Database:
        return Database(name, properties=self.properties.get(name, {}))

    def entries(self, database: str) -> Iterable[LiveEntry]:
        return self.held[database]


def stamped(obj: Object, **more: str) -> LiveEntry:
    """``obj`` as an apply at ``AT`` of ``COMMIT`` left it: its stamp in its parameters."""
    return LiveEntry(obj, {"owner": "sales-eng", VERSION_KEY: obj.version or "", APPLIED_STATE_KEY: state_digest(obj),
                           APPLIED_AT_KEY: AT, APPLIED_COMMIT_KEY: COMMIT, **more})


def test_drift_over_entries_names_what_changed_and_what_is_missing_unrecorded_or_outside() -> None:
    declared = catalog(ORDERS, DAILY, table("retail.gone", "id:int"), table("retail.bare", "id:int"))
    live = applied(declared).objects
    orders, daily = live["retail.orders"], live["retail.daily"]
    reader = ModelReader({"retail": [stamped(orders), stamped(daily), LiveEntry(live["retail.bare"], {})]})
    assert read_drift(reader, declared.objects, ("retail",)) == [
        Drift("retail.bare", (UNRECORDED,)), Drift("retail.gone", (MISSING,))]

    wider = replace(orders, columns=orders.columns + (Column("coupon", "string"),))
    unread = replace(daily, comment="Daily")  # a view: compared, its comment changed
    reader.held["retail"] = [LiveEntry(wider, stamped(orders).parameters), LiveEntry(unread, stamped(daily).parameters),
                             LiveEntry(table("retail.notebook", "a:int"), {}),
                             stamped(replace(table("retail.lake", "a:int"), unreadable="its metadata file is gone"))]
    assert read_drift(reader, declared.objects, ("retail",), left_alone=lambda obj: obj.name == "lake") == [
        Drift("retail.bare", (MISSING,)),
        Drift("retail.daily", ("comment",), AT, COMMIT, ("comment: (none) -> 'Daily'",)),
        Drift("retail.gone", (MISSING,)),
        Drift("retail.lake", (UNREAD,), AT, COMMIT, unreadable="its metadata file is gone"),
        Drift("retail.notebook", (OUTSIDE,)),
        Drift("retail.orders", ("columns",), AT, COMMIT, (
            "column coupon string added: declare it in schemas/ ({name: coupon, type: string}), or drop it with a "
            "migration (- drop_column: {table: retail.orders, column: coupon})",)),
    ]


def test_history_over_entries_reads_the_stamps_migrations_and_the_database_records() -> None:
    orders = applied(catalog(ORDERS)).objects["retail.orders"]
    lines = [Entry("2026-11-30T09:00:00Z", "create", "table", "v1", COMMIT), Entry(AT, "change", "table", "v2", COMMIT)]
    properties = {HISTORY_PREFIX + "orders": with_entries(None, lines),
                  DROPPED_PREFIX + "old": json.dumps({"at": "2026-11-29T08:00:00Z", "kind": "view", "version": "v0"})}
    migration = {MIGRATION_PREFIX + "0001_backfill": json.dumps({"at": "2026-11-30T09:30:00Z", "commit": COMMIT})}
    reader = ModelReader({"retail": [stamped(replace(orders, version="v2"), **migration)], "other": []},
                         {"retail": properties})
    assert read_history(reader, ("retail",)) == [
        Applied("2026-11-29T08:00:00Z", "retail.old", "dropped view (version v0)", None, "drop"),
        Applied("2026-11-30T09:00:00Z", "retail.orders", "version v1", COMMIT, "create"),
        Applied("2026-11-30T09:30:00Z", "retail.orders", "migration 0001_backfill", COMMIT, "migration"),
        Applied(AT, "retail.orders", "version v2", COMMIT, "change"),  # the stamp repeats it: shown once
    ]
    assert read_history(reader, ("retail",), ("retail.o*",))[0].object == "retail.old"
    assert read_history(reader, ("other",)) == []


@pytest.mark.parametrize("capabilities, kept", [(Capabilities(), 38), (Capabilities(value_limit=None), 200)])
def test_an_objects_history_keeps_what_its_catalogs_value_limit_holds(capabilities: Capabilities, kept: int) -> None:
    lines = [Entry(f"2026-12-01T10:{n // 60:02}:{n % 60:02}Z", "change", "table", f"{n:016x}", COMMIT)
             for n in range(200)]
    value = with_entries(None, lines, capabilities.value_limit)
    data = json.loads(value)
    assert (len(data["applies"]), data["earlier"]) == (kept, 200 - kept)
    assert data["applies"][-1][3] == f"{199:016x}"  # the newest kept, the oldest let go


@pytest.mark.spark
def test_the_hive_readers_entries_are_its_read_with_the_raw_parameters(
        spark: object, metastore: object, fresh_db: Callable[[], str]) -> None:
    from schemaflow.catalog.hive.metastore import Metastore

    assert isinstance(metastore, Metastore)
    db = fresh_db()
    sql = spark.sql  # type: ignore[attr-defined]
    sql(f"CREATE TABLE {db}.hive_t (a INT COMMENT 'The id', b STRING) PARTITIONED BY (ds STRING) STORED AS ORC "
        "TBLPROPERTIES ('team' = 'sales', 'schemaflow.version' = 'v1')")
    sql(f"CREATE TABLE {db}.source_t (a INT, b DECIMAL(5,2)) USING parquet COMMENT 'A data source'")
    sql(f"CREATE VIEW {db}.v AS SELECT a FROM {db}.hive_t")
    entries = list(metastore.entries(db))
    assert {e.object.key: e.object for e in entries} == dict(metastore.read((db,)).objects)
    parameters = {e.object.name: e.parameters for e in entries}
    assert (parameters["hive_t"]["team"], parameters["hive_t"][VERSION_KEY]) == ("sales", "v1")
    assert parameters["source_t"]["spark.sql.sources.provider"] == "parquet"
    assert "view.catalogAndNamespace.numParts" in parameters["v"] or "view.default.database" in parameters["v"]
    hive_t = next(e.object for e in entries if e.object.name == "hive_t")
    assert isinstance(hive_t, Table) and hive_t.version == "v1" and hive_t.properties == {"team": "sales"}
