"""After an apply: the hooks that tell other engines, told the changed objects, and their failures."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


from schemaflow.apply.after import cached_before, changed_objects, run_hooks
from schemaflow.catalog.hive.metastore import refresh
from schemaflow.plan.plan import PlanBuilder
from tests.catalogs import DESIRED, WIDER, applied, catalog, table


def test_hooks_are_told_the_changed_objects_and_failures_are_reported_while_the_rest_still_run(tmp_path: Path):
    objects = ("retail.daily", "retail.orders")
    # Each writes into the hooks' own folder (the project folder is read-only to them).
    failures = run_hooks(['cd "$SCHEMAFLOW_HOOK_DIR"; printf "%s|" "$SCHEMAFLOW_CHANGED" > env.txt; cat > stdin.txt',
                          "echo 'catalog refresh refused' >&2; exit 3",
                          'touch "$SCHEMAFLOW_HOOK_DIR/after-the-failure.txt"'], objects, str(tmp_path),
                         str(tmp_path / ".schemaflow"))
    written = tmp_path / ".schemaflow" / "hooks"
    assert (written / "env.txt").read_text() == "retail.daily retail.orders|"
    assert (written / "stdin.txt").read_text() == "retail.daily\nretail.orders\n"
    assert (written / "after-the-failure.txt").exists()
    assert [f.describe() for f in failures] == [
        "after_apply hook `echo 'catalog refresh refused' >&2; exit 3` failed (exit 3): catalog refresh refused"]


def test_a_hook_that_hangs_is_stopped_and_reported(tmp_path: Path):
    (failure,) = run_hooks(["echo started; sleep 30"], ("a.b",), str(tmp_path), str(tmp_path / ".schemaflow"),
                           timeout=0.5)
    assert failure.reason == "timed out after 0.5 s"


def test_what_changed_is_every_table_and_view_the_plan_touches_and_each_is_refreshed():
    plan = PlanBuilder(WIDER, applied(DESIRED)).build()
    assert changed_objects(plan) == ("retail.daily", "retail.orders", "retail.top")
    statements: list[str] = []
    assert refresh(changed_objects(plan), statements.append) == []
    assert statements == ["REFRESH TABLE `retail`.`daily`", "REFRESH TABLE `retail`.`orders`",
                          "REFRESH TABLE `retail`.`top`"]


def test_only_what_the_session_may_have_read_before_is_refreshed_not_what_it_created_or_dropped():
    wider = next(iter(WIDER.tables()))
    events = table("retail.events", "id:bigint")
    plan = PlanBuilder(catalog(wider, events), applied(DESIRED), allow_destructive=True).build()
    assert sorted((s.object, s.kind) for s in plan.steps) == [
        ("retail.daily", "drop_view"), ("retail.events", "create_table"), ("retail.orders", "add_columns"),
        ("retail.top", "drop_view")]
    assert changed_objects(plan) == ("retail.daily", "retail.events", "retail.orders", "retail.top")  # told to hooks
    assert cached_before(plan) == ("retail.orders",)


def test_an_object_whose_cache_cannot_be_refreshed_is_reported_and_the_rest_are_refreshed():
    statements: list[str] = []

    def run_sql(sql: str) -> None:
        if "`gone`" in sql:
            raise RuntimeError("TABLE_OR_VIEW_NOT_FOUND")
        statements.append(sql)

    assert refresh(("shop.gone", "shop.kept"), run_sql) == [
        "could not refresh Spark's cache of shop.gone: TABLE_OR_VIEW_NOT_FOUND"]
    assert statements == ["REFRESH TABLE `shop`.`kept`"]


# Run as its own process, so the secret is in the environment the kernel shows for it (/proc/<pid>/environ
# holds a process's environment as it started; a variable set later in Python is not there).
_HOOK_PARENT = """
import subprocess, sys
from schemaflow.apply.after import run_hooks
hook = ('cd "${SCHEMAFLOW_HOOK_DIR:-.}"; for f in /proc/$PPID/environ /proc/[0-9]*/environ; do cat "$f"; done '
        '> seen.txt 2>/dev/null; ls /proc > pids.txt')
if sys.argv[1] == "plain":  # the same hook, as any child of the job's user runs it
    subprocess.run(hook, shell=True, cwd=sys.argv[2])
else:
    assert run_hooks([hook], ("a.b",), sys.argv[2], sys.argv[2] + "/.schemaflow") == []
"""


def test_a_hook_cannot_read_schemaflows_environment_nor_see_its_process(tmp_path: Path):
    secret = "fake-secret-6d1f0c"
    environment = {**os.environ, "AWS_SECRET_ACCESS_KEY": secret}
    for how in ("plain", "hook"):
        folder = tmp_path / how
        folder.mkdir()
        subprocess.run([sys.executable, "-c", _HOOK_PARENT, how, str(folder)], env=environment, check=True)
        written = folder if how == "plain" else folder / ".schemaflow" / "hooks"  # the hook's own folder
        seen = (written / "seen.txt").read_bytes()
        pids = [name for name in (written / "pids.txt").read_text().split() if name.isdigit()]
        if how == "plain":  # what a filtered environment alone would leave open
            assert secret.encode() in seen
        else:
            assert secret.encode() not in seen
            assert len(pids) <= 3  # the sandbox's own: bwrap's init, its shell and ls, none of schemaflow's

