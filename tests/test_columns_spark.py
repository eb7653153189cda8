"""Column evolution on a real metastore: Hive's alter_table_cascade.q outcomes, hazards proven on data.

Each case plans from the live table, applies through Spark and the metastore client, and reads the
outcome back: the table's columns, every partition's column list, Spark's copy of the schema, and
the rows Spark returns for data written before the change.
"""
from __future__ import annotations

import json
from decimal import Decimal
from dataclasses import replace

import pytest

from tests.inprocess import schemaflow

from schemaflow.apply.executor import apply_plan
from schemaflow.catalog.hive import columns as metastore_columns
from schemaflow.catalog.hive.jvm import JAVA_ERRORS, jvm_view
from schemaflow.plan import changes as plan_changes
from schemaflow.errors import SchemaflowError
from schemaflow.model import Catalog, Column, DropColumn, Migration, Partitions, PartitionsMode, RenameColumn, ReorderColumns, Table
from schemaflow.plan.plan import Plan, PlanBuilder
from schemaflow.plan.rewrite import REWRITE_BLOCK
from schemaflow.spark_version import spark_name, spark_version

pytestmark = pytest.mark.spark


def cols(*spec: str) -> tuple[Column, ...]:
    return tuple(Column(*c.split(":", 1)) for c in spec)


def plan(metastore, want: Table, *migrations: Migration, check_partitions: bool = False,
         allow_destructive: bool = False) -> Plan:
    live = metastore.read((want.database,))
    return PlanBuilder(Catalog((want.database,), {want.key: want}, migrations), live,
                       count_partitions=metastore.count_partitions, stale_partitions=metastore.stale_partitions,
                       check_partitions=check_partitions, allow_destructive=allow_destructive).build()


def evolve(metastore, want: Table, *migrations: Migration, allow_destructive: bool = False) -> Plan:
    result = plan(metastore, want, *migrations, allow_destructive=allow_destructive)
    apply_plan(result, metastore)
    return result


def table_columns(metastore, table: Table) -> list[str]:
    return [f"{c.getName()}:{c.getType()}" for c in metastore.msc.getTable(table.database, table.name).getSd().getCols()]


def partition_columns(metastore, table: Table) -> dict[str, list[str]]:
    partitions = metastore.msc.listPartitions(table.database, table.name, -1)
    return {p.getValues()[0]: [f"{c.getName()}:{c.getType()}" for c in p.getSd().getCols()] for p in partitions}


def spark_schema(metastore, table: Table) -> list[str]:
    stored = json.loads(metastore.msc.getTable(table.database, table.name).getParameters()["spark.sql.sources.schema"])
    return [f["name"] for f in stored["fields"]]


def migration(number: int, *changes) -> Migration:
    return Migration(f"{number:04d}_step", "", changes)


@pytest.fixture
def cascade_table(spark, metastore, fresh_db):
    """Hive's alter_table_cascade.q set-up: a text table with a partition per day."""
    db = fresh_db()
    table = Table(db, "alter1", cols("key:string", "value:string"), cols("ds:string"), format="textfile")
    apply_plan(plan(metastore, table), metastore)
    for ds in ("2008-04-08", "2008-04-09"):
        spark.sql(f"INSERT INTO {db}.alter1 PARTITION (ds='{ds}') VALUES ('k', 'v')")
    return table


