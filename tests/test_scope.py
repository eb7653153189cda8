"""What schemaflow owns: excluded objects and kinds it cannot manage are left out before the diff."""
from __future__ import annotations

from schemaflow.model import Catalog, Column, Table, View
from schemaflow.plan.plan import PlanBuilder
from schemaflow.scope import Scope, unmanageable

COLUMNS = (Column("a", "int"),)


def table(name: str, format: str = "parquet", data_source: bool = False, serde: str | None = None,
          input_format: str | None = None, **properties: str) -> Table:
    return Table("shop", name, COLUMNS, format=format, properties=properties, data_source=data_source, serde=serde,
                 input_format=input_format, output_format=input_format and "com.example.Out")


LIVE = Catalog(("shop",), {t.key: t for t in (
    table("orders"),
    table("tmp_scratch"),
    table("ice", **{"table_type": "ICEBERG", "metadata_location": "s3://x"}),
    table("acid", format="orc", transactional="true"),
    table("lake", format="delta", data_source=True),
    table("hoodie", format="hudi", data_source=True),
    table("synced_hoodie", format="custom", serde="org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe",
          input_format="org.apache.hudi.hadoop.HoodieParquetInputFormat"),
    table("made_by_spark", format="parquet", data_source=True),
    table("odd", format="textfile", serde="com.example.OddSerDe"),
    table("odd_input", format="custom", input_format="com.example.In"),
    table("csv_serde", format="textfile", serde="org.apache.hadoop.hive.serde2.OpenCSVSerde"),
    table("weird_source", format="com.example.source", data_source=True),
)} | {"shop.v": View("shop", "v", "SELECT a FROM orders")})
DECLARED = Catalog(("shop",), {"shop.orders": table("orders")})


def test_unmanageable_kinds_are_named():
    assert {key: unmanageable(obj) for key, obj in LIVE.objects.items()} == {
        "shop.orders": None, "shop.tmp_scratch": None, "shop.v": None, "shop.csv_serde": None,
        # A data-source table of a provider Spark ships is managed like any table (declared, or imported).
        "shop.made_by_spark": None,
        "shop.ice": "an Iceberg table",
        "shop.acid": "a transactional (ACID) table, which Hive's compactor rewrites",
        # A kind schemaflow manages when declared: one no file declares is left alone unless the project opts in.
        "shop.lake": "a table of the kind 'delta', whose tables no file declares schemaflow leaves alone unless "
                     "schemaflow.yaml lists it in manage_undeclared",
        "shop.hoodie": "a Hudi table",
        "shop.synced_hoodie": "a Hudi table",
        "shop.odd": "a table of the SerDe com.example.OddSerDe, which ships with neither Hive nor Spark",
        "shop.odd_input": "a table read through the input format com.example.In, which ships with neither Hive nor Spark",
        "shop.weird_source": "a table of the Spark data source 'com.example.source', which schemaflow does not create",
    }


def test_objects_left_alone_are_never_planned_and_are_listed_as_not_managed():
    owned, notices = Scope(exclude=("shop.tmp_*",)).owned(LIVE, DECLARED)
    assert sorted(owned.objects) == ["shop.csv_serde", "shop.made_by_spark", "shop.orders", "shop.v"]
    assert notices[0] == "not managed: shop.acid (a transactional (ACID) table, which Hive's compactor rewrites); " \
                         "schemaflow leaves it alone"
    assert "not managed: shop.tmp_scratch (excluded by 'shop.tmp_*' in schemaflow.yaml); schemaflow leaves it alone" \
        in notices
    assert len(notices) == 9
    # Without the scope, every one of them would be a (blocked) drop.
    unscoped = PlanBuilder(DECLARED, LIVE).build()
    assert sorted(s.object for s in unscoped.steps if s.kind == "drop_table") == sorted(
        k for k in LIVE.objects if k not in ("shop.orders", "shop.v"))
    scoped = PlanBuilder(DECLARED, owned).build()
    assert sorted((s.kind, s.object) for s in scoped.steps) == [
        ("drop_table", "shop.csv_serde"), ("drop_table", "shop.made_by_spark"), ("drop_view", "shop.v")]


