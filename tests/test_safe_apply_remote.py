"""Safe apply against a shared metastore server: crashes, races, stale saved plans.

Every run is ``schemaflow`` in its own process, as CI runs it, against the standalone Thrift
metastore server the tests start, once with the metastore in Derby and once in PostgreSQL.
``paused_apply.py`` runs one with a pause injected, which stops it at a chosen point (after planning,
after claiming, after any action of any step) so a test can kill it with SIGKILL there, or race a
second run against it. Outcomes are read back from the metastore with ``snapshot``.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from schemaflow.claims import parse_claim
from schemaflow.model import Catalog, Table, state_digest
from schemaflow.project import load_project
from schemaflow.workflow import hash_migrations
from tests.metastore_server import BACKENDS, NewServer, metastore_setting, one_backend
from tests.projects import done_steps, live_state, paused, resume, schemaflow


pytestmark = pytest.mark.remote

ORDERS = """table: {db}.orders
format: parquet
columns:
  - {{name: order_id, type: bigint}}
  - {{name: amount, type: "decimal(10,2)"}}
{more}partitioned_by: [{{name: ds, type: string}}]
"""
# Text files are read by position: the rename keeps its values, so the change set needs no --allow-destructive.
CUSTOMERS = """table: {db}.customers
format: textfile
columns:
  - {{name: id, type: bigint}}
  - {{name: {name}, type: string}}
"""
ALL_ORDERS = "view: {db}.all_orders\nsql: SELECT * FROM orders\n"
TOTALS = "view: {db}.order_totals\nsql: SELECT ds, SUM(amount) AS total FROM orders GROUP BY ds\n"
EVENTS = "table: {db}.events\ncolumns:\n  - {{name: id, type: bigint}}\n"
RENAME = "description: Rename name to full_name\nchanges:\n  - rename_column: {{table: {db}.customers, from: name, to: full_name}}\n"


def write_project(root: Path, db: str, uri: str, warehouse: Path, version: int) -> Path:
    """The project at ``version`` 1 (two tables, two views) or 2 (a column added under a ``SELECT *``
    view, which is re-created, a column renamed by a migration, a new table, a view's comment): a
    change set touching five objects."""
    schemas = root / "schemas" / db
    schemas.mkdir(parents=True, exist_ok=True)
    (root / "schemaflow.yaml").write_text(metastore_setting(uri) + f"warehouse_dir: {warehouse}\n")
    more = "  - {name: channel, type: string}\n" if version == 2 else ""
    (schemas / "orders.yaml").write_text(ORDERS.format(db=db, more=more))
    (schemas / "customers.yaml").write_text(CUSTOMERS.format(db=db, name="full_name" if version == 2 else "name"))
    (schemas / "all_orders.yaml").write_text(ALL_ORDERS.format(db=db))
    (schemas / "order_totals.yaml").write_text(TOTALS.format(db=db) + ("comment: Total per day\n" if version == 2 else ""))
    if version == 2:
        (schemas / "events.yaml").write_text(EVENTS.format(db=db))
        (root / "migrations").mkdir(exist_ok=True)
        (root / "migrations" / "0001_rename.yaml").write_text(RENAME.format(db=db))
        hash_migrations(load_project(root))
    return root


def planned_steps(project: Path) -> list[dict]:
    result = schemaflow(project, "plan", "--format", "json")
    assert result.returncode == 2, result.stdout + result.stderr
    return json.loads(result.stdout)["steps"]


def comparable(catalog: Catalog, db: str) -> dict[str, tuple]:
    """Each object's state and migration records, with the database name and times taken out (a view's
    stored text names the database of each table it reads)."""
    def records(obj) -> list[str]:
        return sorted(obj.migrations) if isinstance(obj, Table) else []

    def anywhere(obj):
        return obj if isinstance(obj, Table) else replace(obj, sql=obj.sql.replace(f"`{db}`.", "`<db>`."))
    return {key.split(".", 1)[1]: (state_digest(anywhere(obj)), records(obj), parse_claim(obj.version) is None)
            for key, obj in catalog.objects.items() if key.startswith(db + ".")}


@pytest.fixture(scope="module", params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture(scope="module")
def server(backend: str, request: pytest.FixtureRequest) -> str:
    """The run's metastore server on ``backend``: its thrift:// URI."""
    return request.getfixturevalue("metastore_server" if backend == "derby" else "postgres_metastore_server")


