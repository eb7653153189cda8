"""Sources: tables the views read that schemaflow does not manage, declared with ``source:`` and never planned.

No JVM: the files are loaded, diffed and planned here; Spark's check of view SQL is exercised
with a recording stand-in for the session (``tests/test_sources_spark.py`` runs it for real).
"""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from schemaflow.catalog.hive.view_check import STAND_IN_PREFIX, ViewChecker
from schemaflow.errors import SpecError
from schemaflow.model import Catalog, Column, Table, View, catalog_digest
from schemaflow.plan.changes import CreateDatabase, CreateView
from schemaflow.plan.diff import diff
from schemaflow.plan.plan import PlanBuilder
from schemaflow.project import load_project
from schemaflow.render.graph import render_graph
from schemaflow.scope import Scope
from schemaflow.spec import load_catalog
from schemaflow.workflow import applied_state, hash_migrations, review_refs
from tests.gitrepos import commit, init_repo

EVENTS = """\
source: raw.events
comment: Click stream, loaded by the ingestion pipeline
columns:
  - {name: event_id, type: long, comment: Unique per event}
  - {name: user_id, type: integer}
  - {name: kind, type: string}
  - {name: payload, type: "map<string, string>"}
partitioned_by:
  - {name: ds, type: string}
"""
DAILY_KINDS = """\
view: shop.daily_kinds
sql: |
  SELECT kind, COUNT(*) AS n, ds
  FROM raw.events
  WHERE user_id IS NOT NULL
  GROUP BY kind, ds
"""
ORDERS = "table: shop.orders\ncolumns:\n  - {name: order_id, type: bigint}\n  - {name: user_id, type: int}\n"


def project(root: Path, files: dict[str, str]) -> Path:
    """A project at ``root`` holding ``files`` (path relative to the root -> text)."""
    (root / "schemas").mkdir(parents=True, exist_ok=True)
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text, encoding="utf-8")
    return root


def reported(root: Path, databases: tuple[str, ...] = ("shop",)) -> list[str]:
    """The ``path:line:col: message`` lines loading the project reports (none: it loads)."""
    try:
        load_catalog(root, databases)
    except SpecError as error:
        return [str(problem) for problem in error.problems]
    return []


@pytest.fixture
def shop(tmp_path: Path) -> Catalog:
    """A project managing ``shop``: a table and a view over the source ``raw.events``."""
    root = project(tmp_path, {"schemas/raw/events.yaml": EVENTS, "schemas/shop/daily_kinds.yaml": DAILY_KINDS,
                              "schemas/shop/orders.yaml": ORDERS})
    return load_catalog(root, ("shop",))


def test_a_view_over_a_source_validates_and_knows_the_columns_it_uses(shop: Catalog):
    assert shop.sources == {"raw.events": Table(
        "raw", "events",
        (Column("event_id", "bigint", "Unique per event"), Column("user_id", "int"), Column("kind", "string"),
         Column("payload", "map<string,string>")),
        (Column("ds", "string"),),
        comment="Click stream, loaded by the ingestion pipeline")}
    assert str(shop.sources["raw.events"].source) == "schemas/raw/events.yaml:1:1"
    assert sorted(shop.objects) == ["shop.daily_kinds", "shop.orders"]  # never among the objects
    assert shop.databases == ("shop",)
    view = shop.objects["shop.daily_kinds"]
    assert isinstance(view, View)
    assert view.reads == ("raw.events",)
    assert view.uses == {"raw.events": ("ds", "kind", "user_id")}
    assert view.lineage == {"kind": ("raw.events.kind",), "n": (), "ds": ("raw.events.ds",)}


