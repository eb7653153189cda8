"""The Iceberg REST catalog backend against Iceberg's own REST catalog server (``tests/rest_server.py``).

Each test walks a sequence on a namespace of its own: what the writer makes, the reader reads back as declared; a
commit made on a state another writer changed is refused by the server (409) and applies nothing; of two appliers
racing on a table exactly one lands; a properties-only commit by another writer in the window is not refused (the
documented gap); the server refuses the guard probe; views are created, replaced, read back and dropped. The other
writer is pyiceberg's own REST client, or a second schemaflow writer; ``Interleaved`` runs it between a writer's
load and its commit, on the real server.
"""
from __future__ import annotations

import io
from collections.abc import Callable, Mapping
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from schemaflow.catalog.rest.connection import TABLE, Connection, RestSettings
from schemaflow.catalog.rest.reader import LOAD_THREADS, RestReader
from schemaflow.catalog.rest.writer import CLAIM_SUMMARY, RestWriter
from schemaflow.cli import main
from schemaflow.errors import ConcurrentChange, SchemaflowError
from schemaflow.testing import BackendSuite, Harness
from schemaflow.testing import projects
from schemaflow.testing.projects import orders as orders_file, totals, write_project
from schemaflow.model import (LIVE_STATE, VERSION_KEY, Column, Database, PartitionField, SortTerm, Table, View,
                              state_digest)
from tests.rest_server import RestCatalogServer

pytestmark = pytest.mark.remote

APPLIED_STATE = "schemaflow.applied_state"
# What Iceberg's Java library adds to a new table's properties (Parquet's codec since 1.4): the server's, not the project's.
SERVER_DEFAULTS = {"write.parquet.compression-codec"}


def ours(properties: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in properties.items() if k not in SERVER_DEFAULTS}


class Interleaved(Connection):
    """A connection that runs ``meanwhile`` once, just before its next commit (a POST) reaches the server."""

    meanwhile: Callable[[], None] | None = None

    def call(self, method: str, endpoint: str, errors: Mapping[int, type[Exception]], payload: Any = None,
             **path: str) -> dict[str, Any]:
        if method == "POST" and self.meanwhile is not None:
            run, self.meanwhile = self.meanwhile, None
            run()
        return super().call(method, endpoint, errors, payload, **path)


def connect(server: RestCatalogServer) -> Interleaved:
    return Interleaved(RestSettings(server.uri), {})


def other_client(server: RestCatalogServer) -> Any:
    from pyiceberg.catalog.rest import RestCatalog

    return RestCatalog("other", uri=server.uri)


def orders(namespace: str, **changes: Any) -> Table:
    declared = dict(
        database=namespace, name="orders", format="iceberg", data_source=True, comment="what was ordered",
        columns=(Column("id", "bigint"), Column("ts", "timestamp"), Column("amount", "decimal(10,2)", "in euros"),
                 Column("note", "string")),
        partition_spec=(PartitionField("day", "ts"),), sort_order=(SortTerm(PartitionField("identity", "id")),),
        properties={"format-version": "2", "team": "sales"})
    return Table(**{**declared, **changes})


