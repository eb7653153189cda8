"""The reader-compatibility gate without a JVM: each rule's verdicts, the registry, the steps that carry them, what
blocks, and how the three renderings show them. The rules proven against the engines themselves are in
tests/test_reader_rules_spark.py."""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from schemaflow.model import Catalog, Column, DeltaState, Migration, RenameColumn, ReorderColumns, Table
from schemaflow.plan import reader_rules
from schemaflow.plan.delta import DeltaProtocol
from schemaflow.project import load_project
from schemaflow.plan.plan import HIDING_BLOCK, Plan, PlanBuilder
from schemaflow.plan.reader_rules import events, finds
from schemaflow.plan.readers import (DELTALAKE, MATRIX_READERS, READER_BLOCK, Barrier, breaks, Cannot, ChangeKind,
                                     Differs, Difference, Engine, Event, Reader, ReaderVerdict, Same, declared_readers,
                                     judge, plan_readers, rules)
from schemaflow.render import markdown, text
from schemaflow.render.review import Review
from schemaflow.spec.iceberg import WRITTEN_VERSIONS
from schemaflow.spec.schema import inlined_schema
from schemaflow.spark_version import spark_name, spark_version
from schemaflow.sql.table_kinds import Resolution
from schemaflow.sql.types import InvalidType, canonical_type
from schemaflow.workflow import review_refs
from tests.gitrepos import commit, init_repo, put_files

SPARK_35, SPARK_40 = Reader(Engine.SPARK, "3.5"), Reader(Engine.SPARK, "4.0")
HIVE, HIVE_BY_POSITION = Reader(Engine.HIVE, "3.1"), Reader(Engine.HIVE, "3.1", columns=Resolution.BY_POSITION)
TRINO, TRINO_BY_NAME = Reader(Engine.TRINO), Reader(Engine.TRINO, columns=Resolution.BY_NAME)
TRINO_BY_POSITION = Reader(Engine.TRINO, columns=Resolution.BY_POSITION)
ICEBERG, PYICEBERG = Reader(Engine.ICEBERG_JAVA, "1.10"), Reader(Engine.PYICEBERG, "0.12")
NULLS = Differs(Difference.NULLS, "total reads NULL in rows written before (the files name it amount)")
SHIFTED = Differs(Difference.OTHER_COLUMN, "rows written before show values under the wrong columns (the files are "
                                           "read by position)")


def verdict(rule: str, event: Event, reader: Reader):
    found = [v for v in judge([event], [reader]) if v.rule == rule]
    assert len(found) <= 1
    return found[0].verdict if found else None


# Rule hive-rename: readers by name read NULL, by position read right (Trino's defaults differ by format).
@pytest.mark.parametrize("format, reader, expected", [
    ("parquet", SPARK_35, NULLS), ("parquet", SPARK_40, NULLS), ("orc", SPARK_40, NULLS), ("avro", SPARK_40, NULLS),
    ("textfile", SPARK_40, Same()), ("rcfile", SPARK_35, Same()), ("sequencefile", HIVE, Same()),
    ("parquet", HIVE, NULLS), ("parquet", HIVE_BY_POSITION, Same()), ("avro", HIVE_BY_POSITION, NULLS),
    ("parquet", TRINO, NULLS), ("orc", TRINO, Same()), ("orc", TRINO_BY_NAME, NULLS),
    ("parquet", TRINO_BY_POSITION, Same()), ("textfile", TRINO_BY_NAME, Same()),
    ("parquet", ICEBERG, None), ("parquet", Reader(Engine.DELTA, protocol=3), None), ("custom", SPARK_40, None),
])
def test_hive_rename(format, reader, expected) -> None:
    assert verdict("hive-rename", Event(ChangeKind.RENAME, format, old="amount", new="total"), reader) == expected


# Rules hive-reorder and hive-drop: readers by position show another column's values.
@pytest.mark.parametrize("format, reader, expected", [
    ("textfile", SPARK_40, SHIFTED), ("parquet", SPARK_40, Same()), ("orc", TRINO, SHIFTED),
    ("orc", TRINO_BY_NAME, Same()), ("parquet", HIVE_BY_POSITION, SHIFTED), ("parquet", PYICEBERG, None),
])
def test_hive_reorder(format, reader, expected) -> None:
    assert verdict("hive-reorder", Event(ChangeKind.REORDER, format), reader) == expected