def test_a_source_in_no_managed_database_is_fine_and_names_no_database_to_manage(tmp_path: Path):
    root = project(tmp_path, {"schemas/raw/events.yaml": EVENTS, "schemas/shop/daily_kinds.yaml": DAILY_KINDS})
    assert load_catalog(root).databases == ("shop",)  # the databases the files declare tables and views in
    assert load_catalog(root, ("shop",)).sources.keys() == {"raw.events"}
    # A table or view there is still refused: the project does not manage raw.
    (root / "schemas/raw/copy.yaml").write_text("table: raw.copy\ncolumns: [{name: a, type: int}]\n")
    assert reported(root) == ["schemas/raw/copy.yaml:1:8: database 'raw' is not managed by this project "
                              "(databases: shop); add it to 'databases' in schemaflow.yaml"]


def test_a_column_the_source_does_not_declare_is_an_error_at_the_view_sql(tmp_path: Path):
    root = project(tmp_path, {"schemas/raw/events.yaml": EVENTS, "schemas/shop/v.yaml": (
        "view: shop.v\nsql: |\n  SELECT e.kind, e.country\n  FROM raw.events e\n")})
    assert reported(root) == ["schemas/shop/v.yaml:3:18: raw.events as e has no column 'country' "
                              "(its columns: event_id, user_id, kind, payload, ds)"]


def test_a_view_over_an_undeclared_table_says_how_to_declare_a_source(tmp_path: Path):
    root = project(tmp_path, {"schemas/shop/v.yaml": "view: shop.v\nsql: SELECT kind FROM raw.clicks\n"})
    assert reported(root) == ["schemas/shop/v.yaml:2:23: unknown table or view 'raw.clicks': declare it in "
                              "schemas/, as a source if schemaflow is not to manage it ('source: db.name' with its "
                              "columns)"]


@pytest.mark.parametrize("text, problem", [
    ("source: raw.events\ncolumns:\n  - {name: a, type: bigitn}\n",
     "3:21: unknown type 'bigitn'; expected one of: tinyint, smallint, int, bigint, "),
    ("source: raw.events\ncolumns: [{name: a, type: int}]\nformat: orc\n",
     "3:1: unknown key 'format' (expected one of: columns, comment, partitioned_by, source)"),
    ("source: raw.events\ncolumns: [{name: a, type: int, nullable: true}]\n",
     "2:32: unknown key 'nullable' (expected one of: comment, name, type)"),
    ("source: raw.events\ncomment: x\n", "1:1: missing required key 'columns'"),
    ("source: raw.events\ncolumns: []\n", "2:10: a source needs its data columns: list those the table has"),
    ("source: raw.events\ncolumns: [{name: a, type: int}]\npartitioned_by: [{name: A, type: string}]\n",
     "3:18: column 'a' is declared twice (first on line 2)"),
    ("source: raw.events\ncolumns: [{name: a, type: int}]\npartitioned_by: [{name: p, type: 'array<int>'}]\n",
     "3:34: a partition column holds one value, not array<int>"),
    ("source: raw\ncolumns: [{name: a, type: int}]\n", "1:9: source 'raw' is not valid: write database.name"),
    ("source: raw.events\ntable: raw.events\ncolumns: [{name: a, type: int}]\n",
     "1:1: a schema file declares one object: start it with 'table: db.name', 'view: db.name' or 'source: db.name'"),
])
def test_a_source_file_with_a_wrong_shape_or_type_is_a_located_error(tmp_path: Path, text: str, problem: str):
    root = project(tmp_path, {"schemas/raw/events.yaml": text})
    found = reported(root)
    assert len(found) == 1 and found[0].startswith(f"schemas/raw/events.yaml:{problem}"), found


def test_a_view_over_a_broken_source_is_not_also_reported(tmp_path: Path):
    root = project(tmp_path, {"schemas/raw/events.yaml": "source: raw.events\ncolumns: [{name: a, type: nope}]\n",
                              "schemas/shop/v.yaml": "view: shop.v\nsql: SELECT a FROM raw.events\n"})
    found = reported(root)
    assert len(found) == 1 and found[0].startswith("schemas/raw/events.yaml:2:27: unknown type 'nope'"), found