def test_a_table_made_and_evolved_is_read_back_as_declared_and_stale_commits_land_nothing(
        rest_catalog_server: RestCatalogServer, rest_namespace: str) -> None:
    connection = connect(rest_catalog_server)
    writer, reader = RestWriter(connection), RestReader(connection)
    ns, key = rest_namespace, f"{rest_namespace}.orders"
    writer.add_database(Database(ns, "the shop", None, {"team": "sales"}))
    writer.add_database(Database(ns, "another comment"))  # exists: left as it is
    database = reader.database(ns)
    assert database == Database(ns, "the shop", database.location, {"team": "sales"})
    assert database.location == f"{rest_catalog_server.warehouse.as_uri()}/{ns}"  # the server's choice
    writer.update_database_properties(ns, ["team"], lambda now: {"team": now["team"] + "+ops"})
    assert reader.database(ns).properties == {"team": "sales+ops"}

    created = orders(ns)
    writer.commit_iceberg(created, {}, None, True, {"team": "sales", VERSION_KEY: "c1", APPLIED_STATE: LIVE_STATE},
                          [])
    live = reader.read((ns,)).objects[key]
    assert set(live.properties) - set(ours(live.properties)) <= SERVER_DEFAULTS
    assert replace(live, properties=ours(live.properties)) == created and live.version == "c1"
    assert isinstance(live, Table) and live.iceberg is not None
    [entry] = reader.entries(ns)
    assert entry.parameters[APPLIED_STATE] == state_digest(live)  # ${live_state}: the table as the create left it
    writer.check_guards(key)  # the server refuses a commit asserting a schema it does not have

    # Evolve: a column added, one renamed by its source (keeping its field id), one dropped; properties changed.
    evolved = orders(ns, columns=(Column("id", "bigint"), Column("ts", "timestamp"),
                                  Column("total", "decimal(10,2)", "in euros"), Column("coupon", "string")),
                     properties={"format-version": "2", "team": "finance"}, comment=None)
    sources = {"id": "id", "ts": "ts", "total": "amount"}
    writer.commit_iceberg(evolved, sources, live.iceberg, False, {"team": "finance", VERSION_KEY: "c2"}, [],
                          expected="c1")
    after = reader.read((ns,)).objects[key]
    assert replace(after, properties=ours(after.properties)) == evolved and after.version == "c2"
    assert isinstance(after, Table) and after.iceberg is not None
    assert after.iceberg.table_uuid == live.iceberg.table_uuid
    other = other_client(rest_catalog_server)
    fields = {f.name: f.field_id for f in other.load_table((ns, "orders")).schema().fields}
    before = {f.name: f.field_id for f in other.load_table((ns, "orders")).metadata.schemas[0].fields}
    assert fields["total"] == before["amount"] and "note" not in fields

    writer.set_parameters(key, {"tier": "gold", VERSION_KEY: "c3"}, ["team"], expected="c2")
    assert ours(reader.read((ns,)).objects[key].properties) == {"format-version": "2", "tier": "gold"}

    # A stale commit: another writer changes the schema between this writer's load and its commit.
    def add_column_elsewhere() -> None:
        from pyiceberg.types import StringType

        other.load_table((ns, "orders")).update_schema().add_column("elsewhere", StringType()).commit()

    grown = orders(ns, columns=(*evolved.columns, Column("mine", "int")), properties=evolved.properties, comment=None)
    state = reader.read((ns,)).objects[key]
    assert isinstance(state, Table)
    connection.meanwhile = add_column_elsewhere
    with pytest.raises(ConcurrentChange, match="modified concurrently"):
        writer.commit_iceberg(grown, {c.name: c.name for c in evolved.columns}, state.iceberg, False,
                              {VERSION_KEY: "c4"}, [], expected="c3")
    now = reader.read((ns,)).objects[key]
    assert [c.name for c in now.columns] == ["id", "ts", "total", "coupon", "elsewhere"] and now.version == "c3"

    # Two appliers racing on the table: the second's commit lands between the first's load and commit; one lands.
    rival = RestWriter(connect(rest_catalog_server))
    state = reader.read((ns,)).objects[key]
    assert isinstance(state, Table)
    theirs = orders(ns, columns=(*now.columns, Column("theirs", "int")), properties=evolved.properties, comment=None)
    our_change = orders(ns, columns=(*now.columns, Column("ours", "int")), properties=evolved.properties, comment=None)
    same = {c.name: c.name for c in now.columns}
    connection.meanwhile = lambda: rival.commit_iceberg(theirs, same, state.iceberg, False, {VERSION_KEY: "r"}, [],
                                                        expected="c3")
    with pytest.raises(ConcurrentChange):
        writer.commit_iceberg(our_change, same, state.iceberg, False, {VERSION_KEY: "o"}, [], expected="c3")
    landed = reader.read((ns,)).objects[key]
    assert landed.version == "r" and [c.name for c in landed.columns][-1] == "theirs"
    assert "ours" not in [c.name for c in landed.columns]

    # The documented gap: a properties-only commit of another writer in the window is not refused; both land.
    connection.meanwhile = lambda: other.load_table((ns, "orders")).transaction().set_properties(
        {"audited": "yes"}).commit_transaction()
    writer.set_parameters(key, {VERSION_KEY: "p"}, [], expected="r")
    window = reader.read((ns,)).objects[key]
    assert window.version == "p" and window.properties["audited"] == "yes"  # both landed

    # A drop checks the stamp; the table's files stay.
    with pytest.raises(ConcurrentChange):
        writer.drop_table(key, expected="not this run")
    metadata_file = other.load_table((ns, "orders")).metadata_location
    writer.drop_table(key, expected="p")
    assert key not in reader.read((ns,)).objects
    assert Path(metadata_file.removeprefix("file:")).is_file()