@pytest.mark.parametrize("shifts, reader, expected", [
    (True, SPARK_40, SHIFTED), (False, SPARK_40, Same()), (True, TRINO_BY_NAME, Same()), (True, ICEBERG, None),
])
def test_hive_drop(shifts, reader, expected) -> None:
    assert verdict("hive-drop", Event(ChangeKind.DROP, "textfile" if reader != TRINO_BY_NAME else "orc", column="c",
                                      shifts=shifts), reader) == expected


# Rule spark-type-change: Spark 3.5's Parquet reader converts none of 4.x's widenings (plan.hazards' facts).
@pytest.mark.parametrize("format, old, new, reader, readable", [
    ("parquet", "int", "bigint", SPARK_40, True), ("parquet", "int", "bigint", SPARK_35, False),
    ("parquet", "tinyint", "int", SPARK_35, True), ("parquet", "int", "string", SPARK_40, False),
    ("parquet", "decimal(5,2)", "decimal(7,2)", SPARK_35, True), ("orc", "int", "bigint", SPARK_35, True),
    ("parquet", "decimal(10,2)", "decimal(12,4)", SPARK_40, True),
    ("parquet", "decimal(10,2)", "decimal(11,1)", SPARK_40, False),
    ("parquet", "decimal(10,2)", "decimal(9,2)", SPARK_40, False),
    ("avro", "decimal(10,2)", "decimal(12,4)", SPARK_40, True),
])
def test_spark_type_change(format, old, new, reader, readable) -> None:
    found = verdict("spark-type-change", Event(ChangeKind.RETYPE, format, column="n", old=old, new=new), reader)
    assert found == (Same() if readable else Cannot(
        Barrier.TYPE, f"cannot read existing {format} files as {new}: queries over them fail"))
    assert verdict("spark-type-change", Event(ChangeKind.RETYPE, format, column="n", old=old, new=new), HIVE) is None
    assert verdict("spark-type-change", Event(ChangeKind.RETYPE, "custom", column="n", old=old, new=new), reader) is None


# Rule spark-type-change: a narrowed decimal reads rounded, or NULL where it no longer fits, where Spark reads it.
@pytest.mark.parametrize("format, reader", [("orc", SPARK_35), ("orc", SPARK_40), ("textfile", SPARK_40),
                                            ("avro", SPARK_40)])
def test_spark_type_change_narrowing_a_decimal(format: str, reader: Reader) -> None:
    event = Event(ChangeKind.RETYPE, format, column="d", old="decimal(10,2)", new="decimal(5,1)")
    assert verdict("spark-type-change", event, reader) == Differs(
        Difference.LOST_PRECISION, "existing values read rounded to decimal(5,1)'s scale, and NULL where they no "
                                   "longer fit")


# Rule iceberg-promotion: Iceberg readers promote by field id as they read.
@pytest.mark.parametrize("reader, expected", [(ICEBERG, Same()), (PYICEBERG, Same()), (SPARK_35, Same()),
                                              (TRINO, None)])
def test_iceberg_promotion(reader, expected) -> None:
    assert verdict("iceberg-promotion", Event(ChangeKind.RETYPE, "iceberg", column="n", old="int", new="bigint"),
                   reader) == expected