@pytest.fixture(scope="module")
def reference(server: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple]:
    """The state an uninterrupted apply of version 1 then version 2 leaves. In a database of its own each
    time it is made: a test parametrised by backend itself makes it again on a server that has one already."""
    tmp = tmp_path_factory.mktemp("reference")
    db = tmp.name.replace("reference", "safe_ref_")
    project = write_project(tmp / "p", db, server, tmp / "warehouse", 1)
    assert schemaflow(project, "apply", "--auto-approve").returncode == 0
    write_project(project, db, server, tmp / "warehouse", 2)
    applied = schemaflow(project, "apply", "--auto-approve")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    return comparable(live_state(project, tmp), db)


def at_version_2(server: str, tmp_path: Path, db: str) -> Path:
    project = write_project(tmp_path / "p", db, server, tmp_path / "warehouse", 1)
    first = schemaflow(project, "apply", "--auto-approve")
    assert first.returncode == 0, first.stdout + first.stderr
    return write_project(project, db, server, tmp_path / "warehouse", 2)


# Where to kill: after the claims; after the ALTER TABLE of the orders step, before its stamp; after
# the renaming metastore write, before its stamp; after the first of the views is re-created.
KILL_POINTS = {
    "claimed": lambda steps: "claimed",
    "orders altered, not stamped": lambda steps: _point(steps, "add_columns", 1),
    "customers renamed, not stamped": lambda steps: _point(steps, "alter_columns", 1),
    "one view re-created": lambda steps: _point(steps, "replace_view", None),
}


def _point(steps: list[dict], kind: str, action: int | None) -> str:
    index = next(i for i, step in enumerate(steps) if step["kind"] == kind)
    return f"{index + 1}.{action or len(steps[index]['actions'])}"


# Each kill point on one backend, both backends among them: where it was killed is schemaflow's business, the
# claims it left are read back through the same server code on either (the races below run on both).
KILLED_ON = list(zip(BACKENDS * len(KILL_POINTS), sorted(KILL_POINTS), strict=False))


@pytest.mark.parametrize("backend, where", KILLED_ON, indirect=["backend"], scope="module")
def test_an_apply_killed_anywhere_is_finished_by_the_next_run(server, reference, tmp_path, where):
    db = "safe_kill_" + "".join(c for c in where if c.isalpha())[:20]
    project = at_version_2(server, tmp_path, db)
    steps = planned_steps(project)
    assert len(steps) == 5

    process, marker = paused(project, KILL_POINTS[where](steps))
    os.kill(process.pid, signal.SIGKILL)  # no clean-up of any kind runs
    process.communicate()
    marker.unlink()

    # The claims stay in the metastore: the journal the next run (on any machine) reads.
    half_done = [key for key, obj in live_state(project, tmp_path).objects.items() if parse_claim(obj.version)]
    assert half_done, "the killed run left no claim behind"
    replanned = schemaflow(project, "plan")
    assert replanned.returncode == 2
    assert all(f"{key}: left half-done by run" in replanned.stdout for key in half_done), replanned.stdout

    finished = schemaflow(project, "apply", "--auto-approve")
    assert finished.returncode == 0, finished.stdout + finished.stderr
    rerun = done_steps(finished.stdout)
    completed_before = [s["summary"] for s in steps][:int(KILL_POINTS[where](steps).split(".")[0]) - 1] \
        if where != "claimed" else []
    assert not set(completed_before) & set(rerun), f"re-ran completed steps: {set(completed_before) & set(rerun)}"

    again = schemaflow(project, "plan")
    assert (again.returncode, again.stdout.splitlines()[0]) == (0, f"No changes: the metastore matches the schemas "
                                                                   f"(databases: {db}).")
    assert comparable(live_state(project, tmp_path), db) == reference