def test_a_declared_object_is_never_taken_out_of_scope():
    declared = Catalog(("shop",), {**DECLARED.objects, "shop.lake": table("lake")})
    owned, notices = Scope(exclude=("shop.*",)).owned(LIVE, declared)
    assert {"shop.orders", "shop.lake"} <= set(owned.objects)
    assert not any("shop.lake" in n or "shop.orders" in n for n in notices)


def test_the_plan_leaves_excluded_and_unmanageable_objects_alone_and_says_so(example, tmp_path, capsys):
    from dataclasses import replace

    from schemaflow.catalog.snapshot import write_snapshot
    from schemaflow.cli import main
    from schemaflow.project import load_project
    from schemaflow.workflow import applied_state, desired_state

    live = applied_state(desired_state(load_project(example, env={})))
    extra = {t.key: t for t in (Table("retail", "tmp_notebook", COLUMNS),
                                Table("retail", "events", COLUMNS, format="delta", data_source=True))}
    write_snapshot(replace(live, objects={**live.objects, **extra}), tmp_path / "live.json")
    settings = example / "schemaflow.yaml"
    settings.write_text(settings.read_text() + "exclude: [retail.tmp_*, scratch.*]\n")

    assert main(["--project", str(example), "plan", "--against", str(tmp_path / "live.json")]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"No changes: the snapshot {tmp_path / 'live.json'} matches the schemas (databases: analytics, retail).",
        "warning: not managed: retail.events (a table of the kind 'delta', whose tables no file declares schemaflow "
        "leaves alone unless schemaflow.yaml lists it in manage_undeclared); schemaflow leaves it alone",
        "warning: not managed: retail.tmp_notebook (excluded by 'retail.tmp_*' in schemaflow.yaml); "
        "schemaflow leaves it alone"]


def test_declaring_an_excluded_object_is_an_error_at_its_name(example, capsys):
    from schemaflow.cli import main

    settings = example / "schemaflow.yaml"
    settings.write_text(settings.read_text() + "exclude: [retail.orders]\n")
    assert main(["--project", str(example), "validate"]) == 1
    assert capsys.readouterr().err.splitlines()[0] == (
        "schemas/retail/orders.yaml:1:1: retail.orders is declared here and excluded by 'retail.orders' in "
        "schemaflow.yaml: remove the file, or narrow the pattern")


def test_registering_a_kind_leaves_the_undeclared_tables_of_its_format_alone_unless_the_project_lists_it(
        monkeypatch) -> None:
    """A package that registers Spark's 'com.example.source' as a kind (as docs/contributing.md says) does not turn
    the live tables of that format no file declares into drops: the project opts in with manage_undeclared."""
    from dataclasses import replace as changed

    from schemaflow.sql import table_kinds

    # The kinds schemaflow ships are managed undeclared, as they always were (Iceberg's by its stamp: see above), but
    # Delta's, whose tables were left alone before it was a kind.
    assert all(kind.manages_undeclared for kind in table_kinds.kinds()
               if kind.name not in (table_kinds.ICEBERG, table_kinds.DELTA))
    monkeypatch.setattr(table_kinds, "_KINDS", dict(table_kinds._KINDS))  # registered for this test alone
    registered = changed(table_kinds._data_source("com.example.source"), manages_undeclared=False)
    table_kinds.register(registered)
    weird = LIVE.objects["shop.weird_source"]
    assert unmanageable(weird) == ("a table of the kind 'com.example.source', whose tables no file declares "
                                   "schemaflow leaves alone unless schemaflow.yaml lists it in manage_undeclared")
    assert "shop.weird_source" not in Scope().owned(LIVE, DECLARED)[0].objects
    opted = Scope(manage_undeclared=frozenset({"com.example.source"}))
    assert "shop.weird_source" in opted.owned(LIVE, DECLARED)[0].objects
    [drop] = [s for s in PlanBuilder(DECLARED, opted.owned(LIVE, DECLARED)[0]).build().steps
              if s.object == "shop.weird_source"]
    assert drop.kind == "drop_table" and drop.blocked  # a drop, blocked without --allow-destructive