# Rule delta-protocol: readers below the protocol, or without the reader feature, cannot read.
@pytest.mark.parametrize("event, reader, expected", [
    (Event(ChangeKind.PROTOCOL, "delta", protocol=2), Reader(Engine.DELTA, protocol=1),
     Cannot(Barrier.PROTOCOL, "the table needs reader protocol 2, the reader speaks 1")),
    (Event(ChangeKind.PROTOCOL, "delta", protocol=2), Reader(Engine.DELTA, protocol=2), Same()),
    # Column mapping: a reader of protocol 2 has it by its version, one of 3 only as a feature it lists (deltalake
    # 1.6 speaks protocol 3 without it: plan.delta's measured hazard).
    (Event(ChangeKind.PROTOCOL, "delta", protocol=2, feature="columnMapping"), Reader(Engine.DELTA, protocol=2), Same()),
    # A reader of protocol 3 without column mapping (deltalake 1.6) reads a table of reader version 2 by the names in
    # its files: measured in tests/test_reader_rules_delta.py.
    (Event(ChangeKind.PROTOCOL, "delta", protocol=2, feature="columnMapping"),
     Reader(Engine.DELTA, protocol=3, features=("deletionVectors",)),
     Differs(Difference.NULLS, "it reads columns by the names in the files, not by the mapping: a column renamed "
                               "reads NULL")),
    (Event(ChangeKind.PROTOCOL, "delta", protocol=3, feature="columnMapping"), DELTALAKE,
     Cannot(Barrier.FEATURE, "the table needs the reader feature columnMapping")),
    (Event(ChangeKind.PROTOCOL, "delta", protocol=3, feature="typeWidening"), Reader(Engine.DELTA, protocol=3),
     Cannot(Barrier.FEATURE, "the table needs the reader feature typeWidening")),
    (Event(ChangeKind.PROTOCOL, "delta", protocol=3, feature="typeWidening"),
     Reader(Engine.DELTA, protocol=3, features=("typeWidening",)), Same()),
    (Event(ChangeKind.PROTOCOL, "delta", protocol=2), SPARK_40, None),
])
def test_delta_protocol(event, reader, expected) -> None:
    assert verdict("delta-protocol", event, reader) == expected


@pytest.mark.parametrize("release, widening", [((3, 5), "typeWidening-preview"), ((4, 0), "typeWidening")])
def test_delta_protocol_events_name_the_reader_features_alone(release, widening) -> None:
    state = DeltaState("/t", 3, "id", 1, 2)
    change = DeltaProtocol("lake.t", {"delta.columnMapping.mode": "name", "delta.enableTypeWidening": "true",
                                      "delta.feature.appendOnly": "supported",
                                      "delta.feature.deletionVectors": "supported", "delta.minReaderVersion": "3",
                                      "delta.minWriterVersion": "7"}, {}, state)
    # The reader version raised with them is no event of its own: the features need it already.
    assert [(e.protocol, e.feature) for e in events(change, release)] == [(2, "columnMapping"), (3, widening),
                                                                          (3, "deletionVectors")]
    alone = DeltaProtocol("lake.t", {"delta.minReaderVersion": "2"}, {}, state)
    assert [(e.protocol, e.feature) for e in events(alone, release)] == [(2, "")]


def _delta_log(root: Path, feature: str) -> Path:
    """An empty Delta table of reader version 3 that lists ``feature``, its log written as Delta's PROTOCOL.md lays it
    out (deltalake writes none of these features)."""
    schema = {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]}
    actions = [{"protocol": {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": [feature],
                             "writerFeatures": [feature]}},
               {"metaData": {"id": "t", "format": {"provider": "parquet", "options": {}},
                             "schemaString": json.dumps(schema), "partitionColumns": [], "configuration": {},
                             "createdTime": 1}}]
    (root / "_delta_log").mkdir(parents=True)
    (root / "_delta_log" / f"{0:020d}.json").write_text("".join(json.dumps(a) + "\n" for a in actions))
    return root


@pytest.mark.parametrize("feature", sorted(reader_rules.READER_FEATURES))
def test_deltalake_reads_a_table_of_a_reader_feature_as_the_rule_says(feature: str, tmp_path: Path) -> None:
    from deltalake import DeltaTable
    from deltalake.exceptions import DeltaProtocolError

    expected = verdict("delta-protocol", Event(ChangeKind.PROTOCOL, "delta", protocol=3, feature=feature), DELTALAKE)
    table = DeltaTable(_delta_log(tmp_path / "t", feature))
    if expected == Same():
        assert table.to_pyarrow_table().num_rows == 0
    else:
        assert expected == Cannot(Barrier.FEATURE, f"the table needs the reader feature {feature}")
        with pytest.raises(DeltaProtocolError, match=f"reader features: {{'{feature}'}} but these are not yet "
                                                     "supported by the deltalake reader"):
            table.to_pyarrow_table()


@pytest.mark.parametrize("name", reader_rules.UNDECLARABLE)
def test_the_types_some_engines_lack_cannot_be_declared(name: str) -> None:
    # No rule judges them (the matrix page says so): no plan brings one into a table.
    for declared in (name, f"array<{name}>", f"struct<a:{name}>"):
        with pytest.raises(InvalidType, match="unknown type"):
            canonical_type(declared)
    assert "3" not in WRITTEN_VERSIONS  # Iceberg's variant and timestamp_ns need format version 3