def test_cascade_every_partition_follows_each_step(spark, metastore, cascade_table):
    t = cascade_table
    steps = [
        (cols("key:string", "value:string", "c1:int"), ()),                                          # add, cascaded
        (cols("key:string", "value:string", "c1:bigint"), ()),                                       # retype
        (cols("key:string", "value2:string", "c1:bigint"), (RenameColumn(t.key, "value", "value2"),)),  # rename
        (cols("value2:string", "key:string", "c1:bigint"), (ReorderColumns(t.key, ("value2", "key", "c1")),)),
        (cols("value2:string", "key:string"), (DropColumn(t.key, "c1"),)),                          # replace
    ]
    for number, (columns, changes) in enumerate(steps, 1):
        want = replace(t, columns=columns)
        mode = (PartitionsMode(t.key, Partitions.CASCADE),) if number == 1 else ()  # an append cascades only when asked
        # Text files are read by position: the reorder shows rows written before under the wrong columns, allowed.
        evolve(metastore, want, migration(number, *changes, *mode), allow_destructive=number == 4)
        expected = [f"{c.name}:{c.type}" for c in columns]
        assert table_columns(metastore, t) == expected, number
        assert partition_columns(metastore, t) == {"2008-04-08": expected, "2008-04-09": expected}, number
        assert spark_schema(metastore, t) == [c.name for c in columns] + ["ds"], number
        assert spark.table(f"{t.database}.alter1").columns == [c.name for c in columns] + ["ds"]
    assert plan(metastore, replace(t, columns=steps[-1][0])).is_empty


def test_a_partition_key_comment_changes_the_table_alone_and_keeps_what_restrict_left(spark, metastore,
                                                                                       cascade_table):
    """Partitions keep no keys: a key's comment cascades nothing (it once undid a restrict change, so that
    Hive read the old partitions with the new types)."""
    t = cascade_table
    want = replace(t, columns=cols("key:string", "value2:string"))
    evolve(metastore, want, migration(1, RenameColumn(t.key, "value", "value2"), PartitionsMode(t.key, Partitions.RESTRICT)))
    old = ["key:string", "value:string"]
    assert partition_columns(metastore, t) == {"2008-04-08": old, "2008-04-09": old}

    commented = replace(want, partition_columns=(Column("ds", "string", "Load date"),))
    [step] = evolve(metastore, commented, migration(1, RenameColumn(t.key, "value", "value2"),
                                                    PartitionsMode(t.key, Partitions.RESTRICT))).steps
    assert not any(getattr(action, "cascade", False) for action in step.actions)
    keys = metastore.msc.getTable(t.database, t.name).getPartitionKeys()
    assert [(k.getName(), k.getComment()) for k in keys] == [("ds", "Load date")]  # read back
    assert partition_columns(metastore, t) == {"2008-04-08": old, "2008-04-09": old}  # as restrict left them
    assert step.summary == f"alter columns of {t.key}: change comment of partition column ds"
    assert step.values == ("comment of partition column ds: (none) -> 'Load date'",)
    assert not step.hazards  # no partition keeps anything it did not keep before

    # With an appended column in the same edit: still no cascade, so the restrict stands (Hive once read the
    # old partitions with the new types when a cascade "repaired" them here).
    appended = replace(commented, columns=commented.columns + cols("c3:int"),
                       partition_columns=(Column("ds", "string", "Day loaded"),))
    [step] = evolve(metastore, appended, migration(1, RenameColumn(t.key, "value", "value2"),
                                                   PartitionsMode(t.key, Partitions.RESTRICT))).steps
    assert step.summary == f"alter columns of {t.key}: add c3 int; change comment of partition column ds"
    assert "comment of partition column ds: 'Load date' -> 'Day loaded'" in step.values
    assert not any(getattr(action, "cascade", False) for action in step.actions)
    assert table_columns(metastore, t) == ["key:string", "value2:string", "c3:int"]
    assert partition_columns(metastore, t) == {"2008-04-08": old, "2008-04-09": old}