@pytest.mark.parametrize("backend", [one_backend("derby")], indirect=True, scope="module")
def test_a_second_apply_while_the_first_holds_its_claims_stops_with_nothing_applied(server, tmp_path):
    project = at_version_2(server, tmp_path, "safe_claimed")
    first, marker = paused(project, "claimed")

    second = schemaflow(project, "apply", "--auto-approve")
    assert second.returncode == 1
    assert "is being modified concurrently by another schemaflow apply" in second.stderr
    assert "nothing was applied" in second.stderr
    assert done_steps(second.stdout) == []

    code, out, err = resume(first, marker)
    assert code == 0, out + err
    assert len(done_steps(out)) == 5
    after = schemaflow(project, "apply", "--auto-approve")
    assert after.returncode == 0 and "No changes" in after.stdout


def test_two_appliers_racing_from_the_same_plan_one_wins_the_other_applies_nothing(server, tmp_path):
    project = at_version_2(server, tmp_path, "safe_race")
    # Both plan first and stop there; one then runs to the end; the other's claims must fail.
    first, first_marker = paused(project, "planned")
    second, second_marker = paused(project, "planned")
    code, out, err = resume(first, first_marker)
    assert code == 0, out + err
    code, out2, err2 = resume(second, second_marker)
    assert code == 1
    assert "was modified concurrently" in err2 and "nothing was applied" in err2, err2
    assert done_steps(out2) == []
    assert len(done_steps(out)) == 5
    assert schemaflow(project, "plan").returncode == 0


def test_two_appliers_started_together_apply_each_step_once(server, reference, tmp_path):
    project = at_version_2(server, tmp_path, "safe_together")
    command = [sys.executable, "-m", "schemaflow", "apply", "--auto-approve"]
    runs = [subprocess.Popen(command, cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             stdin=subprocess.DEVNULL) for _ in range(2)]
    results = [(run.wait(timeout=600), *run.communicate()) for run in runs]
    done = [step for _, out, _ in results for step in done_steps(out)]
    assert len(done) == len(set(done)) == 5, results  # every step applied, none twice
    for code, _out, err in results:
        assert code == 0 or "modified concurrently" in err, err
    assert schemaflow(project, "plan").returncode == 0
    assert comparable(live_state(project, tmp_path), "safe_together") == reference


@pytest.mark.parametrize("backend", [one_backend("postgresql")], indirect=True, scope="module")
def test_a_saved_plan_is_refused_when_another_apply_got_there_first(server, tmp_path):
    project = at_version_2(server, tmp_path, "safe_saved")
    saved = schemaflow(project, "plan", "--out", "plan.json")
    assert saved.returncode == 2, saved.stderr
    assert schemaflow(project, "apply", "--auto-approve").returncode == 0
    before = live_state(project, tmp_path)

    refused = schemaflow(project, "apply", "plan.json", "--auto-approve")
    assert refused.returncode == 1
    assert "plan.json is stale" in refused.stderr and "nothing was applied" in refused.stderr
    assert "safe_saved.orders: columns changed since the plan was made" in refused.stderr
    assert live_state(project, tmp_path) == before


@pytest.mark.parametrize("backend", ["postgresql"], indirect=True, scope="module")  # a server stopped and started again, as in production
def test_a_metastore_that_goes_down_mid_apply_is_named_and_the_next_run_converges(
        backend: str, new_metastore_server: NewServer, reference, tmp_path):
    with new_metastore_server(backend, tmp_path / "server") as server:
        project = at_version_2(server.uri, tmp_path, "safe_down")
        process, marker = paused(project, "1.1")  # the first step's statement ran; its stamp is next
        server.stop()
        code, out, err = resume(process, marker)
        assert code == 1
        assert f"cannot reach the Hive metastore ({server.uri})" in err, err
        assert "step 1 failed" in err and "not applied (5):" in err
        server.start()
        finished = schemaflow(project, "apply", "--auto-approve")
        assert finished.returncode == 0, finished.stdout + finished.stderr
        assert "left half-done by run" in finished.stdout
        assert schemaflow(project, "plan").returncode == 0
        assert comparable(live_state(project, tmp_path), "safe_down") == reference