def test_a_source_declared_again_as_a_table_is_an_error_in_both_files(tmp_path: Path):
    root = project(tmp_path, {"schemas/raw/events.yaml": EVENTS,
                              "schemas/raw/events.yml": "table: raw.events\ncolumns: [{name: a, type: int}]\n"})
    assert reported(root, ()) == [
        "schemas/raw/events.yaml:1:9: raw.events is declared more than once: also in schemas/raw/events.yml",
        "schemas/raw/events.yml:1:8: raw.events is declared more than once: also in schemas/raw/events.yaml",
    ]


def test_a_source_file_must_be_where_its_name_says(tmp_path: Path):
    root = project(tmp_path, {"schemas/shop/events.yaml": EVENTS})
    assert reported(root) == ["schemas/shop/events.yaml:1:9: raw.events must be declared in "
                              "schemas/raw/events.yaml: rename or move this file"]


def test_a_migration_naming_a_source_is_an_error(tmp_path: Path):
    root = project(tmp_path, {"schemas/raw/events.yaml": EVENTS, "schemas/shop/orders.yaml": ORDERS,
                              "migrations/0001_rename.yaml": (
                                  "description: Rename a column\nchanges:\n"
                                  "  - rename_column: {table: shop.orders, from: customer_id, to: user_id}\n"
                                  "  - drop_column: {table: raw.events, column: legacy}\n")})
    hash_migrations(load_project(root, env={}))
    assert reported(root) == [
        "migrations/0001_rename.yaml:4:18: raw.events is declared as a source in schemas/raw/events.yaml, which "
        "schemaflow does not manage: migrations change only managed tables; remove this change, or declare the "
        "table with 'table:' to manage it"]


def test_view_partitions_cannot_derive_from_a_source(tmp_path: Path):
    root = project(tmp_path, {"schemas/raw/events.yaml": EVENTS, "schemas/shop/v.yaml": (
        "view: shop.v\npartitioned_on: [ds]\npartitions: {derive_from: raw.events}\n"
        "sql: SELECT kind, ds FROM raw.events\n")})
    assert reported(root) == ["schemas/shop/v.yaml:3:27: derive_from names raw.events, a source: schemaflow does "
                              "not read the partitions of tables it does not manage; list the view's partitions "
                              "instead"]


def test_nothing_is_planned_for_a_source(shop: Catalog):
    changes = diff(shop, Catalog())
    assert [c.key for c in changes] == ["shop", "shop.daily_kinds", "shop.orders"]
    assert not any(isinstance(c, CreateDatabase) and c.key == "raw" for c in changes)
    view = next(c for c in changes if isinstance(c, CreateView))
    plan = PlanBuilder(shop, Catalog()).build()
    assert [s.object for s in plan.steps if "raw" in s.object] == []
    assert [s.kind for s in plan.steps if s.object == "shop.daily_kinds"] == ["create_view"]
    assert view.view.reads == ("raw.events",)
    assert PlanBuilder(shop, applied_state(shop)).build().is_empty  # once applied, nothing more to do


def test_a_live_object_declared_as_a_source_is_left_alone_and_listed(tmp_path: Path):
    feed = "source: shop.feed\ncolumns: [{name: user_id, type: int}, {name: score, type: double}]\n"
    root = project(tmp_path, {"schemas/shop/feed.yaml": feed, "schemas/shop/orders.yaml": ORDERS,
                              "schemas/shop/scores.yaml": "view: shop.scores\nsql: SELECT user_id, score FROM feed\n"})
    declared = load_catalog(root, ("shop",))
    live_feed = Table("shop", "feed", (Column("user_id", "int"), Column("score", "double"), Column("extra", "string")),
                      format="orc")
    live = Catalog(("shop",), {"shop.feed": live_feed, "shop.stale": Table("shop", "stale", (Column("a", "int"),))})
    owned, notices = Scope(exclude=("shop.st*",)).owned(live, declared)
    assert sorted(owned.objects) == []
    assert notices == (
        "not managed: shop.feed (declared as a source in schemas/shop/feed.yaml); schemaflow leaves it alone",
        "not managed: shop.stale (excluded by 'shop.st*' in schemaflow.yaml); schemaflow leaves it alone",
    )
    plan = PlanBuilder(declared, owned, allow_destructive=True).build()
    assert [(s.kind, s.object) for s in plan.steps] == [("create_table", "shop.orders"),
                                                        ("create_view", "shop.scores")]