def test_partitions_an_append_left_behind_are_not_stale_and_others_still_are(tmp_path, spark, metastore, fresh_db):
    """After a table-only append the plan called safe, plan --check-partitions agrees: nothing to repair."""
    db = fresh_db()
    (tmp_path / "schemas" / db).mkdir(parents=True)
    (tmp_path / "schemaflow.yaml").write_text(f"databases: [{db}]\n")
    table = tmp_path / "schemas" / db / "t.yaml"
    table.write_text(f"table: {db}.t\ncolumns:\n  - {{name: a, type: int}}\npartitioned_by:\n"
                     "  - {name: ds, type: string}\n")
    project = ["--project", str(tmp_path)]
    assert schemaflow(*project, "apply", "--auto-approve").code == 0
    spark.sql(f"INSERT INTO {db}.t PARTITION (ds='1') VALUES (1)")
    spark.sql(f"INSERT INTO {db}.t PARTITION (ds='2') VALUES (2)")
    table.write_text(table.read_text().replace("  - {name: a, type: int}\n", "  - {name: a, type: int}\n"
                                               "  - {name: b, type: string}\n"))
    appended = schemaflow(*project, "plan")
    assert "note: table only: 2 partitions keep their old column list" in appended.out, appended.out
    assert "hazard" not in appended.out
    assert schemaflow(*project, "apply", "--auto-approve").code == 0
    checked = schemaflow(*project, "plan", "--check-partitions")
    assert (checked.code, checked.out, checked.err) == (0, f"No changes: the metastore matches the schemas "
                                                           f"(databases: {db}).\n", "")
    # A list that is not the table's first columns is stale still: here a comment another tool changed.
    values = jvm_view(spark).java.util.ArrayList()
    values.add("1")
    partition = metastore.msc.getPartition(db, "t", values)
    partition.getSd().getCols().get(0).setComment("theirs")
    metastore.msc.alter_partition(db, "t", partition)
    stale = schemaflow(*project, "plan", "--check-partitions")
    assert stale.code == 0
    assert stale.out.splitlines()[:2] == [
        f"No changes: the metastore matches the schemas (databases: {db}).",
        f"warning: {db}.t: 1 of 2 partitions have a stale column list (left by restrict changes or other tools); "
        f"repair them with a migration: - partitions: {{table: {db}.t, mode: cascade}}"]


def test_restrict_changes_the_table_only_and_later_partitions_carry_the_new_list(spark, metastore, cascade_table):
    t = cascade_table
    want = replace(t, columns=cols("key:string", "value2:string", "c1:int"))
    result = evolve(metastore, want, migration(1, RenameColumn(t.key, "value", "value2"), PartitionsMode(t.key, Partitions.RESTRICT)))
    assert "restrict: 2 partitions keep their old column list" in result.steps[0].hazards[-1]
    assert table_columns(metastore, t) == ["key:string", "value2:string", "c1:int"]
    old = ["key:string", "value:string"]
    assert partition_columns(metastore, t) == {"2008-04-08": old, "2008-04-09": old}
    spark.sql(f"INSERT INTO {t.database}.alter1 PARTITION (ds='2008-04-10') VALUES ('k', 'v', 1)")
    assert partition_columns(metastore, t)["2008-04-10"] == ["key:string", "value2:string", "c1:int"]

    # A plan that changes nothing finds them when asked to check every table's partitions.
    checked = plan(metastore, want, migration(1, RenameColumn(t.key, "value", "value2"), PartitionsMode(t.key, Partitions.RESTRICT)),
                   check_partitions=True)
    assert checked.warnings == (f"{t.key}: 2 of 3 partitions have a stale column list (left by restrict changes or "
                                f"other tools); repair them with a migration: - partitions: {{table: {t.key}, mode: cascade}}",)
    # The planner now sees stale partitions; a cascade migration repairs them (the metastore's own
    # CASCADE ignores a table whose columns do not change, so the batched path does it).
    repair = plan(metastore, want, migration(2, PartitionsMode(t.key, Partitions.CASCADE)))
    assert "2 of 3 partitions have a stale column list; this cascade repairs them" in repair.steps[0].notes
    apply_plan(repair, metastore)
    new = ["key:string", "value2:string", "c1:int"]
    assert partition_columns(metastore, t) == {"2008-04-08": new, "2008-04-09": new, "2008-04-10": new}
    assert plan(metastore, want).is_empty


