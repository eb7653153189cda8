"""Iceberg tables planned (issue 29, items 2 and 4) with no JVM: evolution by field id, the changes Iceberg refuses
with their way out, the metastore's positional rule on its mirror, the live state read from a metadata file
pyiceberg wrote, and the next metadata a commit makes, field ids kept."""
from __future__ import annotations

import itertools
import json
from dataclasses import replace

import pytest

from schemaflow.catalog import iceberg_updates
from schemaflow.catalog.iceberg_specs import created_fields
from schemaflow.catalog.iceberg_metadata import iceberg_table
from schemaflow.model import (LIVE_STATE, Catalog, Column, DropColumn, IcebergState, Migration, PartitionField,
                              RenameColumn, SortTerm, Table, from_data, state_digest, to_data)
from schemaflow.plan.plan import PlanBuilder
from schemaflow.plan.review_check import differences
from schemaflow.plan.steps import IcebergCommit
from schemaflow.sql.iceberg_types import evolved_type, evolves, iceberg_type, promotes, spark_type

STATE = IcebergState("9f1c-uuid", 0, 0, 1, 2, "file:/lake/db/clicks/metadata/00001-a.metadata.json")
COLUMNS = (Column("ts", "timestamp"), Column("id", "bigint", "Click id"), Column("v", "int"), Column("code", "string"))
LIVE = Table("db", "clicks", COLUMNS, format="iceberg", data_source=True, properties={"format-version": "2"},
             partition_spec=(PartitionField("day", "ts"),), sort_order=(SortTerm(PartitionField("identity", "id")),),
             iceberg=STATE, version="v0")


def _plan(want: Table, live: Table = LIVE, migrations: tuple[Migration, ...] = (), type_rule: bool = True):
    desired = Catalog(databases=("db",), objects={want.key: want}, migrations=migrations)
    return PlanBuilder(desired, Catalog(databases=("db",), objects={live.key: live}), type_rule=type_rule).build()


def _want(*columns: Column, **changes: object) -> Table:
    return replace(LIVE, columns=columns, iceberg=None, version=None, **changes)  # type: ignore[arg-type]


def test_a_column_is_added_anywhere_and_kept_columns_keep_their_field_ids():
    want = _want(COLUMNS[0], Column("channel", "string"), *COLUMNS[1:])
    # On a metastore without its positional rule: with it, code string where v int was is refused (see below).
    [step] = _plan(want, type_rule=False).steps
    assert step.kind == "alter_iceberg_table" and not step.blocked and not step.hazards
    assert step.summary == "alter Iceberg table db.clicks: add channel string after ts"
    [commit, stamp] = step.actions
    assert isinstance(commit, IcebergCommit) and commit.requires == STATE and not commit.create
    assert commit.sources == {"code": "code", "id": "id", "ts": "ts", "v": "v"}
    assert commit.describe() == (
        "-- iceberg commit db.clicks (requires table 9f1c-uuid, schema 0, spec 0, sort order 1): columns (ts timestamp, "
        "channel string (new), id bigint COMMENT 'Click id', v int, code string); partitioned by (day(ts)); sorted by "
        "(id ASC NULLS FIRST)")
    assert stamp.object == "db.clicks"


def test_renames_and_drops_come_from_migrations_and_a_promotion_changes_no_data():
    migration = Migration("0001_clicks", "", (RenameColumn("db.clicks", "v", "val"), DropColumn("db.clicks", "code")))
    want = _want(Column("val", "bigint"), *COLUMNS[:2])
    [step] = _plan(want, migrations=(migration,), type_rule=False).steps
    assert not step.blocked and step.destructive
    assert step.summary == ("alter Iceberg table db.clicks: rename v to val (0001_clicks); drop code (0001_clicks); "
                            "reorder columns: val, ts, id; change type of val from int to bigint")
    assert step.hazards == ("drop code: its values stay in the data files, and no reader sees them",)
    assert step.actions[0].sources == {"id": "id", "ts": "ts", "val": "v"}  # type: ignore[union-attr]
    # Without the migration the diff cannot tell a rename from a drop and an add: the same contract as a Hive table.
    [blocked, *_] = _plan(want, type_rule=False).steps
    assert blocked.blocked and blocked.blocked.startswith("column v of db.clicks disappears is not supported in place")