def test_views_are_created_replaced_read_back_and_dropped(rest_catalog_server: RestCatalogServer,
                                                          rest_namespace: str) -> None:
    connection = connect(rest_catalog_server)
    writer, reader = RestWriter(connection), RestReader(connection)
    ns, key = rest_namespace, f"{rest_namespace}.recent"
    writer.add_database(Database(ns))
    first = View(ns, "recent", "SELECT id, amount FROM orders WHERE amount > 10",
                 columns=(Column("id", "bigint", "the order"), Column("amount", "decimal(10,2)")), comment="big ones",
                 properties={"team": "sales"})
    writer.create_view(first, False, "v1")
    with pytest.raises(ConcurrentChange):
        writer.create_view(first, False, "v1b")  # the name is taken
    live = reader.views([key, f"{ns}.absent"])
    assert live[f"{ns}.absent"] is None
    assert live[key] == first and live[key].version == "v1"  # type: ignore[union-attr]

    second = View(ns, "recent", "SELECT id FROM orders", columns=(Column("id", "bigint"),))
    writer.set_parameters(key, {VERSION_KEY: "v2"}, [], expected="v1")  # claimed, then replaced under the claim
    writer.create_view(second, True, "v2")
    [entry] = reader.entries(ns)
    assert entry.object == View(ns, "recent", "SELECT id FROM orders", columns=(Column("id", "bigint"),),
                                properties={"team": "sales"})
    # Back to the first version's SQL and schema: a version equal but for its claim is a new version, made current.
    writer.set_parameters(key, {VERSION_KEY: "v3"}, [], expected="v2")
    writer.create_view(first, True, "v3")
    assert reader.views([key])[key] == first
    metadata = other_client(rest_catalog_server).load_view((ns, "recent")).metadata
    assert [v.summary.get(CLAIM_SUMMARY) for v in metadata.versions][1:] == ["v2", "v3"]  # three versions

    with pytest.raises(ConcurrentChange):
        writer.drop_view(key, expected="v2")
    writer.drop_view(key, expected="v3")
    assert reader.views([key]) == {key: None}