def test_batched_cascade_rewrites_only_stale_partitions_so_it_resumes(spark, metastore, fresh_db, monkeypatch):
    db = fresh_db()
    t = Table(db, "big", cols("a:int", "b:string"), cols("ds:string"), format="parquet")
    apply_plan(plan(metastore, t), metastore)
    spark.sql(f"INSERT INTO {db}.big PARTITION (ds) SELECT id, 'x', CAST(id AS STRING) FROM range(7)")
    messages: list[str] = []
    metastore.progress = messages.append
    monkeypatch.setattr(plan_changes, "BATCHED_CASCADE_ABOVE", 3)
    monkeypatch.setattr(metastore_columns, "PARTITION_BATCH", 3)
    try:
        want = replace(t, columns=cols("a:bigint", "b:string"))
        evolve(metastore, want)
        assert set(map(tuple, partition_columns(metastore, t).values())) == {("a:bigint", "b:string")}
        assert messages == [f"{db}.big: 3 partitions checked, 3 rewritten", f"{db}.big: 6 partitions checked, 6 rewritten",
                            f"{db}.big: 7 partitions checked, 7 rewritten"]
        # A second run finds nothing left to rewrite: a stopped run resumes where it was.
        assert metastore_columns.cascade_in_batches(metastore, want.key, want.columns) == 0
    finally:
        metastore.progress = None


# --- hazards: every claim the plan makes about existing data, proven on data -------------------

# (format, old columns, new columns, migration changes, the row written before, what Spark reads
#  after the change (None: the query fails), and the words of the hazard the plan must state)
HAZARD_CASES = [
    ("parquet", ("a:int", "b:string", "c:string"), ("a:int", "b2:string", "c:string"), ("rename b b2",),
     "1, 'b', 'c'", (1, None, "c"), "b2 reads NULL in existing data"),
    ("orc", ("a:int", "b:string", "c:string"), ("a:int", "b2:string", "c:string"), ("rename b b2",),
     "1, 'b', 'c'", (1, None, "c"), "b2 reads NULL in existing data"),
    ("avro", ("a:int", "b:string", "c:string"), ("a:int", "b2:string", "c:string"), ("rename b b2",),
     "1, 'b', 'c'", (1, None, "c"), "b2 reads NULL in existing data"),
    ("textfile", ("a:int", "b:string", "c:string"), ("a:int", "b2:string", "c:string"), ("rename b b2",),
     "1, 'b', 'c'", (1, "b", "c"), None),
    ("parquet", ("a:int", "b:string", "c:string"), ("a:int", "c:string", "b:string"), ("reorder a c b",),
     "1, 'b', 'c'", (1, "c", "b"), None),
    ("textfile", ("a:int", "b:string", "c:string"), ("a:int", "c:string", "b:string"), ("reorder a c b",),
     "1, 'b', 'c'", (1, "b", "c"), "existing rows show values under the wrong columns"),
    ("sequencefile", ("a:int", "b:string", "c:string"), ("a:int", "c:string", "b:string"), ("reorder a c b",),
     "1, 'b', 'c'", (1, "b", "c"), "existing rows show values under the wrong columns"),
    ("textfile", ("a:int", "b:string", "c:string"), ("a:int", "c:string"), ("drop b",),
     "1, 'b', 'c'", (1, "b"), "the columns after it show the wrong values"),
    ("parquet", ("a:int", "b:string", "c:string"), ("a:int", "c:string"), ("drop b",),
     "1, 'b', 'c'", (1, "c"), "no reader sees them"),
    ("parquet", ("a:int", "b:string"), ("a:bigint", "b:string"), (), "1, 'b'", (1, "b"), None),
    ("parquet", ("a:int", "b:tinyint"), ("a:int", "b:int"), (), "1, CAST(2 AS TINYINT)", (1, 2), None),
    ("parquet", ("a:int", "b:int"), ("a:int", "b:decimal(12,2)"), (), "1, 2", (1, 2), None),
    ("parquet", ("a:int", "b:float"), ("a:int", "b:double"), (), "1, CAST(2.5 AS FLOAT)", (1, 2.5), None),
    ("parquet", ("a:int", "b:decimal(10,2)"), ("a:int", "b:decimal(12,2)"), (), "1, 2.5BD", (1, Decimal("2.50")), None),
    ("parquet", ("a:int", "b:decimal(5,2)"), ("a:int", "b:decimal(12,2)"), (), "1, 2.5BD", (1, Decimal("2.50")), None),
    ("parquet", ("a:int", "b:string"), ("a:string", "b:string"), (), "1, 'b'", None, "queries over them fail"),
    ("parquet", ("a:int", "b:decimal(10,2)"), ("a:int", "b:double"), (), "1, 2.5BD", None, "queries over them fail"),
    ("avro", ("a:int", "b:string"), ("a:string", "b:string"), (), "1, 'b'", None, "queries over them fail"),
    ("avro", ("a:int", "b:int"), ("a:int", "b:decimal(12,2)"), (), "1, 2", None, "queries over them fail"),
    ("orc", ("a:int", "b:string"), ("a:string", "b:string"), (), "1, 'b'", ("1", "b"), None),
    ("textfile", ("a:int", "b:string"), ("a:string", "b:string"), (), "1, 'b'", ("1", "b"), None),
]