def test_every_rule_has_a_source_examples_and_speaks_of_some_reader() -> None:
    assert len({rule.name for rule in rules()}) == len(rules()) >= 6
    for rule in rules():
        assert rule.source and rule.examples, rule.name
        assert all(example.kind is rule.kind for example in rule.examples), rule.name
        assert any(rule.judge(example, reader) is not None for example in rule.examples for reader in MATRIX_READERS)


def test_a_hive_reader_of_text_files_reads_by_position_whatever_its_setting() -> None:
    assert finds(Reader(Engine.HIVE, "3.1", columns=Resolution.BY_NAME), "textfile") is Resolution.BY_POSITION


def test_the_settings_engines_are_the_registry_engines() -> None:
    schema = inlined_schema("settings")
    items = schema["properties"]["readers"]["items"]["properties"]
    assert items["engine"]["enum"] == [engine.value for engine in Engine]
    assert set(items["columns"]["enum"]) == {"by_name", "by_position"}
    assert set(items["features"]["items"]["enum"]) == reader_rules.READER_FEATURES


def test_declared_readers_from_the_setting() -> None:
    assert declared_readers(None) is None
    assert declared_readers([{"engine": "trino", "columns": "by_position", "databases": ["Retail"]},
                             {"engine": "delta", "reader": 3, "features": ["typeWidening"]},
                             {"engine": "hive", "tables": ["Retail.Orders"], "databases": ["lake"]}]) == (
        Reader(Engine.TRINO, columns=Resolution.BY_POSITION, databases=("retail",)),
        Reader(Engine.DELTA, protocol=3, features=("typeWidening",)),
        Reader(Engine.HIVE, databases=("lake",), tables=("retail.orders",)))
    assert Reader(Engine.DELTA, protocol=3, features=("typeWidening",)).label == "Delta reader 3 (typeWidening)"
    assert Reader(Engine.TRINO, columns=Resolution.BY_POSITION).label == "Trino (by position)"


def _cols(*spec: str) -> tuple[Column, ...]:
    return tuple(Column(*c.split(":", 1)) for c in spec)


def test_a_reader_reads_its_databases_tables_and_its_tables() -> None:
    hive = Reader(Engine.HIVE, databases=("lake",), tables=("retail.orders",))
    assert [hive.reads(key) for key in ("Retail.Orders", "retail.returns", "lake.x", "LAKE.y")] == [True, False, True,
                                                                                                     True]
    assert Reader(Engine.HIVE).reads("any.table")


def test_the_plans_spark_reads_every_table_first_and_once() -> None:
    spark_43 = Reader(Engine.SPARK, "4.3")
    assert plan_readers(None, (4, 3)) == (spark_43,)
    assert plan_readers((TRINO, spark_43, SPARK_35, replace(spark_43, databases=("retail",))), (4, 3)) == (
        spark_43, TRINO, SPARK_35)


def _plans(format: str, migration: Migration, readers: tuple[Reader, ...] | None, allow: bool = False) -> Plan:
    live = Table("retail", "orders", _cols("id:int", "amount:int", "note:int"), format=format)
    desired = replace(live, columns=_cols("id:int", "total:int", "note:int"))
    if migration.changes and isinstance(migration.changes[0], ReorderColumns):
        desired = replace(live, columns=_cols("id:int", "note:int", "amount:int"))
    if not migration.changes:
        desired = replace(live, columns=_cols("id:int", "amount:bigint", "note:int"))
    return PlanBuilder(Catalog(("retail",), {"retail.orders": desired}, (migration,) if migration.changes else ()),
                       Catalog(("retail",), {"retail.orders": live}), release=(4, 0), readers=readers,
                       allow_destructive=allow).build()


RENAME = Migration("0001_rename", "", (RenameColumn("retail.orders", "amount", "total"),))
REORDER = Migration("0001_reorder", "", (ReorderColumns("retail.orders", ("id", "note", "amount")),))
WIDEN = Migration("0001_widen", "", ())  # no migration: the declared type changes