def test_a_column_another_writer_renamed_is_offered_back_by_its_field_id():
    # Live, v became value (and code became label) in another writer's commits; the schemas still declare v and code.
    renamed = replace(LIVE, columns=(*COLUMNS[:2], Column("value", "int"), Column("label", "string")),
                      iceberg=replace(STATE, former_names=(("value", ("v",)), ("label", ("code",)))))
    [blocked, *_] = _plan(_want(*COLUMNS), renamed, type_rule=False).steps
    assert blocked.summary == "column value of db.clicks was v (the same Iceberg field id), and v is declared on db.clicks"
    assert blocked.blocked.endswith(
        "declare it as value to keep the rename, or rename it back with a migration: - rename_column: "
        "{table: db.clicks, from: value, to: v}")
    migration = Migration("0002_back", "", (RenameColumn("db.clicks", "value", "v"),
                                            RenameColumn("db.clicks", "label", "code")))
    [step] = _plan(_want(*COLUMNS), renamed, (migration,), type_rule=False).steps
    assert not step.blocked and step.actions[0].sources == {  # type: ignore[union-attr]
        "code": "label", "id": "id", "ts": "ts", "v": "value"}


def test_each_disappearing_column_is_offered_its_own_target():
    # Without field-id history (a Hive table, or an Iceberg table's first schema), the twins pair up in order.
    live = replace(LIVE, columns=(*COLUMNS[:2], Column("a", "int"), Column("b", "int")))
    problems = [s.summary for s in _plan(_want(*COLUMNS[:2], Column("c", "int"), Column("d", "int")), live,
                                         type_rule=False).steps]
    assert problems[:2] == ["column a of db.clicks disappears and c (int) appears on db.clicks",
                            "column b of db.clicks disappears and d (int) appears on db.clicks"]
    # A field id's earlier name comes first: b was d, so a is offered c.
    history = replace(live, iceberg=replace(STATE, former_names=(("b", ("d",)),)))
    problems = [s.summary for s in _plan(_want(*COLUMNS[:2], Column("c", "int"), Column("d", "int")), history,
                                         type_rule=False).steps]
    assert problems[:2] == ["column a of db.clicks disappears and c (int) appears on db.clicks",
                            "column b of db.clicks was d (the same Iceberg field id), and d is declared on db.clicks"]


@pytest.mark.parametrize(("old", "new", "allowed"), [
    ("int", "bigint", True), ("float", "double", True), ("decimal(10,2)", "decimal(12,2)", True),
    ("bigint", "int", False), ("int", "string", False), ("decimal(10,2)", "decimal(12,3)", False),
    ("int", "double", False), ("date", "timestamp", False)])
def test_iceberg_promotes_only_its_own_widenings(old: str, new: str, allowed: bool):
    assert promotes(old, new) is allowed
    live = replace(LIVE, columns=(*COLUMNS, Column("x", old)))
    [step] = _plan(_want(*COLUMNS, Column("x", new)), live).steps
    if allowed:
        assert not step.blocked and step.summary.endswith(f"change type of x from {old} to {new}")
    else:
        assert step.blocked == (f"changing the type of x from {old} to {new} is not supported in place: Iceberg changes "
                                "a column's type in place only from int to bigint, from float to double, by raising a "
                                "decimal's precision at the same scale, or by adding fields to a struct (keeping each "
                                "of its fields): add a column of the new type, fill it from the old one, and drop the "
                                "old one with a migration (- drop_column: ...)")


