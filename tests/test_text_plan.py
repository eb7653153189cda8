"""The text plan a person reads in a terminal, as golden files beside each pull-request case.

``tests/cases/markdown/<case>/expected.txt`` is ``plan --base`` in text for the case's base and head;
``expected-color.txt`` is the same plan coloured, as a terminal shows it. To accept a deliberate
change of the format, run with ``SCHEMAFLOW_UPDATE_GOLDEN=1`` and review the diff.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from schemaflow.cli import main
from schemaflow.project import load_project
from schemaflow.render import render
from schemaflow.workflow import review_refs
from tests.gitrepos import commit, init_repo, put_project
from tests.golden import golden
from tests.golden import MARKDOWN_CASES as CASES, MARKDOWN_NAMES as NAMES


def planned(name: str, project: Path) -> None:
    case = CASES / name
    repo = init_repo(project)
    put_project(case / "base" if (case / "base").exists() else None, project)
    commit(repo, "base")
    put_project(case / "head", project)


@pytest.mark.parametrize("name", NAMES)
def test_the_text_plan_is_the_expected_file(name, tmp_path, capsys):
    planned(name, tmp_path)
    main(["--project", str(tmp_path), "plan", "--base", "main"])
    out = capsys.readouterr().out.replace(str(tmp_path), "<project>")
    assert out == golden(CASES / name / "expected.txt", out)
    assert "\033[" not in out  # piped: no colour


@pytest.mark.parametrize("name", ["blocked_drop", "create_everything"])
def test_a_terminal_sees_the_plan_coloured(name, tmp_path):
    planned(name, tmp_path)
    review = review_refs(load_project(tmp_path, env={}), "main")
    coloured = render(review, "text", color=True)
    assert coloured == golden(CASES / name / "expected-color.txt", coloured)
    assert "\033[" in coloured
    assert coloured.replace("\033[32m", "").replace("\033[33m", "").replace("\033[31m", "").replace(
        "\033[31;1m", "").replace("\033[0m", "") == render(review, "text")


def test_no_color_and_the_flag_keep_a_terminal_plain(example, capsys, monkeypatch):
    from schemaflow import cli

    monkeypatch.setattr(cli.sys.stdout, "isatty", lambda: True, raising=False)
    monkeypatch.setenv("NO_COLOR", "1")
    assert cli._display(cli._parser().parse_args(["plan"]))["color"] is False
    monkeypatch.delenv("NO_COLOR")
    assert cli._display(cli._parser().parse_args(["plan"]))["color"] is True
    assert cli._display(cli._parser().parse_args(["plan", "--no-color"]))["color"] is False


def test_bookkeeping_shows_only_when_asked(example, tmp_path, capsys):
    from schemaflow.catalog.snapshot import write_snapshot
    from schemaflow.model import Catalog

    empty = tmp_path / "empty.json"
    write_snapshot(Catalog(), empty)
    main(["--project", str(example), "plan", "--against", str(empty)])
    assert "schemaflow.applied_at" not in capsys.readouterr().out
    main(["--project", str(example), "plan", "--against", str(empty), "--verbose"])
    verbose = capsys.readouterr().out
    assert "set owner='web-analytics', set schemaflow.applied_at='${applied_at}'" in verbose
    assert verbose.rstrip().endswith("Plan: 12 to create, 0 to change, 0 to drop.")


def test_a_change_that_makes_data_unreadable_counts_as_hazardous_in_both_summaries():
    from schemaflow.model import Catalog, Column, Table
    from schemaflow.plan.plan import PlanBuilder
    from schemaflow.render.review import Review

    live = Table("shop", "t", (Column("a", "int"), Column("b", "string")), format="parquet")
    want = Table("shop", "t", (Column("a", "string"), Column("b", "string")), format="parquet")
    plan = PlanBuilder(Catalog(("shop",), {want.key: want}), Catalog(("shop",), {live.key: live})).build()
    [step] = plan.steps
    assert step.hazards and not step.destructive
    text = render(Review(plan), "text")
    # Spark, which the plan is for, cannot read the files as the new type: blocked as a break of its reader.
    assert text.startswith("1 step on 1 object, 0 destructive, 1 hazardous, 1 blocked: apply will refuse this plan.\n")
    assert text.endswith("Plan: 0 to create, 1 to change, 0 to drop, 1 hazardous, 1 blocked.\n")
    assert "**1 step on 1 object, 0 destructive, 1 hazardous, 1 blocked" in render(Review(plan), "markdown")


def test_a_view_whose_sql_changes_shows_a_diff_of_it_not_the_whole_statement():
    from schemaflow.model import Catalog, Column, Table, View
    from schemaflow.plan.plan import PlanBuilder
    from schemaflow.render.review import Review

    table = Table("shop", "t", (Column("a", "int"), Column("b", "string")))
    live = View("shop", "v", "SELECT a\nFROM `shop`.t\nWHERE a > 0", (Column("a", "int"),))  # as view_text stores it
    want = View("shop", "v", "SELECT a\nFROM t\nWHERE a > 1", (Column("a"),),
                reads=("shop.t",), uses={"shop.t": ("a",)}, lineage={"a": ("shop.t.a",)})
    plan = PlanBuilder(Catalog(("shop",), {table.key: table, want.key: want}),
                       Catalog(("shop",), {table.key: table, live.key: live})).build()
    [step] = plan.steps
    assert step.sql_diff == ("--- live", "+++ schemas", "@@ -1,3 +1,3 @@", " SELECT a", " FROM `shop`.t", "-WHERE a > 0",
                             "+WHERE a > 1")
    text = render(Review(plan), "text")
    assert "       -WHERE a > 0\n       +WHERE a > 1\n" in text
    assert "CREATE OR REPLACE VIEW" not in text
    assert "CREATE OR REPLACE VIEW" in render(Review(plan), "text", verbose=True)
    coloured = render(Review(plan), "text", color=True)
    assert "\033[31m-WHERE a > 0\033[0m" in coloured and "\033[32m+WHERE a > 1\033[0m" in coloured
    assert type(step).from_data(step.to_data()) == step  # saved plans keep it


@pytest.mark.parametrize("name", NAMES)
def test_show_prints_a_saved_plan_as_the_golden_text_plan(name, tmp_path, capsys):
    planned(name, tmp_path)
    saved = tmp_path / "plan.json"
    main(["--project", str(tmp_path), "plan", "--base", "main", "--out", str(saved)])
    capsys.readouterr()
    main(["show", str(saved)])
    out = capsys.readouterr().out.replace(str(tmp_path), "<project>")
    assert out == (CASES / name / "expected.txt").read_text()