def test_a_type_iceberg_cannot_promote_is_blocked_at_plan_and_a_restore_refused(rest_catalog_server: RestCatalogServer,
                                                                                  tmp_path: Path) -> None:
    database = projects.new_database()
    metastore = {"type": "iceberg_rest", "uri": rest_catalog_server.uri}

    def run(*argv: str) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            code = main(["--project", str(tmp_path), *argv])
        return code, " ".join(out.getvalue().split()), err.getvalue()

    projects.write_project(tmp_path, metastore, database, projects.orders(database, "iceberg"))
    assert run("apply", "--auto-approve")[0] == 0
    projects.write_project(tmp_path, metastore, database, projects.orders(database, "iceberg", amount="string"))
    for allowed in ((), ("--allow-destructive",)):
        code, out, _ = run("plan", *allowed)
        assert code == 1 and ("[BLOCKED: changing the type of amount from decimal(12,2) to string is not supported in "
                              "place: Iceberg changes a column's type in place only from int to bigint") in out, out
        code, _, err = run("apply", "--auto-approve", *allowed)
        assert code == 1 and "the plan has 1 blocked step; nothing was applied" in err, err
    table = RestReader(Connection(RestSettings(rest_catalog_server.uri), {})).read((database,)).get(f"{database}.orders")
    assert isinstance(table, Table) and table.columns[1].type == "decimal(12,2)"
    assert run("restore", f"{database}.orders", "--auto-approve") == (
        1, "", f"error: {database}.orders: the Iceberg REST catalog (metastore.type iceberg_rest) renames no tables, so "
               "schemaflow restores no table there (a restore swaps the backup in by renaming): nor does it rewrite one "
               "there, so there is no backup to restore. Nothing was restored\n")


def test_a_plan_words_the_catalogs_calls_and_apply_runs_them(rest_catalog_server: RestCatalogServer,
                                                             rest_namespace: str, tmp_path: Path) -> None:
    ns = rest_namespace
    write_project(tmp_path, {"type": "iceberg_rest", "uri": rest_catalog_server.uri}, ns, orders_file(ns, "iceberg"),
                  totals(ns))
    out = io.StringIO()
    with redirect_stdout(out), redirect_stderr(io.StringIO()):
        assert main(["--project", str(tmp_path), "plan"]) == 2
    created = out.getvalue()
    assert "CREATE" not in created and "metastore" not in created
    assert f"       -- iceberg_rest: create namespace {ns}, unless it exists (POST /v1/{{prefix}}/namespaces)\n" in created
    table = (f"       -- iceberg_rest: create Iceberg table {ns}.orders (POST /v1/{{prefix}}/namespaces/{{namespace}}/"
             "tables: one create-table request, the catalog's location where none is declared)\n"
             "       --   column id bigint\n       --   column amount decimal(12,2)\n"
             "       --   comment 'orders placed'\n       --   set team='sales'\n       --   no location declared\n")
    assert table in created
    assert (f"       -- iceberg_rest: create view {ns}.totals (POST /v1/{{prefix}}/namespaces/{{namespace}}/views: REST "
            "view API, dialect spark, a column of no declared type stored as string)\n"
            "       --   column id (no type declared)\n       --   column amount (no type declared)\n"
            f"       --   SQL, stored as written (its unqualified names resolve in {ns}):\n"
            f"           SELECT id, amount FROM {ns}.orders\n") in created
    with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
        assert main(["--project", str(tmp_path), "apply", "--auto-approve"]) == 0

    write_project(tmp_path, {"type": "iceberg_rest", "uri": rest_catalog_server.uri}, ns,
                  orders_file(ns, "iceberg", coupon=True, comment="orders taken"), totals(ns))
    live = RestReader(connect(rest_catalog_server)).read((ns,)).objects[f"{ns}.orders"]
    assert isinstance(live, Table) and live.iceberg is not None
    out = io.StringIO()
    with redirect_stdout(out), redirect_stderr(io.StringIO()):
        assert main(["--project", str(tmp_path), "plan"]) == 2
    assert (f"       -- iceberg_rest: commit table {ns}.orders (POST /v1/{{prefix}}/namespaces/{{namespace}}/tables/"
            "{table}: one commit, its requirements the table's uuid, current schema, default spec and sort order and "
            "last column and partition ids as loaded; another writer's change in between is a 409)\n"
            f"       --   requires table uuid {live.iceberg.table_uuid}, schema {live.iceberg.schema_id}, spec "
            f"{live.iceberg.spec_id}, sort order {live.iceberg.sort_order_id}, as planned\n"
            "       --   column id bigint\n       --   column amount decimal(12,2)\n"
            "       --   column coupon string, comment 'code used' (new)\n       --   not partitioned\n"
            "       --   unsorted\n       --   comment 'orders taken'\n") in out.getvalue()
    with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
        assert main(["--project", str(tmp_path), "apply", "--auto-approve"]) == 0
    evolved = RestReader(connect(rest_catalog_server)).read((ns,)).objects[f"{ns}.orders"]
    assert isinstance(evolved, Table) and [c.name for c in evolved.columns] == ["id", "amount", "coupon"]