@pytest.mark.parametrize("old, new, allowed", [
    ("struct<a:int>", "struct<a:int,b:string>", True), ("struct<a:int,b:string>", "struct<b:string,a:bigint>", True),
    ("array<struct<a:int>>", "array<struct<a:int,n:map<string,int>>>", True),
    ("map<string,struct<a:int>>", "map<string,struct<a:int,b:date>>", True),
    ("struct<a:int,b:string>", "struct<a:int>", False), ("struct<a:int>", "struct<a:string>", False),
    ("map<string,int>", "map<bigint,int>", False), ("array<int>", "struct<a:int>", False)])
def test_a_struct_gains_fields_in_place_at_any_depth(old: str, new: str, allowed: bool):
    assert evolves(old, new) is allowed
    live = replace(LIVE, columns=(*COLUMNS, Column("x", old)))
    # The metastore's positional rule refuses any change of a complex type on its mirror: off here.
    [step] = _plan(_want(*COLUMNS, Column("x", new)), live, type_rule=False).steps
    assert bool(step.blocked) is not allowed
    if allowed:
        [step] = _plan(_want(*COLUMNS, Column("x", new)), live).steps
        assert step.blocked and "hive.metastore.disallow.incompatible.col.type.changes" in step.blocked


def test_a_struct_that_gains_fields_keeps_the_ids_of_those_it_had():
    ids = itertools.count(20)
    old = iceberg_type("struct<a:int,b:array<struct<c:int>>>", ids)
    evolved = evolved_type(old, "struct<b:array<struct<d:string,c:bigint>>,a:int,e:map<string,int>>", ids)
    assert spark_type(evolved) == "struct<b:array<struct<d:string,c:bigint>>,a:int,e:map<string,int>>"

    def named_ids(type_: dict, path: str = "") -> dict[str, int]:
        found = {}
        for field in type_.get("fields", ()):
            found[path + field["name"]] = field["id"]
            inner = field["type"]
            if isinstance(inner, dict) and inner["type"] == "list":
                found[path + field["name"] + "[]"] = inner["element-id"]
                inner = inner["element"]
            if isinstance(inner, dict):
                found |= named_ids(inner, path + field["name"] + ".")
        return found
    before, after = named_ids(old), named_ids(evolved)
    assert {k: after[k] for k in before} == before  # every field kept keeps its id
    assert sorted(set(after) - set(before)) == ["b.d", "e"] and min(after["b.d"], after["e"]) > max(before.values())


def test_the_metastores_positional_rule_on_its_mirror_is_known_before_apply():
    reordered = _want(COLUMNS[0], COLUMNS[3], COLUMNS[1], COLUMNS[2])  # string where bigint was, and so on
    [step] = _plan(reordered).steps
    assert step.blocked and "hive.metastore.disallow.incompatible.col.type.changes" in step.blocked
    assert "Iceberg's own documentation asks for that check to be off" in step.blocked
    [step] = _plan(reordered, type_rule=False).steps
    assert not step.blocked and step.summary == "alter Iceberg table db.clicks: reorder columns: ts, code, id, v"


def test_spec_sort_order_and_comment_change_in_the_same_commit():
    want = _want(*COLUMNS, partition_spec=(PartitionField("month", "ts"), PartitionField("bucket", "id", 8)),
                 sort_order=(), comment="Clicks")
    [step] = _plan(want).steps
    assert step.summary == ("alter Iceberg table db.clicks: partition spec (day(ts)) -> (month(ts), bucket(8, id)); "
                            "sort order (id ASC NULLS FIRST) -> (none); change the table's comment")
    assert "data written from now on follows the new layout; files already written keep theirs" in step.notes
    assert step.values == ("comment on table db.clicks: (none) -> 'Clicks'",)


