"""Views a change breaks, under each invalidation mode, planned without a JVM from YAML projects.

The live side is what a complete apply of the base project leaves (``applied_state``): views carry
Spark 4's default schema mode, COMPENSATION. Hive's ``invalidate_view1.q`` is the running example:
a view over a view over a table, then the table loses a column.
"""
from __future__ import annotations

import textwrap
from dataclasses import replace
from pathlib import Path

import pytest

from schemaflow.cli import main
from schemaflow.catalog.snapshot import write_snapshot
from schemaflow.errors import SchemaflowError, SpecError
from schemaflow.model import Catalog, Invalidation
from schemaflow.plan.plan import Plan, PlanBuilder
from schemaflow.project import load_project
from schemaflow.workflow import applied_state, desired_state, hash_migrations

# Hive's invalidate_view1.q: CREATE TABLE xxx10 (key int, value int); CREATE VIEW xxx9 AS SELECT * FROM xxx10;
# CREATE VIEW xxx8 AS SELECT * FROM xxx9 xxx; ALTER TABLE xxx10 REPLACE COLUMNS (key int).
# Beside them, xxx7 uses only key: no mode touches it.
HIVE_BASE = {
    "schemas/hive/xxx10.yaml": "table: hive.xxx10\ncolumns: [{name: key, type: int}, {name: value, type: int}]\n",
    "schemas/hive/xxx9.yaml": "view: hive.xxx9\nsql: SELECT * FROM xxx10\n",
    "schemas/hive/xxx8.yaml": "view: hive.xxx8\nsql: SELECT * FROM xxx9 xxx\n",
    "schemas/hive/xxx7.yaml": "view: hive.xxx7\nsql: SELECT key FROM xxx10 WHERE key > 0\n",
}
DROP_VALUE = {
    "schemas/hive/xxx10.yaml": "table: hive.xxx10\ncolumns: [{name: key, type: int}]\n",
    "migrations/0001_drop_value.yaml": textwrap.dedent("""\
        description: xxx10 loses value (REPLACE COLUMNS (key int))
        changes:
          - drop_column: {table: hive.xxx10, column: value}
        """),
}


def project(root: Path, files: dict[str, str], invalidation: str | None = None) -> Catalog:
    """The desired catalog of a project made of ``files``, with ``invalidation`` set in schemaflow.yaml."""
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    if invalidation:
        (root / "schemaflow.yaml").write_text(f"invalidation: {invalidation}\n")
    if (root / "migrations").exists():
        hash_migrations(load_project(root, env={}))
    return desired_state(load_project(root, env={}))


def plan_change(tmp_path: Path, base: dict[str, str], head: dict[str, str], mode: str, **kw) -> Plan:
    live = applied_state(project(tmp_path / "base", base))
    desired = project(tmp_path / "head", {**base, **head}, mode)
    assert load_project(tmp_path / "head", env={}).settings.invalidation == mode
    return PlanBuilder(desired, live, invalidation=mode, **kw).build()


def steps(plan: Plan) -> list[tuple[str, str, bool]]:
    return [(s.kind, s.object, bool(s.blocked)) for s in plan.steps]


def test_strict_refuses_the_drop_naming_each_view_the_column_and_the_change(tmp_path):
    plan = plan_change(tmp_path, HIVE_BASE, DROP_VALUE, "strict")
    assert steps(plan) == [("alter_columns", "hive.xxx10", True), ("replace_view", "hive.xxx9", False),
                           ("replace_view", "hive.xxx8", False)]
    assert plan.steps[0].blocked == (
        "invalidation: strict, and this change breaks 2 views: "
        "hive.xxx8 reads hive.xxx9, which fails when queried; "
        "hive.xxx9 uses hive.xxx10.value, which migration 0001_drop_value drops. "
        "Change those views in the same change set, or set invalidation: lenient or cascade in schemaflow.yaml")
    assert plan.warnings == ()


def test_lenient_goes_ahead_leaves_the_views_and_warns_which_will_fail(tmp_path):
    plan = plan_change(tmp_path, HIVE_BASE, DROP_VALUE, "lenient")
    assert steps(plan) == [("alter_columns", "hive.xxx10", False)]
    assert plan.warnings == (
        "hive.xxx8 reads hive.xxx9, which fails when queried: hive.xxx8 will fail when queried "
        "(invalidation: lenient leaves it as it is)",
        "hive.xxx9 uses hive.xxx10.value, which migration 0001_drop_value drops: hive.xxx9 will fail when queried "
        "(invalidation: lenient leaves it as it is)",
    )


