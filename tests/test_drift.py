"""What drift says about each changed aspect, against the declared object that was applied (no metastore:
``catalog.drift.explain`` on model objects; tests/test_drift_history_spark.py and tests/test_iceberg_spark.py
read real metastores)."""
from __future__ import annotations

from dataclasses import replace

from schemaflow.catalog.drift import explain
from schemaflow.model import Column, IcebergState, PartitionField, SortTerm, Source, Table, fingerprint

COLUMNS = (Column("ts", "timestamp"), Column("id", "bigint"), Column("v", "int"), Column("code", "string"))
DECLARED = Table("db", "clicks", COLUMNS, format="iceberg", data_source=True, properties={"format-version": "2"},
                 partition_spec=(PartitionField("day", "ts"),), sort_order=(SortTerm(PartitionField("identity", "id")),),
                 source=Source("schemas/db/clicks.yaml"))
STATE = IcebergState("9f1c-uuid", 3, 1, 1, 2, "file:/lake/db/clicks/metadata/00004-a.metadata.json")


def _live(**changes: object) -> Table:
    """The table as the metastore holds it now, applied from ``DECLARED`` and then changed by another writer."""
    return replace(DECLARED, **{"version": fingerprint(DECLARED), "iceberg": STATE, "source": None,  # type: ignore[arg-type]
                                **changes})


def test_a_column_another_writer_renamed_is_a_rename_by_its_field_id():
    live = _live(columns=(*COLUMNS[:2], Column("value", "int"), Column("label", "string"), Column("extra", "string")),
                 iceberg=replace(STATE, former_names=(("value", ("v",)), ("label", ("code",)))))
    assert explain(DECLARED, live, ("columns",)) == (
        "column v renamed to value (its Iceberg field id kept, so its values): declare it as value in "
        "schemas/db/clicks.yaml, or rename it back with a migration (- rename_column: {table: db.clicks, from: value, "
        "to: v})",
        "column code renamed to label (its Iceberg field id kept, so its values): declare it as label in "
        "schemas/db/clicks.yaml, or rename it back with a migration (- rename_column: {table: db.clicks, from: label, "
        "to: code})",
        "column extra string added: declare it in schemas/db/clicks.yaml ({name: extra, type: string}), or drop it "
        "with a migration (- drop_column: {table: db.clicks, column: extra})")


def test_a_renamed_column_also_retyped_or_moved_says_so():
    live = _live(columns=(Column("value", "bigint"), *COLUMNS[:2], COLUMNS[3]),
                 iceberg=replace(STATE, former_names=(("value", ("v", "first")),)))
    lines = explain(DECLARED, live, ("columns",))
    assert lines[0].startswith("column v renamed to value (its Iceberg field id kept")
    assert lines[1:] == ("type of column value: 'int' -> 'bigint'",
                         "order of the columns: 'ts, id, v, code' -> 'value, ts, id, code'")


def test_without_field_id_history_a_missing_column_and_a_new_one_stay_apart():
    live = _live(columns=(*COLUMNS[:3], Column("label", "string")))
    assert explain(DECLARED, live, ("columns",)) == (
        "column label string added: declare it in schemas/db/clicks.yaml ({name: label, type: string}), or drop it "
        "with a migration (- drop_column: {table: db.clicks, column: label})",
        "column code removed: the next apply adds it back, empty")


def test_a_new_partition_spec_or_sort_order_is_named_with_the_way_back():
    live = _live(partition_spec=(PartitionField("day", "ts"), PartitionField("bucket", "id", 8)), sort_order=())
    assert explain(DECLARED, live, ("layout",)) == (
        "partition spec: 'day(ts)' -> 'day(ts), bucket(8, id)': the next apply sets the declared one again (for data "
        "written after it), or declare this one in schemas/db/clicks.yaml",
        "sort order: 'id ASC NULLS FIRST' -> (none): the next apply sets the declared one again (for data written "
        "after it), or declare this one in schemas/db/clicks.yaml")


def test_when_the_schemas_changed_too_drift_points_to_the_plan():
    live = replace(_live(columns=COLUMNS[:3]), version="another")
    assert explain(DECLARED, live, ("columns",)) == (
        "the schemas changed since that apply as well: plan shows how the metastore differs from them",)
