"""Live views whose SQL another client made call a metastore function, against Spark and a real function: apply never
has Spark analyse that SQL unless the operator approved it.

Another team's Spark job (``tests/marker_udf.py``: a Hive UDF whose class writes a marker as it loads, its jar served
by the test's HTTP server) registers the function and alters a view of a database schemaflow manages to call it, or
writes a view of its own that calls it. Spark's DROP VIEW analyses the view it drops, and on 3.5 its CREATE OR
REPLACE VIEW the view it replaces, loading that class (``plan.live_code``): so the drop and the replace go through
the metastore client, and nothing is fetched or loaded. A new view over their view runs their code when it is
created: refused until the operator approves the id that covers their view's SQL as it is. Each schemaflow command
runs as a user runs it, a process and a JVM of its own.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from schemaflow.catalog.hive.local_server import state_directory
from schemaflow.project import load_project
from tests.gitrepos import commit, init_repo
from tests.marker_udf import CLASS, Served, forget, marker_jar, spark_sql
from tests.metastore_server import metastore_setting
from tests.projects import live_state, paused, resume, schemaflow

pytestmark = pytest.mark.spark

REFUSED = "the plan has views that run code in apply, and the operator has not approved them; nothing was run"


@pytest.fixture
def function(tmp_path: Path) -> Iterator[tuple[Served, Path]]:
    """The marker function's jar, served, and the file its class writes as it loads."""
    with marker_jar(tmp_path / "udf") as served:
        yield served


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    """A project managing the database shop (with its own embedded metastore): a table, and a view of built-ins."""
    project = tmp_path / "project"
    (project / "schemas/shop").mkdir(parents=True)
    (project / "schemaflow.yaml").write_text('spark: {master: "local[1]"}\ndatabases: [shop]\n')
    (project / ".gitignore").write_text(".schemaflow/\n*.json\n")
    (project / "schemas/shop/items.yaml").write_text(
        "table: shop.items\nformat: parquet\ncolumns: [{name: name, type: string}]\n")
    (project / "schemas/shop/names.yaml").write_text("view: shop.names\nsql: SELECT upper(name) AS n FROM shop.items\n")
    applied = schemaflow(project, "apply", "--auto-approve")
    assert applied.returncode == 0, applied.stderr
    return project


def nothing_ran(project: Path, served: Served, marker: Path) -> bool:
    """No class loaded, no jar fetched from the server, none kept in the project's Spark resources."""
    resources = state_directory(load_project(project, env={}).settings) / "hive-resources"
    return not marker.exists() and served.requests == [] and not any(resources.glob("*"))


def test_a_managed_view_altered_to_call_a_function_is_replaced_and_dropped_without_running_it(shop, function, tmp_path):
    served, marker = function
    # Their job: the function, and the managed view altered to call it (ALTER VIEW keeps schemaflow's stamp).
    spark_sql(shop, "CREATE DATABASE shared", f"CREATE FUNCTION shared.f AS '{CLASS}' USING JAR '{served.url('marker.jar')}'",
              "ALTER VIEW shop.names AS SELECT shared.f(name) AS n FROM shop.items")
    forget(served, marker)

    planned = schemaflow(shop, "plan")
    assert planned.returncode == 2, planned.stderr
    assert "~ 1. re-create view shop.names: SQL changed" in planned.stdout
    assert ("note: its live entry is dropped through the metastore client first, then the view created anew: Spark would "
            "analyse its live SQL to replace it, and shop.names calls metastore functions (shared.f: the class and jars "
            "their entries name); none of it runs") in planned.stdout
    assert "hazard" not in planned.stdout  # nothing runs: nobody has to read their code to be rid of it
    assert nothing_ran(shop, served, marker)

    replaced = schemaflow(shop, "apply", "--auto-approve")
    assert replaced.returncode == 0, replaced.stderr
    assert nothing_ran(shop, served, marker)
    assert live_state(shop, tmp_path).objects["shop.names"].sql == "SELECT upper(name) AS n FROM shop.items"
    assert "No changes" in schemaflow(shop, "plan").stdout

    # Their views in the managed database, not declared: one calls the function, one reads that one.
    spark_sql(shop, "CREATE VIEW shop.theirs AS SELECT shared.f(name) AS m FROM shop.items",
              "CREATE VIEW shop.over AS SELECT m FROM shop.theirs")
    forget(served, marker)
    dropped = schemaflow(shop, "apply", "--auto-approve", "--allow-destructive")
    assert dropped.returncode == 0, dropped.stderr
    for view, code in [("shop.over", "shop.theirs calls"), ("shop.theirs", "shop.theirs calls")]:
        assert re.search(rf"drop view {view} .*\n.*\n.*note: dropped through the metastore client, not Spark's DROP "
                         rf"VIEW, which would analyse its live SQL first: {code} metastore functions", dropped.stdout)
    assert nothing_ran(shop, served, marker)
    assert {"shop.over", "shop.theirs"}.isdisjoint(live_state(shop, tmp_path).objects)