def test_cascade_recreates_every_affected_view_in_dependency_order(tmp_path):
    plan = plan_change(tmp_path, HIVE_BASE, DROP_VALUE, "cascade")
    assert steps(plan) == [("alter_columns", "hive.xxx10", False), ("replace_view", "hive.xxx9", False),
                           ("replace_view", "hive.xxx8", False)]
    assert plan.steps[1].summary == "re-create view hive.xxx9: columns (key, value) -> (key)"
    assert plan.warnings == ()


def test_strict_accepts_the_change_when_the_same_change_set_updates_the_views(tmp_path):
    head = {**DROP_VALUE, "schemas/hive/xxx9.yaml": "view: hive.xxx9\nsql: SELECT key FROM xxx10\n",
            "schemas/hive/xxx8.yaml": "view: hive.xxx8\nsql: SELECT xxx.key FROM xxx9 xxx\n"}
    plan = plan_change(tmp_path, HIVE_BASE, head, "strict")
    assert steps(plan) == [("alter_columns", "hive.xxx10", False), ("replace_view", "hive.xxx9", False),
                           ("replace_view", "hive.xxx8", False)]
    assert plan.steps[1].summary == "re-create view hive.xxx9: SQL changed; columns (key, value) -> (key)"


def test_strict_spares_the_views_recompiled_that_the_plan_re_creates_anyway(tmp_path):
    # The SELECT * views are re-created anyway (their columns change): --recompile says that is wanted.
    plan = plan_change(tmp_path, HIVE_BASE, DROP_VALUE, "strict", recompile=("hive.xxx9", "HIVE.xxx8"))
    assert steps(plan) == [("alter_columns", "hive.xxx10", False), ("replace_view", "hive.xxx9", False),
                           ("replace_view", "hive.xxx8", False)]
    assert plan.steps[1].summary == ("re-create view hive.xxx9: columns (key, value) -> (key); "
                                     "recompile requested")
    # Recompiling one of the two still leaves the other broken.
    partly = plan_change(tmp_path / "partly", HIVE_BASE, DROP_VALUE, "strict", recompile=("hive.xxx9",))
    assert partly.steps[0].blocked == (
        "invalidation: strict, and this change breaks 1 view: hive.xxx8 uses hive.xxx9.value, which is re-created "
        "without it. Change those views in the same change set, or set invalidation: lenient or cascade in "
        "schemaflow.yaml")


RETYPE_BASE = {
    "schemas/shop/t.yaml": "table: shop.t\ncolumns: [{name: key, type: int}, {name: value, type: int}]\n",
    "schemas/shop/out.yaml": "view: shop.out\nsql: SELECT key FROM t\n",
    "schemas/shop/filter.yaml": "view: shop.filter\nsql: SELECT value FROM t WHERE key > 0\n",
    "schemas/shop/over.yaml": "view: shop.over\nsql: SELECT key FROM out\n",
}
WIDEN_KEY = {"schemas/shop/t.yaml": "table: shop.t\ncolumns: [{name: key, type: bigint}, {name: value, type: int}]\n"}


def plan_retype(tmp_path: Path, mode: str, schema_modes: dict[str, str | None]) -> Plan:
    """The type change of shop.t.key with the live views' schema modes as given."""
    live = applied_state(project(tmp_path / "base", RETYPE_BASE))
    live = replace(live, objects={k: replace(o, schema_mode=schema_modes[k]) if k in schema_modes else o
                                  for k, o in live.objects.items()})
    return PlanBuilder(project(tmp_path / "head", {**RETYPE_BASE, **WIDEN_KEY}), live, invalidation=mode).build()


def test_a_type_change_breaks_binding_views_whose_output_it_reaches_and_compensation_views_cast(tmp_path):
    plan = plan_retype(tmp_path, "strict", {"shop.out": "BINDING", "shop.filter": "BINDING"})
    [step] = plan.steps
    # shop.filter uses key only in WHERE: Spark checks the types of a view's output, so it keeps working.
    assert step.blocked == (
        "invalidation: strict, and this change breaks 2 views: shop.out uses shop.t.key, which changes type from int "
        "to bigint; shop.out keeps the old type and its schema mode is BINDING, so Spark refuses to read it "
        "(Cannot up cast); shop.over reads shop.out, which fails when queried. Change those views in the same "
        "change set, or set invalidation: lenient or cascade in schemaflow.yaml")
    assert step.notes == ()
    plan = plan_retype(tmp_path / "2", "strict", {"shop.filter": "BINDING"})
    [step] = plan.steps
    assert step.blocked is None
    # shop.over reads shop.out, whose type stays int: nothing changes for it.
    assert step.notes == (
        "shop.out (COMPENSATION) keeps shop.t.key as int: Spark casts the new bigint values back, and a value that "
        "does not fit fails the query",)