# Spark 3.5's Parquet reader converts no widening that changes how the files store values
# (plan.hazards): there, these parquet cases (old columns, new columns) fail to read, and the plan
# says so, naming the release.
NOT_READ_BEFORE_SPARK_4 = {(("a:int", "b:string"), ("a:bigint", "b:string")),
                           (("a:int", "b:int"), ("a:int", "b:decimal(12,2)")),
                           (("a:int", "b:float"), ("a:int", "b:double")),
                           (("a:int", "b:decimal(5,2)"), ("a:int", "b:decimal(12,2)"))}


def _changes(key: str, words: tuple[str, ...]):
    for text in words:
        verb, *args = text.split()
        match verb:
            case "rename":
                yield RenameColumn(key, *args)
            case "drop":
                yield DropColumn(key, *args)
            case "reorder":
                yield ReorderColumns(key, tuple(args))


@pytest.mark.parametrize("fmt, old, new, changes, written, read, hazard", HAZARD_CASES,
                         ids=[f"{c[0]}-{'-'.join(c[3]) or c[1][-1] + '>' + c[2][-1]}" for c in HAZARD_CASES])
def test_each_stated_hazard_is_what_spark_reads(spark, metastore, fresh_db, fmt, old, new, changes, written, read, hazard):
    if fmt == "parquet" and (old, new) in NOT_READ_BEFORE_SPARK_4 and spark_version() < (4, 0):
        read, hazard = None, f"{spark_name(spark_version())} cannot read existing parquet files"
    db = fresh_db()
    table = Table(db, "t", cols(*old), cols("ds:string"), format=fmt)
    apply_plan(plan(metastore, table), metastore)
    spark.sql(f"INSERT INTO {db}.t PARTITION (ds='old') VALUES ({written})")

    # Allowed as a drop is: a rename in files read by name, whose hazard is what this reads back.
    result = evolve(metastore, replace(table, columns=cols(*new)), migration(1, *_changes(table.key, changes)),
                    allow_destructive=True)
    hazards = result.steps[0].hazards
    assert [h for h in hazards if hazard and hazard in h] != [] if hazard else hazards == (), hazards
    select = f"SELECT {', '.join(c.split(':')[0] for c in new)} FROM {db}.t"
    if read is None:
        with pytest.raises(JAVA_ERRORS):
            spark.sql(select).collect()
    else:
        assert [tuple(r) for r in spark.sql(select).collect()] == [read]


# --- type changes the metastore refuses: rewrites, run only when allowed -----------------------

REFUSED = [
    (("a:bigint", "b:string"), ("a:int", "b:string"), ()),
    (("a:string", "b:string"), ("a:int", "b:string"), ()),
    (("a:int", "b:string"), ("a:boolean", "b:string"), ()),
    (("a:struct<x:int>", "b:string"), ("a:struct<x:bigint>", "b:string"), ()),
    (("a:int", "b:string", "c:int"), ("a:int", "c:int"), ("drop b",)),
    (("a:int", "b:string"), ("b:string", "a:int"), ("reorder b a",)),
]


