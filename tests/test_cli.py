"""The command line without a JVM: validate, plan against a snapshot, exit codes, refusals."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from schemaflow.catalog.snapshot import write_snapshot
from schemaflow.cli import main
from schemaflow.model import Catalog
from schemaflow.project import load_project
from schemaflow.plan.plan import Basis
from schemaflow.workflow import applied_state, desired_state

ROOT = Path(__file__).resolve().parent.parent


def applied_snapshot(project_dir: Path, path: Path) -> Path:
    """A snapshot of the live state a perfect apply of the project would leave."""
    live = applied_state(desired_state(load_project(project_dir, env={})))
    write_snapshot(live, path, partition_counts={"retail.orders": 30})
    return path


def test_validate_accepts_the_example(example, capsys):
    assert main(["--project", str(example), "validate"]) == 0
    assert capsys.readouterr().out == "valid: 6 tables and 4 views in 2 databases (analytics, retail)\n"


def test_validate_reports_every_problem_with_its_position(example, capsys):
    orders = example / "schemas/retail/orders.yaml"
    orders.write_text(orders.read_text().replace("type: bigint}", "type: bigitn}", 1))
    assert main(["--project", str(example), "validate"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("schemas/retail/orders.yaml:6:31: unknown type 'bigitn'")
    assert err[-1] == "1 problem found; nothing was planned or applied."


def test_plan_exit_codes_against_snapshots(example, tmp_path, capsys):
    empty = tmp_path / "empty.json"
    write_snapshot(Catalog(), empty)
    assert main(["--project", str(example), "plan", "--against", str(empty)]) == 2
    assert capsys.readouterr().out.startswith("12 steps on 12 objects, 0 destructive.\n")
    same = applied_snapshot(example, tmp_path / "same.json")
    assert main(["--project", str(example), "plan", "--against", str(same)]) == 0
    assert capsys.readouterr().out == f"No changes: the snapshot {same} matches the schemas (databases: analytics, retail).\n"


def test_plan_shows_partition_counts_and_saves_json_that_apply_reads(example, tmp_path, capsys):
    snapshot = applied_snapshot(example, tmp_path / "live.json")
    orders = example / "schemas/retail/orders.yaml"
    orders.write_text(orders.read_text().replace('  - {name: amount, type: "decimal(12,2)"}\n',
                                                 '  - {name: amount, type: "decimal(12,2)"}\n'
                                                 '  - {name: coupon, type: string}\n'))
    out = tmp_path / "plan.json"
    assert main(["--project", str(example), "plan", "--against", str(snapshot), "--out", str(out)]) == 2
    text = capsys.readouterr().out
    assert "1. add 1 column to retail.orders: coupon string\n" in text
    assert "note: table only: 30 partitions keep their old column list" in text
    saved = json.loads(out.read_text())
    # The views over retail.orders name the columns they use: an appended column breaks none of them.
    assert [(s["kind"], s["object"]) for s in saved["steps"]] == [("add_columns", "retail.orders")]


def test_markdown_and_json_formats(example, tmp_path, capsys):
    empty = tmp_path / "empty.json"
    write_snapshot(Catalog(), empty)
    main(["--project", str(example), "plan", "--against", str(empty), "--format", "markdown"])
    markdown = capsys.readouterr().out
    escaped = str(empty).replace("_", "\\_")  # Markdown would read a pair of _ as emphasis
    assert markdown.startswith(
        "<!-- schemaflow-plan -->\n### schemaflow plan\n\n**12 steps on 12 objects, 0 destructive.**\n\n"
        f"Planned: the working tree against the snapshot {escaped}, without a metastore: "
        "partition counts are unknown.\n\n| # | object |")
    assert "| 4 | `analytics.sessions` | create table analytics.sessions (5 columns, partitioned by (ds), parquet) | properties: set owner |" in markdown
    main(["--project", str(example), "plan", "--against", str(empty), "--format", "json"])
    first = capsys.readouterr().out
    main(["--project", str(example), "plan", "--against", str(empty), "--format", "json"])
    assert capsys.readouterr().out == first  # stable, byte for byte
    assert json.loads(first)["format_version"] == 4


def test_apply_refuses_a_blocked_saved_plan_without_starting_spark(example, tmp_path, capsys):
    live = tmp_path / "live.json"
    applied_snapshot(example, live)
    (example / "schemas/analytics/marketing_spend.yaml").unlink()  # no view reads it
    out = tmp_path / "plan.json"
    # A plan with a blocked step fails, so a pull request whose change cannot be applied fails its check.
    assert main(["--project", str(example), "plan", "--against", str(live), "--out", str(out)]) == 1
    planned = capsys.readouterr()
    assert planned.out.startswith("1 step on 1 object, 1 destructive, 1 blocked: apply will refuse this plan.\n")
    assert planned.err.splitlines() == [f"Saved the plan to {out}", "error: 1 step blocked: apply would refuse this plan"]
    assert main(["--project", str(example), "apply", str(out), "--auto-approve"]) == 1
    err = capsys.readouterr().err
    assert "the plan has 1 blocked step; nothing was applied:\n  analytics.marketing_spend: destructive: run with " \
           "--allow-destructive to allow it" in err
    assert "Starting Spark" not in err
    # As the reviewed plan of a merge (apply --reviewed): refused before the metastore is read, Spark not started.
    assert main(["--project", str(example), "apply", "--reviewed", str(out), "--auto-approve"]) == 1
    err = capsys.readouterr().err
    assert "the plan has 1 blocked step; nothing was applied:\n  analytics.marketing_spend: destructive" in err
    assert "Starting Spark" not in err
    assert main(["--project", str(example), "apply", str(out), "--allow-destructive", "--auto-approve"]) == 1
    assert "a saved plan runs as reviewed" in capsys.readouterr().err
    assert main(["--project", str(example), "apply", str(out), "--recompile", "retail.daily_revenue",
                 "--auto-approve"]) == 1
    assert "a saved plan runs as reviewed: plan again to re-create views with --recompile" in capsys.readouterr().err


def test_apply_needs_a_terminal_or_auto_approve(example, tmp_path, capsys, monkeypatch):
    empty = tmp_path / "empty.json"
    write_snapshot(Catalog(), empty)
    out = tmp_path / "plan.json"
    main(["--project", str(example), "plan", "--against", str(empty), "--out", str(out)])
    monkeypatch.setattr("sys.stdin.isatty", lambda: False)
    assert main(["--project", str(example), "apply", str(out)]) == 1
    assert "not a terminal, so no one can confirm: pass --auto-approve to apply" in capsys.readouterr().err


def test_a_damaged_plan_file_is_refused(example, tmp_path, capsys):
    bad = tmp_path / "plan.json"
    bad.write_text("{not json")
    assert main(["--project", str(example), "apply", str(bad), "--auto-approve"]) == 1
    assert capsys.readouterr().err.startswith(f"error: {bad}: not a schemaflow plan")


def test_not_a_project(tmp_path, capsys):
    assert main(["--project", str(tmp_path), "validate"]) == 1
    assert "no schemas/ directory here" in capsys.readouterr().err


def test_environment_overrides_the_settings_file(example):
    env = {"SCHEMAFLOW_METASTORE_URI": "thrift://10.1.2.3:9083", "SCHEMAFLOW_SPARK_MASTER": "yarn",
           "SCHEMAFLOW_WAREHOUSE_DIR": "s3a://bucket/warehouse"}
    settings = load_project(example, env=env).settings
    assert (settings.metastore_uri, settings.spark_master, settings.warehouse_dir) == (
        "thrift://10.1.2.3:9083", "yarn", "s3a://bucket/warehouse")
    defaults = load_project(example, env={}).settings
    assert (defaults.metastore_uri, defaults.spark_master, defaults.spark_conf) == (
        None, "local[2]", {"spark.sql.shuffle.partitions": "4"})
    assert defaults.warehouse_dir == str(example / ".schemaflow" / "warehouse")


def test_a_plan_not_made_against_the_metastore_is_refused_before_starting_spark(example, tmp_path, capsys):
    empty = tmp_path / "empty.json"
    write_snapshot(Catalog(), empty)
    out = tmp_path / "plan.json"
    main(["--project", str(example), "plan", "--against", str(empty), "--out", str(out)])
    assert main(["--project", str(example), "apply", str(out), "--auto-approve"]) == 1
    err = capsys.readouterr().err
    assert f"error: {out} was planned against snapshot, not the metastore" in err
    assert "Starting Spark" not in err


@pytest.mark.parametrize("edit", [
    lambda plan: plan["steps"][0]["actions"][0].update(sql="DROP DATABASE retail CASCADE"),
    lambda plan: plan.update(allow_destructive=True),
    lambda plan: plan["fingerprints"].clear(),
])
def test_an_edited_plan_file_is_refused(example, tmp_path, capsys, edit):
    empty = tmp_path / "empty.json"
    write_snapshot(Catalog(), empty)
    out = tmp_path / "plan.json"
    main(["--project", str(example), "plan", "--against", str(empty), "--out", str(out)])
    document = json.loads(out.read_text())
    edit(document)
    out.write_text(json.dumps(document))
    assert main(["--project", str(example), "apply", str(out), "--auto-approve"]) == 1
    assert capsys.readouterr().err.endswith(
        f"error: {out}: refused, its checksum does not match its content: it was changed after schemaflow wrote it; "
        "make a new one with schemaflow plan --out\n")


def test_project_is_accepted_after_the_command_too(example, tmp_path, capsys):
    assert main(["validate", "--project", str(example)]) == 0
    assert main(["--project", str(tmp_path), "validate", "--project", str(example)]) == 0  # the later one wins
    assert capsys.readouterr().out.count("valid: 6 tables and 4 views") == 2


def test_validate_as_json_gives_ci_the_located_problems(example, capsys):
    import json

    assert main(["--project", str(example), "validate", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"valid": True, "problems": [], "databases": ["analytics", "retail"],
                                                   "tables": 6, "views": 4}
    orders = example / "schemas/retail/orders.yaml"
    orders.write_text(orders.read_text().replace('type: "decimal(12,2)"', 'type: "decimal(39,2)"')
                      .replace("comment:", "colums_typo: x\ncomment:", 1))
    assert main(["--project", str(example), "validate", "--format", "json"]) == 1
    captured = capsys.readouterr()
    problems = json.loads(captured.out)["problems"]
    assert captured.err == ""
    line = orders.read_text().splitlines().index("colums_typo: x") + 1
    assert [(p["path"], p["line"], p["col"], p["message"].split(" (")[0]) for p in problems] == [
        ("schemas/retail/orders.yaml", line, 1, "unknown key 'colums_typo'")]  # a wrong shape goes no further


@pytest.mark.parametrize("args, suggestion", [
    (["plna"], "; did you mean 'plan'?"),
    (["plan", "--alow-destructive"], "; did you mean '--allow-destructive'?"),
    (["graph", "--format", "jsn"], "; did you mean 'json'?"),
    (["apply", "--auto-aprove"], "; did you mean '--auto-approve'?"),
])
def test_a_typo_is_answered_with_what_was_meant(example, capsys, args, suggestion):
    with pytest.raises(SystemExit) as stopped:
        main(["--project", str(example), *args])
    assert stopped.value.code == 1
    assert capsys.readouterr().err.splitlines()[-1].endswith(suggestion)


def test_a_word_like_no_command_gets_no_suggestion(example, capsys):
    with pytest.raises(SystemExit):
        main(["xyzzy"])
    assert "did you mean" not in capsys.readouterr().err


def test_show_prints_a_saved_plan_as_plan_did_anywhere(example, tmp_path, capsys, monkeypatch):
    empty = tmp_path / "empty.json"
    write_snapshot(Catalog(), empty)
    saved = tmp_path / "plan.json"
    assert main(["--project", str(example), "plan", "--against", str(empty), "--out", str(saved)]) == 2
    printed = capsys.readouterr().out
    monkeypatch.chdir(tmp_path)  # no project here: a saved plan stands alone
    assert main(["show", str(saved)]) == 2
    assert capsys.readouterr().out == printed
    assert main(["show", str(saved), "--format", "markdown"]) == 2
    assert "12 steps" in capsys.readouterr().out
    (tmp_path / "broken.json").write_text("{")
    assert main(["show", str(tmp_path / "broken.json")]) == 1
    assert capsys.readouterr().err.startswith("error: ")


def test_init_writes_a_starter_project_that_validates_and_plans(tmp_path, capsys):
    project = tmp_path / "new"
    assert main(["--project", str(project), "init", "--database", "Sales"]) == 0
    out = capsys.readouterr().out
    assert f"wrote {project / 'schemas' / 'sales' / 'events.yaml'}\n" in out
    assert f"  schemaflow --project {project} plan " in out
    assert sorted(str(p.relative_to(project)) for p in project.rglob("*") if p.is_file()) == [
        ".github/workflows/schemaflow-apply-on-merge.yml", ".github/workflows/schemaflow-plan-on-pull-request.yml",
        ".gitignore", "migrations/.gitkeep", "schemaflow.yaml", "schemas/sales/events.yaml"]
    assert main(["--project", str(project), "validate"]) == 0
    assert capsys.readouterr().out == "valid: 1 table and 0 views in 1 database (sales)\n"
    empty = tmp_path / "empty.json"
    write_snapshot(Catalog(), empty)
    assert main(["--project", str(project), "plan", "--against", str(empty)]) == 2
    assert "create table sales.events (3 columns, partitioned by (ds), parquet)" in capsys.readouterr().out
    assert (project / ".gitignore").read_text() == ".schemaflow/\nplan.json\nreviewed.json\n"
    assert (project / "migrations" / ".gitkeep").read_text() == ""
    # The workflows are the package's own, as they are.
    assert "SCHEMAFLOW_PACKAGE: \"\"" in (project / ".github/workflows/schemaflow-plan-on-pull-request.yml").read_text()


def test_init_never_overwrites_what_is_there_unless_forced(tmp_path, capsys):
    (tmp_path / "schemaflow.yaml").write_text("databases: [mine]\n")
    assert main(["--project", str(tmp_path), "init"]) == 1
    assert "schemaflow.yaml already exist: nothing was written" in capsys.readouterr().err
    assert (tmp_path / "schemaflow.yaml").read_text() == "databases: [mine]\n"
    assert not (tmp_path / "schemas").exists()
    assert main(["--project", str(tmp_path), "init", "--force"]) == 0
    assert "databases: [warehouse]" in (tmp_path / "schemaflow.yaml").read_text()
    assert main(["--project", str(tmp_path), "init", "--database", "9lives"]) == 1


def test_every_commands_help_says_what_it_does_its_exit_codes_and_an_example(capsys):
    from schemaflow.cli import COMMANDS, _parser

    _HELP = {command.name: (command.exits, command.example) for command in COMMANDS}
    commands = next(a for a in _parser()._actions if a.dest == "command")
    assert sorted(commands.choices) == sorted(_HELP)
    for name in sorted(_HELP):
        with pytest.raises(SystemExit) as stopped:
            main([name, "--help"])
        assert stopped.value.code == 0
        out = capsys.readouterr().out
        codes, example = _HELP[name]
        assert f"\nexit codes: {codes}\nexample:\n  {example}\n" in out, name
        assert example.startswith(f"schemaflow {name}")
    assert "Check the project's YAML, without a catalog." in main_help("validate", capsys)


def main_help(command: str, capsys) -> str:
    with pytest.raises(SystemExit):
        main([command, "--help"])
    return capsys.readouterr().out


@pytest.mark.parametrize("words, offered", [
    (["schemaflow", "pl"], "plan"),
    (["schemaflow", "--project", "x", "ap"], "apply"),
    (["schemaflow", "plan", "--al"], "--allow-destructive"),
    (["schemaflow", "--project", "x", "plan", "--no"], "--no-color"),
])
def test_bash_completes_commands_and_their_options(capsys, words, offered):
    import shutil
    import subprocess

    assert main(["completion", "bash"]) == 0
    script = capsys.readouterr().out
    bash = shutil.which("bash")
    assert bash is not None
    line = " ".join(words)
    completed = subprocess.run([bash, "-c", script + f'COMP_WORDS=({line}); COMP_CWORD={len(words) - 1}; '
                                "_schemaflow; echo \"${COMPREPLY[@]}\""], capture_output=True, text=True, check=True)
    assert completed.stdout.split() == [offered]


def test_fmt_check_shows_the_diff_and_exits_2_then_fmt_writes_and_check_passes(example, capsys):
    orders = example / "schemas" / "retail" / "orders.yaml"
    canonical = orders.read_text()
    orders.write_text("# Orders\n" + canonical.replace("format: parquet\n", "").replace(
        "table: retail.orders\n", "table: retail.orders\nformat: parquet  # as Spark writes it\n"))
    assert main(["--project", str(example), "fmt", "--check"]) == 2
    captured = capsys.readouterr()
    assert captured.out.startswith("--- a/schemas/retail/orders.yaml\n+++ b/schemas/retail/orders.yaml\n")
    assert (" table: retail.orders\n+comment: One row per order line\n format: parquet  # as Spark writes it\n"
            "-comment: One row per order line\n") in captured.out
    assert captured.err == "1 file would be reformatted: run schemaflow fmt\n"
    assert "format: parquet  # as Spark" in orders.read_text().splitlines()[2]  # --check wrote nothing

    assert main(["fmt", "--project", str(example)]) == 0
    assert capsys.readouterr().out == "formatted schemas/retail/orders.yaml\n"
    assert orders.read_text() == "# Orders\n" + canonical.replace("format: parquet\n", "format: parquet  # as Spark writes it\n")
    assert main(["--project", str(example), "fmt", "--check"]) == 0
    assert capsys.readouterr().out == "11 files already formatted.\n"


def test_fmt_formats_what_it_can_and_names_what_it_cannot(example, capsys):
    (example / "schemas" / "retail" / "broken.yaml").write_text("table: retail.broken\ncolumns: [\n")
    assert main(["--project", str(example), "fmt"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("schemas/retail/broken.yaml:3:1: ")
    assert err[-1] == "error: 1 file could not be formatted (left as they are)"
    assert (example / "schemas" / "retail" / "broken.yaml").read_text() == "table: retail.broken\ncolumns: [\n"


def test_a_saved_plan_made_from_other_files_is_refused_before_any_jvm_starts(example, tmp_path):
    """Run in a fresh interpreter: this process may have imported pyspark for other tests."""
    import subprocess
    import sys
    from dataclasses import replace

    from schemaflow.workflow import review_snapshot

    project = load_project(example, env={})
    planned = review_snapshot(project, applied_snapshot(example, tmp_path / "live.json")).plan
    saved = tmp_path / "plan.json"  # as plan --out writes it against the metastore it reaches
    saved.write_text(replace(planned, basis=Basis.METASTORE, metastore="thrift://metastore.example.com:9083").to_json())
    orders = example / "schemas/retail/orders.yaml"
    orders.write_text(orders.read_text().replace("type: bigint}", "type: bigint, comment: changed since}", 1))
    args = ["--project", str(example), "apply", str(saved), "--auto-approve"]
    script = ("import sys; from schemaflow.cli import main; "
              f"code = main({args!r}); "
              "print(code, sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j')), file=sys.stderr)")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=60)
    said = result.stderr.splitlines()
    assert said[-1] == "1 []", result.stderr
    assert said[-2] == (f"error: {saved} is refused, nothing was applied: it was made from other schemas or migrations "
                        f"than {example} holds now (another project, or files changed since). Plan again.")


def test_a_saved_plan_of_no_steps_applies_nothing_without_reaching_the_metastore(example, tmp_path):
    """As the README's two commands run once nothing is left to do: the files decide it (they still must match),
    and it runs nothing, so no JVM starts and no metastore is asked. Here the metastore it names is one this
    project does not reach, which checking it would refuse."""
    from dataclasses import replace

    from schemaflow.workflow import review_snapshot

    project = load_project(example, env={})
    planned = review_snapshot(project, applied_snapshot(example, tmp_path / "live.json")).plan
    assert planned.is_empty
    saved = tmp_path / "plan.json"
    saved.write_text(replace(planned, basis=Basis.METASTORE, metastore="thrift://metastore.example.com:9083").to_json())
    args = ["--project", str(example), "apply", str(saved), "--auto-approve"]
    script = ("import sys; from schemaflow.cli import main; "
              f"code = main({args!r}); "
              "print(code, sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j')), file=sys.stderr)")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert result.stderr.splitlines() == ["0 []"]
    assert result.stdout.startswith("No changes")
    orders = example / "schemas/retail/orders.yaml"  # the files are still checked: changed since, it is refused
    orders.write_text(orders.read_text().replace("type: bigint}", "type: bigint, comment: changed since}", 1))
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert result.stderr.splitlines()[-1] == "1 []"
    assert "it was made from other schemas or migrations than" in result.stderr


def test_a_process_a_test_starts_imports_the_checkout_under_test(tmp_path):
    """Its path puts the checkout before site-packages, where another installed copy would be found."""
    started = subprocess.run([sys.executable, "-c", "import json, sys; print(json.dumps(sys.path))"], cwd=tmp_path,
                             capture_output=True, text=True, check=True)
    path = json.loads(started.stdout)
    checkout = str(Path(__file__).resolve().parent.parent)
    packages = next(i for i, entry in enumerate(path) if entry.endswith("site-packages"))
    assert checkout in path[:packages]


def test_a_reader_that_goes_away_ends_the_output_not_the_command(example, tmp_path):
    """``schemaflow ... | grep -q`` or ``| head``: the pipe closes before the command is done printing. It finishes
    its work (here the saved plan), says nothing of the pipe and exits with its own code."""
    import os

    empty = tmp_path / "empty.json"
    write_snapshot(Catalog(), empty)
    saved = tmp_path / "plan.json"
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first line
    with os.fdopen(write_end, "w") as closed:
        result = subprocess.run([sys.executable, "-m", "schemaflow", "--project", str(example), "plan", "--against",
                                 str(empty), "--out", str(saved)], stdout=closed, stderr=subprocess.PIPE, text=True,
                                cwd=ROOT, timeout=60)
    assert result.returncode == 2
    assert result.stderr == f"Saved the plan to {saved}; apply it with: schemaflow apply {saved}\n"  # no traceback
    assert len(json.loads(saved.read_text())["steps"]) == 12