def test_without_readers_the_plans_spark_is_the_reader() -> None:
    plan = _plans("parquet", WIDEN, None)
    assert [s.readers for s in plan.steps] == [(ReaderVerdict("Spark 4.0", "type amount int -> bigint", Same(),
                                                              "spark-type-change"),)]
    assert plan.to_data()["steps"][0]["readers"] == [
        {"reader": "Spark 4.0", "change": "type amount int -> bigint", "rule": "spark-type-change", "verdict": "same"}]
    # Every reader reads it as before: the terminal and the comment say so by not blocking it.
    assert "readers as before" not in text.render(Review(plan, "HEAD"))
    assert "Readers of" not in markdown.render(Review(plan, "HEAD"))


# What the default reader's verdicts block, the step's hazards state: a reader of the plan's own Spark never
# contradicts them (a hazard the plan states is a break the verdict names, and the other way round).
@pytest.mark.parametrize("format, migration", [
    ("textfile", REORDER), ("sequencefile", REORDER), ("parquet", RENAME), ("orc", RENAME), ("avro", RENAME),
    ("parquet", WIDEN), ("textfile", RENAME), ("parquet", REORDER), ("textfile", WIDEN),
])
def test_the_default_readers_breaks_are_the_hazards(format: str, migration: Migration) -> None:
    [step] = _plans(format, migration, None).steps
    assert bool(step.hazards) == breaks(step.readers), (step.hazards, step.readers)
    assert bool(step.blocked) == breaks(step.readers)
    assert _plans(format, migration, None, allow=True).steps[0].blocked is None


def test_a_tables_reader_differs_from_its_databases() -> None:
    orders = Table("retail", "orders", _cols("id:int", "amount:int"), format="parquet")
    live = Catalog(("retail",), {t.key: t for t in (orders, replace(orders, name="returns"))})
    desired = replace(live, objects={k: replace(t, columns=_cols("id:int", "amount:bigint"))
                                     for k, t in live.objects.items()})
    readers = declared_readers([{"engine": "spark", "version": "3.5", "databases": ["lake"], "tables": ["Retail.Orders"]},
                                {"engine": "spark", "version": "4.0", "databases": ["retail"]}])
    plan = PlanBuilder(desired, live, release=(4, 1), readers=readers).build()
    steps = {s.object: s for s in plan.steps}
    assert [(v.reader, v.verdict) for v in steps["retail.orders"].readers] == [
        ("Spark 4.1", Same()), ("Spark 3.5", Cannot(Barrier.TYPE, "cannot read existing parquet files as bigint: "
                                                                  "queries over them fail")), ("Spark 4.0", Same())]
    assert steps["retail.orders"].blocked == READER_BLOCK
    assert [(v.reader, v.verdict) for v in steps["retail.returns"].readers] == [("Spark 4.1", Same()),
                                                                                ("Spark 4.0", Same())]
    assert steps["retail.returns"].blocked is None


def test_a_step_that_breaks_a_declared_reader_is_blocked_unless_allowed() -> None:
    readers = (SPARK_40, HIVE_BY_POSITION, TRINO, Reader(Engine.SPARK, "3.5", databases=("other",)))
    plan = _plans("parquet", REORDER, readers)
    [step] = plan.steps
    assert step.blocked == READER_BLOCK
    assert step.readers == (ReaderVerdict("Spark 4.0", "reorder", Same(), "hive-reorder"),
                            ReaderVerdict("Hive 3.1 (by position)", "reorder", SHIFTED, "hive-reorder"),
                            ReaderVerdict("Trino", "reorder", Same(), "hive-reorder"))
    allowed = _plans("parquet", REORDER, readers, allow=True)
    assert allowed.steps[0].blocked is None and allowed.steps[0].readers == step.readers
    # Orc files are found by name by Spark: the reorder breaks none of its releases.
    assert _plans("orc", REORDER, (SPARK_40, SPARK_35)).steps[0].blocked is None


def test_spark_35_beside_a_plan_for_spark_4_blocks_a_widening_it_cannot_read() -> None:
    plan = _plans("parquet", WIDEN, (SPARK_35, SPARK_40))
    [step] = plan.steps
    assert not step.hazards  # Spark 4, which the plan is for, reads it
    assert step.blocked == READER_BLOCK
    assert [(v.reader, v.verdict) for v in step.readers] == [  # the plan's Spark first
        ("Spark 4.0", Same()),
        ("Spark 3.5", Cannot(Barrier.TYPE, "cannot read existing parquet files as bigint: queries over them fail"))]