def test_a_view_over_a_source_whose_live_sql_calls_a_function_runs_only_that_sql_once_approved(shop, function):
    served, marker = function
    repo = init_repo(shop)
    commit(repo, "the shop, applied")
    # Their database: a table, the function, and a view calling it that our new view reads (declared as a source).
    spark_sql(shop, "CREATE DATABASE shared", "CREATE TABLE shared.raw (name string) USING parquet",
              f"CREATE FUNCTION shared.f AS '{CLASS}' USING JAR '{served.url('marker.jar')}'",
              "CREATE VIEW shared.src AS SELECT shared.f(name) AS m FROM shared.raw")
    (shop / "schemas/shared").mkdir()
    (shop / "schemas/shared/src.yaml").write_text("source: shared.src\ncolumns: [{name: m, type: string}]\n")
    (shop / "schemas/shop/reach.yaml").write_text("view: shop.reach\nsql: SELECT m FROM shared.src\n")
    commit(repo, "a view over their view")
    forget(served, marker)

    # The review between git refs cannot read their view: it plans a plain create.
    review = schemaflow(shop, "plan", "--base", "HEAD~1", "--head", "HEAD", "--out", "reviewed.json")
    assert review.returncode == 2 and "hazard" not in review.stdout, review.stdout
    # Against the metastore, their view's SQL is read by name, and is code: the step has an id that covers it.
    planned = schemaflow(shop, "plan")
    first = re.search(r"hazard: runs code in the apply job: view shop\.reach reads live views whose SQL is code, "
                      r"analysed with it \(shared\.src calls metastore functions \(shared\.f: .*approves id ([0-9a-f]{32})",
                      planned.stdout)
    assert first, planned.stdout
    assert "-- shared.src:\n       SELECT shared.f(name) AS m FROM shared.raw" in planned.stdout
    assert nothing_ran(shop, served, marker)
    for refused in (schemaflow(shop, "apply", "--auto-approve"),
                    schemaflow(shop, "apply", "--reviewed", "reviewed.json", "--auto-approve")):
        assert refused.returncode == 1 and REFUSED in refused.stderr and first[1] in refused.stderr, refused.stderr
        assert nothing_ran(shop, served, marker)

    # Approved, and then their view changes: the id is another, and the approval does not carry over.
    spark_sql(shop, "ALTER VIEW shared.src AS SELECT shared.f(upper(name)) AS m FROM shared.raw")
    forget(served, marker)
    stale = schemaflow(shop, "apply", "--reviewed", "reviewed.json", "--auto-approve", "--approve-code", first[1])
    assert stale.returncode == 1 and REFUSED in stale.stderr, stale.stderr
    second = re.search(r"view shop\.reach: .*; id ([0-9a-f]{32})\)", stale.stderr)
    assert second and second[1] != first[1], stale.stderr
    assert nothing_ran(shop, served, marker)

    applied = schemaflow(shop, "apply", "--reviewed", "reviewed.json", "--auto-approve", "--approve-code", second[1])
    assert applied.returncode == 0, applied.stderr
    assert marker.exists() and served.requests  # what the operator approved ran, as Spark created the view
    assert "No changes" in schemaflow(shop, "plan").stdout


@pytest.mark.remote
def test_a_view_altered_to_call_a_function_while_apply_runs_stops_it_before_spark_analyses_it(metastore_server, function,
                                                                                                 tmp_path):
    """The race: the apply planned with their view's SQL calling nothing, and claimed its objects (which shows what it
    will touch); they alter the view before its step. The step's check finds other SQL and stops the apply before
    Spark drops or replaces anything. On a metastore server, which their job and the apply share."""
    served, marker = function
    project = tmp_path / "project"
    (project / "schemas/race").mkdir(parents=True)
    (project / "schemaflow.yaml").write_text(metastore_setting(metastore_server) + f"warehouse_dir: {tmp_path / 'wh'}\n"
                                             'spark: {master: "local[1]"}\n')
    (project / "schemas/race/items.yaml").write_text(
        "table: race.items\nformat: parquet\ncolumns: [{name: name, type: string}]\n")
    names = "view: race.names\nsql: SELECT upper(name) AS n FROM race.items\n"
    (project / "schemas/race/names.yaml").write_text(names)
    assert schemaflow(project, "apply", "--auto-approve").returncode == 0
    spark_sql(project, "CREATE DATABASE race_shared",
              f"CREATE FUNCTION race_shared.f AS '{CLASS}' USING JAR '{served.url('marker.jar')}'")
    (project / "schemas/race/names.yaml").write_text(names + "comment: Names, shouted\n")  # a re-creation to apply

    running, paused_at = paused(project, "claimed")
    spark_sql(project, "ALTER VIEW race.names AS SELECT race_shared.f(name) AS n FROM race.items")
    forget(served, marker)
    code, out, err = resume(running, paused_at)
    assert code == 1, out + err
    assert re.search(r"step 1 failed \(re-create view race\.names: [^\n]*\): race\.names holds other SQL than when this "
                     r"plan was made \(or could not be read then\), which Spark would analyse in this step", err), err
    assert not marker.exists() and served.requests == []

    again = schemaflow(project, "apply", "--auto-approve")  # planned anew: their SQL is code, and is never analysed
    assert again.returncode == 0, again.stderr
    assert "its live entry is dropped through the metastore client first" in again.stdout
    assert not marker.exists() and served.requests == []
