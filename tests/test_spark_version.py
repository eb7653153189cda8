"""The Spark release plans are made for: the installed pyspark's, else the one schemaflow.yaml declares; a pull
request's plan runs without pyspark, and an installed pyspark of another release than declared is refused."""
from __future__ import annotations

import pytest

from schemaflow import spark_version as module
from schemaflow.catalog.hive import backend as hive_backend
from schemaflow.cli import main
from schemaflow.errors import SchemaflowError
from schemaflow.spark_version import parse_release, spark_version
from schemaflow.workflow import review_refs
from schemaflow.project import load_project
from tests.gitrepos import commit, edit, example_repo


@pytest.fixture
def without_pyspark(monkeypatch):
    """As where pyspark is not installed (a pull request's plan job)."""
    for where in (module, hive_backend):
        monkeypatch.setattr(where, "installed", lambda: None)


def test_the_installed_release_is_the_one_and_must_be_the_declared_one(monkeypatch):
    monkeypatch.setattr(module, "installed", lambda: ((4, 1), "4.1.2"))
    assert spark_version() == spark_version((4, 1)) == (4, 1)
    with pytest.raises(SchemaflowError) as raised:
        spark_version((3, 5))
    assert str(raised.value) == ("schemaflow.yaml: spark.release is 3.5, but pyspark 4.1.2 is installed here: install "
                                 "pyspark 3.5.x, or change spark.release to the release apply runs with (a plan for "
                                 "another release says other things)")


def test_without_pyspark_the_declared_release_is_the_one_and_without_either_a_plan_says_what_to_do(without_pyspark):
    assert spark_version((3, 5)) == (3, 5)
    with pytest.raises(SchemaflowError, match=r"pyspark is not installed: install schemaflow with its extra spark \(pip install "
                                              r"'<where schemaflow comes from>\[spark\]', from a clone: pip install "
                                              r"'/path/to/schemaflow\[spark\]'\), or declare the release in schemaflow.yaml"):
        spark_version()
    assert parse_release("3.5") == (3, 5) and parse_release("10.12") == (10, 12)


def test_a_pull_request_plans_without_pyspark_for_the_declared_release(tmp_path, without_pyspark, capsys):
    root = tmp_path / "repo"
    repo = example_repo(root)
    items = root / "schemas/retail/items.yaml"
    items.write_text("table: retail.items\nformat: parquet\ncolumns:\n  - {name: id, type: bigint}\n"
                     "  - {name: quantity, type: int}\n")
    commit(repo, "items")
    edit(items, "{name: quantity, type: int}", "{name: quantity, type: bigint}")
    # Without a declared release the plan cannot say what the Spark apply runs with reads: it says so.
    assert main(["--project", str(root), "plan", "--base", "HEAD"]) == 1
    assert "pip install '/path/to/schemaflow[spark]'), or declare the release" in capsys.readouterr().err
    # Declared 3.5: Spark 3.5's Parquet reader cannot read the old files as bigint, which the plan says; 4.0 reads them.
    settings = root / "schemaflow.yaml"
    hazards = {}
    for release in ("3.5", "4.0"):
        edit(settings, "spark:\n", f"spark:\n  release: \"{release}\"\n")
        plan = review_refs(load_project(root, env={}), "HEAD").plan
        [step] = [s for s in plan.steps if s.object == "retail.items"]
        hazards[release] = step.hazards
        edit(settings, f"  release: \"{release}\"\n", "")
    assert hazards["3.5"] == ("type quantity int -> bigint: Spark 3.5 cannot read existing parquet files as bigint; "
                              "queries over them fail",), hazards
    assert hazards["4.0"] == (), hazards


def test_a_command_that_runs_spark_without_pyspark_says_how_to_install_it(tmp_path, without_pyspark, capsys):
    root = tmp_path / "repo"
    example_repo(root)
    edit(root / "schemaflow.yaml", "spark:\n", "spark:\n  release: \"4.0\"\n")
    assert main(["--project", str(root), "plan"]) == 1
    assert capsys.readouterr().err.splitlines()[-1] == (
        "error: this command runs Spark, and pyspark is not installed: install schemaflow with its extra spark (pip "
        "install '<where schemaflow comes from>[spark]', from a clone: pip install '/path/to/schemaflow[spark]'); "
        "pyspark is an extra: a plan --base needs none")


def test_a_release_that_is_not_major_dot_minor_is_refused_where_it_is_written(tmp_path, capsys):
    root = tmp_path / "repo"
    example_repo(root)
    edit(root / "schemaflow.yaml", "spark:\n", "spark:\n  release: 4.0.1\n")
    assert main(["--project", str(root), "validate"]) == 1
    err = capsys.readouterr().err
    assert "schemaflow.yaml:4:12: " in err and "4.0.1" in err, err