def test_what_an_iceberg_table_cannot_take_is_blocked_with_the_way_out():
    [step] = _plan(_want(*COLUMNS, properties={"format-version": "1"})).steps
    assert step.blocked == ("lowering format-version from 2 to 1 is not supported in place: an Iceberg table's format "
                            "version only goes up: declare format-version: '2'")
    unreadable = replace(LIVE, iceberg=None, properties={"metadata_location": "s3://lake/x.metadata.json"})
    [step] = _plan(_want(*COLUMNS), unreadable).steps
    assert step.blocked and "its Iceberg metadata file could not be read here" in step.blocked
    hive = replace(LIVE, format="parquet", data_source=False, partition_spec=(), sort_order=(), iceberg=None)
    [step] = _plan(hive, LIVE).steps  # an Iceberg table does not become a Hive one in place
    assert step.blocked and step.summary.startswith("changing storage (format USING iceberg -> STORED AS parquet)")
    # The other way is a conversion (tests/test_iceberg_conversion_plan.py), which keeps the Hive partitions.
    [step] = _plan(_want(*COLUMNS), hive).steps
    assert step.blocked == ("converting to Iceberg partitioned by (day(ts)) is not supported in place: a conversion "
                            "keeps the Hive partitions: declare no partitioned_by, convert, then change the partition "
                            "spec in a later change (Iceberg evolves it without rewriting)")


def test_a_plan_from_files_is_the_plan_against_the_metastore_but_for_what_only_the_metadata_knows():
    want = _want(*COLUMNS, Column("extra", "string"))
    assert differences(_plan(want, replace(LIVE, iceberg=None)), _plan(want)) == []


def test_types_between_iceberg_and_spark():
    ids = itertools.count(10)
    nested = iceberg_type("struct<a:int,b:array<map<string,decimal(12,2)>>>", ids)
    assert nested == {"type": "struct", "fields": [
        {"id": 10, "name": "a", "required": False, "type": "int"},
        {"id": 11, "name": "b", "required": False, "type": {
            "type": "list", "element-id": 12, "element-required": False, "element": {
                "type": "map", "key-id": 13, "key": "string", "value-id": 14, "value": "decimal(12, 2)",
                "value-required": False}}}]}
    assert spark_type(nested) == "struct<a:int,b:array<map<string,decimal(12,2)>>>"
    assert [spark_type(t) for t in ("long", "timestamptz", "timestamp", "uuid", "fixed[16]", "decimal(38, 0)")] == [
        "bigint", "timestamp", "timestamp_ntz", "string", "binary", "decimal(38,0)"]


def _created() -> dict:
    """The first metadata file of db.clicks, as pyiceberg writes it for a commit that creates the table."""
    pyiceberg = iceberg_updates.pyiceberg_parts()
    table = replace(LIVE, iceberg=None, version=None)
    ids = itertools.count(1)
    fields = [iceberg_updates.new_field(c, ids) for c in table.columns]
    by_name = {f["name"]: f["id"] for f in fields}
    metadata = pyiceberg.new_table_metadata(
        pyiceberg.Schema.model_validate({"type": "struct", "schema-id": 0, "fields": fields}),
        pyiceberg.PartitionSpec.model_validate({"spec-id": 0, "fields": created_fields(
            table.partition_spec, by_name, itertools.count(1000))}),
        pyiceberg.SortOrder.model_validate({"order-id": 1, "fields": iceberg_updates.order_fields(table.sort_order,
                                                                                                    by_name)}),
        "/lake/db/clicks", {"schemaflow.version": "v0"})
    data: dict = json.loads(metadata.model_dump_json())
    return data