def test_cascade_recreates_a_binding_view_and_what_its_new_type_reaches(tmp_path):
    plan = plan_retype(tmp_path, "cascade", {"shop.out": None, "shop.over": "BINDING"})
    assert steps(plan) == [("alter_columns", "shop.t", False), ("replace_view", "shop.out", False),
                           ("replace_view", "shop.over", False)]
    assert plan.steps[1].summary == (
        "re-create view shop.out: re-created after shop.t changed: shop.out uses shop.t.key, which changes type "
        "from int to bigint; shop.out keeps the old type and it stores no schema mode (BINDING in Spark), so Spark "
        "refuses to read it (Cannot up cast)")
    assert plan.steps[2].summary == (
        "re-create view shop.over: re-created after shop.t changed: shop.over uses shop.out.key, which changes "
        "type with shop.t; shop.over keeps the old type and its schema mode is BINDING, so Spark refuses to read it "
        "(Cannot up cast)")


def test_recompile_recreates_a_declared_view_on_demand(tmp_path):
    plan = plan_change(tmp_path, HIVE_BASE, {}, "strict", recompile=("HIVE.xxx7",))
    assert [(s.kind, s.object, s.summary) for s in plan.steps] == [
        ("replace_view", "hive.xxx7", "re-create view hive.xxx7: recompile requested")]
    with pytest.raises(SchemaflowError, match=r"--recompile hive.nope: no such view is declared \(views: hive.xxx7, "):
        plan_change(tmp_path / "again", HIVE_BASE, {}, "strict", recompile=("hive.nope",))


def test_a_star_view_is_recompiled_when_its_table_gains_columns_in_every_mode(tmp_path):
    wider = {"schemas/hive/xxx10.yaml": "table: hive.xxx10\ncolumns: [{name: key, type: int}, "
                                        "{name: value, type: int}, {name: extra, type: string}]\n"}
    for mode in Invalidation:
        plan = plan_change(tmp_path / mode, HIVE_BASE, wider, mode)
        assert steps(plan) == [("add_columns", "hive.xxx10", False), ("replace_view", "hive.xxx9", False),
                               ("replace_view", "hive.xxx8", False)], mode
        assert plan.steps[1].summary == (
            "re-create view hive.xxx9: columns (key, value) -> (key, value, extra); recompile: Spark "
            "expanded * when it created the view, so extra would not appear otherwise")


def test_the_cli_plan_shows_the_strict_refusal_and_exits_1(tmp_path, capsys):
    live = applied_state(project(tmp_path / "base", HIVE_BASE))
    write_snapshot(live, tmp_path / "live.json")
    project(tmp_path / "head", {**HIVE_BASE, **DROP_VALUE})
    assert main(["--project", str(tmp_path / "head"), "plan", "--against", str(tmp_path / "live.json")]) == 1  # blocked: apply would refuse it
    out = capsys.readouterr().out
    assert "1 blocked: apply will refuse this plan" in out.splitlines()[0]
    assert "[destructive; BLOCKED: invalidation: strict, and this change breaks 2 views: hive.xxx8 reads hive.xxx9" in out


def test_a_bad_invalidation_mode_is_an_error_at_its_position(tmp_path, capsys):
    project(tmp_path, HIVE_BASE)
    (tmp_path / "schemaflow.yaml").write_text("databases: [hive]\ninvalidation: loose\n")
    assert main(["--project", str(tmp_path), "validate"]) == 1
    assert capsys.readouterr().err.splitlines()[0] == (
        "schemaflow.yaml:2:15: invalidation must be one of: strict, lenient, cascade (not 'loose')")
    (tmp_path / "schemaflow.yaml").write_text("databases: [hive]\n")
    assert load_project(tmp_path, env={}).settings.invalidation == "strict"


def test_cascade_fails_when_a_view_no_longer_resolves_naming_it_at_its_position(tmp_path):
    base = {**HIVE_BASE, "schemas/hive/pair.yaml": "view: hive.pair\nsql: SELECT key, value FROM xxx10\n"}
    with pytest.raises(SpecError) as caught:
        plan_change(tmp_path, base, DROP_VALUE, "cascade")
    assert [str(p) for p in caught.value.problems] == [
        "schemas/hive/pair.yaml:2:18: unknown column 'value': no table or subquery this query reads has it "
        "(columns of hive.xxx10: key)"]