@pytest.mark.parametrize("old, new, changes", REFUSED)
def test_type_changes_the_metastore_refuses_are_rewrites_run_only_when_allowed(spark, metastore, fresh_db, old, new,
                                                                               changes):
    db = fresh_db()
    table = Table(db, "t", cols(*old), cols("ds:string"), format="parquet")
    apply_plan(plan(metastore, table), metastore)
    want, migrations = replace(table, columns=cols(*new)), migration(1, *_changes(table.key, changes))
    result = plan(metastore, want, migrations)
    assert [(s.kind, s.blocked) for s in result.steps] == [("rewrite_table", REWRITE_BLOCK)]
    assert "the metastore compares types position by position and refuses that" in result.steps[0].summary
    with pytest.raises(SchemaflowError, match="blocked"):
        apply_plan(result, metastore)
    assert table_columns(metastore, table) == list(old)
    apply_plan(plan(metastore, want, migrations, allow_destructive=True), metastore)
    assert table_columns(metastore, table) == list(new)


def test_a_struct_gaining_a_field_is_no_rewrite_spark_cannot_cast_it(spark, metastore, fresh_db):
    db = fresh_db()
    table = Table(db, "t", cols("a:struct<x:int>", "b:string"), cols("ds:string"), format="parquet")
    apply_plan(plan(metastore, table), metastore)
    [step] = plan(metastore, replace(table, columns=cols("a:struct<x:int,y:int>", "b:string"))).steps
    assert step.kind == "unsupported" and step.summary.startswith(
        "change type of a from struct<x:int> to struct<x:int,y:int> on")
    assert "a rewrite converts a nested value only to a type of the same shape" in step.blocked


def test_a_spark_data_source_table_is_rewritten_only_when_allowed(spark, metastore, fresh_db):
    # Spark reads it through its own copy of the schema, and refuses to rename its columns in place.
    db = fresh_db()
    spark.sql(f"CREATE TABLE {db}.t (a INT, b STRING) USING parquet")
    want = Table(db, "t", cols("a:int", "b2:string"), format="parquet", data_source=True)
    result = plan(metastore, want, migration(1, RenameColumn(want.key, "b", "b2")))
    [step] = result.steps
    assert step.summary == f"rewrite table {db}.t: rename b to b2 (0001_step)"
    assert step.blocked == REWRITE_BLOCK
    # Declared as a Hive-format table, it is another kind of table altogether.
    as_hive = plan(metastore, replace(want, data_source=False), migration(1, RenameColumn(want.key, "b", "b2")))
    assert [s.summary for s in as_hive.steps] == [
        f"rewrite table {db}.t: storage (format 'USING parquet' -> 'STORED AS parquet')"]
    with pytest.raises(SchemaflowError, match="blocked"):
        apply_plan(result, metastore)
    assert [f.name for f in spark.table(f"{db}.t").schema.fields] == ["a", "b"]


def test_a_partition_column_comment_changes_in_the_metastore_and_in_sparks_copy(spark, metastore, fresh_db):
    db = fresh_db()
    table = Table(db, "t", cols("a:int"), cols("ds:string"), format="parquet")
    apply_plan(plan(metastore, table), metastore)
    commented = replace(table, partition_columns=(Column("ds", "string", "Load date"),))
    assert [s.kind for s in evolve(metastore, commented).steps] == ["alter_columns"]
    keys = metastore.msc.getTable(db, "t").getPartitionKeys()
    assert [(k.getName(), k.getComment()) for k in keys] == [("ds", "Load date")]
    stored = json.loads(metastore.msc.getTable(db, "t").getParameters()["spark.sql.sources.schema"])
    assert stored["fields"][-1] == {"name": "ds", "type": "string", "nullable": True, "metadata": {"comment": "Load date"}}
    assert plan(metastore, commented).is_empty
