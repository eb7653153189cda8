"""The pull-request comment, against stored expected files, and the rules GitHub needs it to keep.

Each folder under ``tests/cases/markdown/`` is a change under review: ``base/`` is committed to a
temporary repository (no ``base/``: an empty commit), ``head/`` is left in the work tree, and
``schemaflow plan --base main --format markdown`` must print ``expected.md`` byte for byte (to accept a
deliberate change, run with ``SCHEMAFLOW_UPDATE_GOLDEN=1`` and review the diff).
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from schemaflow.cli import main
from schemaflow.model import Catalog, Column, Table
from schemaflow.plan.plan import PlanBuilder
from schemaflow.render.markdown import MARKER, MAX_CHARACTERS, render
from schemaflow.render.review import Review
from tests.gitrepos import commit, init_repo, put_project
from tests.golden import MARKDOWN_CASES, MARKDOWN_NAMES, golden

CASES, NAMES = MARKDOWN_CASES, MARKDOWN_NAMES


def comment(name: str, project: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """The exit code and the comment for the case ``name``, planned in ``project``."""
    case = CASES / name
    repo = init_repo(project)
    put_project(case / "base" if (case / "base").exists() else None, project)
    commit(repo, "base")
    put_project(case / "head", project)
    code = main(["--project", str(project), "plan", "--base", "main", "--format", "markdown"])
    return code, capsys.readouterr().out


@pytest.mark.parametrize("name", NAMES)
def test_comment_is_the_expected_file(name, tmp_path, capsys):
    code, text = comment(name, tmp_path / "project", capsys)
    assert code == {"no_changes": 0, "blocked_drop": 1}.get(name, 2)  # blocked: the comment is written, then exit 1
    assert text == golden(CASES / name / "expected.md", text)


@pytest.mark.parametrize("name", NAMES)
def test_every_table_row_has_four_cells_and_the_marker_comes_first(name):
    text = (CASES / name / "expected.md").read_text()
    assert text.startswith(MARKER + "\n")
    rows = [line for line in text.splitlines() if line.startswith("| ")]
    # GitHub splits a row at every | that is not escaped, code spans included.
    assert all(len(re.split(r"(?<!\\)\|", row)) == 6 for row in rows)


def test_a_comment_too_long_for_github_leaves_the_statements_out():
    columns = tuple(Column(f"column_{i:03d}", "string", "a comment long enough to count") for i in range(60))
    desired = Catalog(("big",), {f"big.t{i:03d}": Table("big", f"t{i:03d}", columns) for i in range(20)})

    text = render(Review(PlanBuilder(desired, Catalog()).build()))

    assert len(text) <= MAX_CHARACTERS
    assert "<details><summary>Statements" not in text
    nodes = "".join(f'  n{i + 1}["big.t{i:03d} (created)"]\n' for i in range(20))
    assert text.endswith(
        "\n| 21 | `big.t019` | create table big.t019 (60 columns, parquet) |  |\n\n```mermaid\ngraph LR\n" + nodes +
        "  classDef created fill:#dafbe1,stroke:#1a7f37,color:#1f2328\n"
        f"  class {','.join(f'n{i}' for i in range(1, 21))} created\n```\n\n"
        "The statements are left out: with them this comment would be longer than GitHub accepts. "
        "`schemaflow plan --format json` (the workflow's plan.json) has them all.\n")


def test_a_plan_too_long_for_even_its_table_shows_the_rows_that_fit_and_says_where_the_rest_are():
    columns = (Column("id", "bigint", "identifier"),)
    names = [f"t{i:04d}_{'long_name_' * 10}" for i in range(700)]  # a row of about 270 characters
    desired = Catalog(("big",), {f"big.{name}": Table("big", name, columns) for name in names})
    plan = PlanBuilder(desired, Catalog()).build()

    text = render(Review(plan))

    assert len(text) <= MAX_CHARACTERS
    rows = [line for line in text.splitlines() if line.startswith("| ") and not line.startswith("| #")]
    assert 100 < len(rows) < len(plan.steps)
    assert rows == [line for line in _full_table(plan) if line in rows]  # the first ones, whole and in order
    assert "```mermaid" not in text and "<details>" not in text
    assert text.endswith(f"\n\nOnly the first {len(rows)} of 701 steps fit in a comment GitHub accepts: the "
                         "workflow's artifact `schemaflow-plan` (plan.json) has the whole plan, and "
                         "`schemaflow show plan.json` prints it.\n")


def _full_table(plan) -> list[str]:
    from schemaflow.render.markdown import _table

    return _table(plan)[3:len(plan.steps) + 3]


def test_a_live_name_of_any_characters_is_shown_as_itself_in_the_table_and_the_graph():
    # A catalog other than Hive's (REST, Glue) may hold a name a reviewer must see as it is: here an undeclared
    # table of a managed database, planned as a drop.
    name = 'x`|<b>"]@you\nend'
    live = Catalog(("shop",), {f"shop.{name}": Table("shop", name, (Column("id", "int"),))})
    text = render(Review(PlanBuilder(Catalog(("shop",), {}), live).build()))

    [row] = [line for line in text.splitlines() if line.startswith("| 1 |")]
    assert len(re.split(r"(?<!\\)\|", row)) == 6
    assert row.startswith("| 1 | shop.x\\`\\|\\<b\\>\"\\]@&#8203;you<br>end | ")
    [label] = [line for line in text.splitlines() if line.startswith("  n1")]
    assert label == '  n1["shop.x#96;#124;#60;b#62;#34;#93;#64;you#10;end (dropped, blocked)"]'
