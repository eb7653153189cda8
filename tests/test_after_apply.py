"""After an apply: the hooks that tell other engines, told the changed objects, and their failures."""
from __future__ import annotations

from pathlib import Path

from schemaflow.apply.after import cached_before, changed_objects, refresh, run_hooks
from schemaflow.plan.plan import build_plan
from tests.test_guards import WIDER
from tests.test_plan import DESIRED, applied, catalog, table


def test_hooks_are_told_the_changed_objects_and_failures_are_reported_while_the_rest_still_run(tmp_path: Path):
    objects = ("retail.daily", "retail.orders")
    failures = run_hooks(['printf "%s|" "$SCHEMAFLOW_CHANGED" > env.txt; cat > stdin.txt',
                          "echo 'catalog refresh refused' >&2; exit 3",
                          "touch after-the-failure.txt"], objects, str(tmp_path))
    assert (tmp_path / "env.txt").read_text() == "retail.daily retail.orders|"
    assert (tmp_path / "stdin.txt").read_text() == "retail.daily\nretail.orders\n"
    assert (tmp_path / "after-the-failure.txt").exists()
    assert [f.describe() for f in failures] == [
        "after_apply hook `echo 'catalog refresh refused' >&2; exit 3` failed (exit 3): catalog refresh refused"]


def test_a_hook_that_hangs_is_stopped_and_reported(tmp_path: Path):
    (failure,) = run_hooks(["echo started; sleep 30"], ("a.b",), str(tmp_path), timeout=0.5)
    assert failure.reason == "timed out after 0.5 s"


def test_what_changed_is_every_table_and_view_the_plan_touches_and_each_is_refreshed():
    plan = build_plan(WIDER, applied(DESIRED))
    assert changed_objects(plan) == ("retail.daily", "retail.orders", "retail.top")
    statements: list[str] = []
    assert refresh(changed_objects(plan), statements.append) == []
    assert statements == ["REFRESH TABLE `retail`.`daily`", "REFRESH TABLE `retail`.`orders`",
                          "REFRESH TABLE `retail`.`top`"]


def test_only_what_the_session_may_have_read_before_is_refreshed_not_what_it_created_or_dropped():
    wider = next(iter(WIDER.tables()))
    events = table("retail.events", "id:bigint")
    plan = build_plan(catalog(wider, events), applied(DESIRED), allow_destructive=True)
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