def test_a_commit_evolves_the_metadata_by_field_id_and_reads_back_as_declared():
    base = _created()
    before = iceberg_table("db", "clicks", base, "/lake/db/clicks/metadata/00000-a.metadata.json")
    assert before.columns == COLUMNS and before.partition_spec == LIVE.partition_spec
    assert before.sort_order == LIVE.sort_order and before.version == "v0"
    want = _want(Column("val", "bigint"), Column("channel", "string", "new"), *COLUMNS[:2],
                 partition_spec=(PartitionField("day", "ts"), PartitionField("bucket", "id", 4)), sort_order=())
    updates = iceberg_updates.layout_updates(base, want, {"val": "v", "ts": "ts", "id": "id"})
    metadata = iceberg_updates.evolved(base, "/lake/db/clicks/metadata/00000-a.metadata.json", updates,
                                       {"schemaflow.version": "v1", "schemaflow.applied_state": LIVE_STATE}, [], None,
                                       "db.clicks")
    data = json.loads(metadata.model_dump_json())
    after = iceberg_table("db", "clicks", data, "x")
    assert after.columns == want.columns and after.partition_spec == want.partition_spec and after.sort_order == ()
    old_ids = {f["name"]: f["id"] for f in base["schemas"][0]["fields"]}
    new_ids = {f["name"]: f["id"] for f in data["schemas"][-1]["fields"]}
    assert (new_ids["val"], new_ids["ts"], new_ids["id"]) == (old_ids["v"], old_ids["ts"], old_ids["id"])
    assert new_ids["channel"] == base["last-column-id"] + 1
    spec = data["partition-specs"][-1]["fields"]
    assert [(f["field-id"], f["name"], f["transform"]) for f in spec] == [(1000, "ts_day", "day"),
                                                                          (1001, "id_bucket_4", "bucket[4]")]
    assert data["default-sort-order-id"] == 0  # Iceberg's unsorted order
    assert after.version == "v1"
    assert metadata.properties["schemaflow.applied_state"] == state_digest(after)
    # The metadata keeps every schema: what a field id was called before is read back with the table.
    assert after.iceberg is not None and after.iceberg.former_names == (("val", ("v",)),)
    assert after.iceberg == replace(after.iceberg, former_names=())  # no part of what a commit requires


def test_a_snapshot_keeps_where_the_live_metadata_stands():
    data = json.loads(json.dumps(to_data(LIVE)))
    assert data["iceberg"]["schema_id"] == 0 and "iceberg" not in to_data(replace(LIVE, iceberg=None))
    again = from_data(data)
    assert again == LIVE and isinstance(again, Table) and again.iceberg == STATE
    assert state_digest(again) == state_digest(replace(LIVE, iceberg=None))  # where it stands is no part of its state


def test_a_format_version_1_spec_keeps_each_field_in_its_place():
    v1 = replace(LIVE, properties={"format-version": "1"},
                 partition_spec=(PartitionField("day", "ts"), PartitionField("bucket", "id", 4)))
    moved = _want(*COLUMNS, properties={"format-version": "1"},
                  partition_spec=(PartitionField("identity", "code"), PartitionField("bucket", "id", 4)))
    [step] = _plan(moved, v1).steps
    assert step.blocked == (
        "changing the partition spec of a format-version 1 table to (code, bucket(4, id)) is not supported in place: "
        "format version 1 keeps each partition field in its place (a field removed turns void, one added comes "
        "after): declare partitioned_by: [bucket(4, id), code], or declare format-version: '2' (the upgrade and the "
        "new spec land in one commit)")
    for allowed in (replace(moved, partition_spec=(PartitionField("bucket", "id", 4), PartitionField("identity", "code"))),
                    replace(moved, properties={"format-version": "2"})):
        [step] = _plan(allowed, v1).steps
        assert not step.blocked, step.blocked


def test_a_format_version_1_commit_voids_a_removed_field_in_its_place_and_appends_the_new():
    base = _created()
    base = {**base, "format-version": 1}
    want = _want(*COLUMNS, properties={"format-version": "1"},
                 partition_spec=(PartitionField("identity", "code"),))
    updates = iceberg_updates.layout_updates(base, want, {c.name: c.name for c in COLUMNS})
    [spec] = [u["spec"] for u in updates if u["action"] == "add-spec"]
    assert [(f["field-id"], f["name"], f["transform"]) for f in spec["fields"]] == [
        (1000, "ts_day", "void"), (1001, "code", "identity")]