def test_a_block_already_there_is_kept_and_the_verdicts_added() -> None:
    plan = _plans("parquet", RENAME, (SPARK_40, HIVE_BY_POSITION))
    [step] = plan.steps
    assert step.blocked == HIDING_BLOCK
    assert [(v.reader, v.verdict) for v in step.readers] == [("Spark 4.0", NULLS), ("Hive 3.1 (by position)", Same())]


def test_the_verdicts_survive_plan_json() -> None:
    plan = _plans("parquet", RENAME, (SPARK_40, HIVE_BY_POSITION, Reader(Engine.DELTA, protocol=1)))
    data = plan.to_data()
    assert data["steps"][0]["readers"] == [
        {"reader": "Spark 4.0", "change": "rename amount -> total", "rule": "hive-rename", "verdict": "differs",
         "what": "NULLs", "detail": "total reads NULL in rows written before (the files name it amount)"},
        {"reader": "Hive 3.1 (by position)", "change": "rename amount -> total", "rule": "hive-rename",
         "verdict": "same"}]
    assert Plan.from_data(json.loads(plan.to_json())) == plan


def test_text_and_markdown_show_the_verdicts_made_safe() -> None:
    hostile = Migration("0001_rename", "", (RenameColumn("retail.orders", "amount", "total"),))
    plan = _plans("parquet", hostile, (SPARK_40, HIVE_BY_POSITION))
    step = plan.steps[0]
    evil = ReaderVerdict("Spark 4.0", "rename a|b -> \x1b[31m@x", Differs(Difference.NULLS, "*x* | <b>"), "hive-rename")
    plan = replace(plan, steps=(replace(step, readers=(*step.readers, evil)),))
    review = Review(plan, "HEAD")
    shown = text.render(review)
    assert "reader Spark 4.0: rename amount -> total: differs (NULLs): total reads NULL" in shown
    assert "readers as before: Hive 3.1 (by position)" in shown
    assert "\x1b[31m" not in shown and "\\x1b[31m" in shown
    comment = markdown.render(review)
    assert "Readers of `retail.orders`:" in comment
    assert "| Hive 3.1 (by position) | rename amount -\\> total | same |" in comment
    assert "| Spark 4.0 | rename a\\|b -\\> \\\\x1b\\[31m@&#8203;x | ⚠ differs (NULLs): \\*x\\* \\| \\<b\\> |" in comment


def test_markdown_leaves_out_tables_every_reader_reads_as_before() -> None:
    plan = _plans("parquet", REORDER, (SPARK_40,))
    assert plan.steps[0].readers == (ReaderVerdict("Spark 4.0", "reorder", Same(), "hive-reorder"),)
    assert "Readers of" not in markdown.render(Review(plan, "HEAD"))


def test_the_module_registers_each_rule_once() -> None:
    assert {r.name for r in rules()} >= {reader_rules.HIVE_RENAME.name, reader_rules.DELTA_PROTOCOL.name}


def test_a_pull_requests_plan_judges_the_readers_schemaflow_yaml_declares(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    root = tmp_path / "repo"
    table = "table: retail.orders\nformat: parquet\ncolumns:\n  - {name: id, type: int}\n  - {name: n, type: %s}\n"
    readers = 'readers:\n  - {engine: spark, version: "3.5", databases: [retail]}\n  - {engine: trino}\n'
    put_files(root, {"schemaflow.yaml": readers, "schemas/retail/orders.yaml": table % "int"})
    commit(repo, "base")
    put_files(root, {"schemas/retail/orders.yaml": table % "bigint"})
    commit(repo, "widen n")
    review = review_refs(load_project(root, env={}), "HEAD~1", "HEAD")
    [step] = [s for s in review.plan.steps if s.object == "retail.orders"]
    assert step.blocked == READER_BLOCK
    described = [v.describe() for v in step.readers]  # no rule speaks of Trino and a type change
    assert described[0].startswith(f"{spark_name(spark_version())}: type n int -> bigint: ")  # the plan's release
    assert described[-1] == ("Spark 3.5: type n int -> bigint: cannot (type): cannot read existing parquet files as "
                             "bigint: queries over them fail")
    assert ("reader Spark 3.5: type n int -> bigint: cannot (type): cannot read existing parquet files as bigint"
            in text.render(review))
    allowed = review_refs(load_project(root, env={}), "HEAD~1", "HEAD", allow_destructive=True).plan
    assert [s.blocked for s in allowed.steps] == [None]