def test_a_table_that_becomes_a_source_between_git_refs_is_left_alone(tmp_path: Path):
    root = tmp_path / "repo"
    repo = init_repo(root)
    project(root, {"schemaflow.yaml": "databases: [shop]\n", "schemas/shop/orders.yaml": ORDERS})
    commit(repo, "shop.orders managed here")
    (root / "schemas/shop/orders.yaml").write_text(ORDERS.replace("table:", "source:"))
    review = review_refs(load_project(root, env={}), "main", allow_destructive=True)
    assert review.plan.steps == ()
    assert review.plan.warnings == ("not managed: shop.orders (declared as a source in schemas/shop/orders.yaml); "
                                    "schemaflow leaves it alone",)


def test_the_catalog_digest_follows_the_sources_and_in_databases_keeps_them(shop: Catalog):
    events = shop.sources["raw.events"]
    wider = Catalog(shop.databases, shop.objects, shop.migrations,
                    {"raw.events": Table(events.database, events.name, events.columns + (Column("x", "int"),),
                                         events.partition_columns, events.comment)})
    assert catalog_digest(wider) != catalog_digest(shop)  # a saved plan is refused once a source changes
    without = Catalog(shop.databases, shop.objects, shop.migrations)
    assert catalog_digest(without) != catalog_digest(shop)
    assert shop.in_databases(("shop",)).sources == shop.sources


def test_the_graph_draws_a_source_as_a_node(shop: Catalog):
    text = render_graph(shop, "text", "raw.events")
    assert text == ("raw.events (source)\n  read by shop.daily_kinds\n"
                    "shop.daily_kinds (view)\n  reads raw.events: ds, kind, user_id\n")
    assert '  n1[("raw.events")]\n' in render_graph(shop, "mermaid")
    assert '  "raw.events" [shape=cylinder];\n' in render_graph(shop, "dot")


class RecordingSpark:
    """Just enough of a SparkSession for ``ViewChecker``: it records the statements and accepts them all."""

    def __init__(self) -> None:
        self.statements: list[str] = []
        self.dropped: list[str] = []
        parser = SimpleNamespace(parsePlan=lambda sql: None)
        self._jsparkSession = SimpleNamespace(sessionState=lambda: SimpleNamespace(sqlParser=lambda: parser))
        self.catalog = SimpleNamespace(currentDatabase=lambda: "default", databaseExists=lambda name: False,
                                       setCurrentDatabase=lambda name: None, dropTempView=self.dropped.append)

    def sql(self, text: str) -> None:
        self.statements.append(text)


def test_spark_checks_a_view_over_a_source_against_a_stand_in_of_its_declared_columns(shop: Catalog):
    spark = RecordingSpark()
    assert ViewChecker(spark, shop).problems(["shop.daily_kinds"]) == {}
    names = {key: f"{STAND_IN_PREFIX}{i}" for i, key in enumerate(["raw.events", "shop.daily_kinds", "shop.orders"])}
    source, view = spark.statements
    assert source == (f"CREATE OR REPLACE TEMPORARY VIEW `{names['raw.events']}` AS SELECT "
                      "CAST(NULL AS bigint) AS `event_id`, CAST(NULL AS int) AS `user_id`, "
                      "CAST(NULL AS string) AS `kind`, CAST(NULL AS map<string,string>) AS `payload`, "
                      "CAST(NULL AS string) AS `ds`")
    assert view.startswith(f"CREATE OR REPLACE TEMPORARY VIEW `{names['shop.daily_kinds']}` (`kind`, `n`, `ds`) AS ")
    assert f"FROM `{names['raw.events']}` AS events" in view and "raw.events" not in view
    assert sorted(spark.dropped) == [names["raw.events"], names["shop.daily_kinds"]]