class Recording(Connection):
    """A connection that records each request's method and endpoint."""

    def __init__(self, settings: RestSettings) -> None:
        super().__init__(settings, {})
        self.requests: list[tuple[str, str]] = []

    def call(self, method: str, endpoint: str, errors: Mapping[int, type[Exception]], payload: Any = None,
             **path: str) -> dict[str, Any]:
        self.requests.append((method, endpoint))
        return super().call(method, endpoint, errors, payload, **path)


def test_a_claim_loads_the_table_and_commits_asking_nothing_else(rest_catalog_server: RestCatalogServer,
                                                                rest_namespace: str) -> None:
    connection = Recording(RestSettings(rest_catalog_server.uri))
    writer, ns = RestWriter(connection), rest_namespace
    writer.add_database(Database(ns))
    writer.commit_iceberg(orders(ns), {}, None, True, {VERSION_KEY: "c1"}, [])
    connection.requests.clear()
    connection.catalog.view_exists = None  # a request asking whether the key is a view would fail here
    writer.set_parameters(f"{ns}.orders", {VERSION_KEY: "claim"}, [], expected="c1")
    assert connection.requests == [("GET", TABLE), ("POST", TABLE)]
    assert RestReader(connection).read((ns,)).objects[f"{ns}.orders"].version == "claim"
    with pytest.raises(ConcurrentChange):
        writer.set_parameters(f"{ns}.orders", {VERSION_KEY: "again"}, [], expected="c1")
    with pytest.raises(SchemaflowError, match=f"the view {ns}.absent is not in the Iceberg REST catalog"):
        writer.set_parameters(f"{ns}.absent", {VERSION_KEY: "claim"}, [], expected=None)


def test_a_namespace_of_more_tables_than_load_threads_is_read_whole_and_in_name_order(
        rest_catalog_server: RestCatalogServer, rest_namespace: str) -> None:
    connection = Recording(RestSettings(rest_catalog_server.uri))
    writer, ns = RestWriter(connection), rest_namespace
    writer.add_database(Database(ns))
    names = [f"t{number:02d}" for number in reversed(range(LOAD_THREADS + 2))]
    for number, name in enumerate(names):
        writer.commit_iceberg(orders(ns, name=name), {}, None, True, {VERSION_KEY: f"v{number}"}, [])
    connection.requests.clear()
    entries = list(RestReader(connection).entries(ns))
    assert [e.object.key for e in entries] == [f"{ns}.{name}" for name in sorted(names)]
    assert [e.object.version for e in entries] == [f"v{names.index(name)}" for name in sorted(names)]
    assert connection.requests.count(("GET", TABLE)) == len(names)


class RestHarness(Harness):
    """The conformance suite's view of the REST catalog server this test process started."""

    name = "iceberg_rest"
    table_format = "iceberg"
    uri = ""  # set once the server is up (``serving_the_suite``)

    def metastore(self, root: Path) -> dict[str, Any]:
        return {"type": self.name, "uri": self.uri}

    def change_outside(self, root: Path, key: str, column: Column) -> None:
        from pyiceberg.catalog.rest import RestCatalog
        from pyiceberg.types import StringType

        with RestCatalog("other", uri=self.uri).load_table(key).update_schema() as update:
            update.add_column(column.name, StringType())


@pytest.fixture(autouse=True)
def serving_the_suite(rest_catalog_server: RestCatalogServer) -> None:
    RestHarness.uri = rest_catalog_server.uri


class TestRestSuite(BackendSuite):
    harness = RestHarness()
