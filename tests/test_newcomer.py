"""A newcomer's first hour (issue 30), through the command line as they type it: what --help says first,
help on every argument, completion of values and of the project's own names (in bash's own machinery,
and fish's script read back), and a project found from any folder inside it."""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from schemaflow.catalog.snapshot import write_snapshot
from schemaflow.cli import COMMANDS, _parser, main
from schemaflow.model import Catalog

BIN = Path(sys.executable).parent


def test_help_opens_with_what_the_tool_is(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    about = out.split("\n\n")[1]
    assert " ".join(about.split()) == (
        "Declarative schema migrations for the tables and views of a catalog (a Hive metastore through PySpark, an "
        "Iceberg REST catalog, the AWS Glue Data Catalog): keep their definitions as YAML in git, see what would "
        "change with plan, and make it so with apply.")
    assert "``" not in out


def _parsers() -> dict[str, argparse.ArgumentParser]:
    commands = next(a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction))
    return {"schemaflow": _parser(), **commands.choices}


def test_every_option_and_argument_of_every_command_has_help():
    missing = [f"{name} {action.option_strings or action.metavar or action.dest}"
               for name, parser in _parsers().items() for action in parser._actions
               if not isinstance(action, argparse._SubParsersAction) and not action.help]
    assert missing == []
    assert len(_parsers()) == len(COMMANDS) + 1


def test_target_only_where_it_does_something(capsys):
    targeted = {name for name, parser in _parsers().items() if "--target" in parser._option_string_actions}
    assert targeted == {"schemaflow", "validate", "plan", "apply", "graph", "history", "drift", "import", "snapshot",
                        "view-partitions", "restore", "metastore"}
    with pytest.raises(SystemExit) as stopped:
        main(["--target", "dev", "hash-migrations"])
    assert stopped.value.code == 1
    assert capsys.readouterr().err.endswith("schemaflow: error: argument --target: hash-migrations uses no target; "
                                            "give --target to the commands that reach a catalog or read the "
                                            "project's names\n")
    with pytest.raises(SystemExit):
        main(["init", "--target", "dev"])
    assert "unrecognized arguments: --target dev" in capsys.readouterr().err


def test_a_misspelt_action_is_named_as_the_usage_names_it(capsys):
    with pytest.raises(SystemExit) as stopped:
        main(["view-partitions", "snyc"])
    assert stopped.value.code == 1
    err = capsys.readouterr().err
    assert err.endswith("schemaflow view-partitions: error: argument ACTION: invalid choice: 'snyc' (choose from "
                        "'sync'); did you mean 'sync'?\n")
    assert "argument action" not in err and err.splitlines()[-2].strip().endswith("ACTION")


def test_every_command_finds_the_project_upwards_and_paths_stay_where_typed(example, tmp_path, monkeypatch, capsys):
    inside = example / "schemas" / "retail"
    monkeypatch.chdir(inside)
    assert main(["validate"]) == 0
    assert capsys.readouterr().out == "valid: 6 tables and 4 views in 2 databases (analytics, retail)\n"
    write_snapshot(Catalog(), tmp_path / "empty.json")
    assert main(["plan", "--against", "../../empty.json", "--out", "../plan.json"]) == 2
    assert capsys.readouterr().err.startswith("Saved the plan to ../plan.json; apply it with: schemaflow apply "
                                              "../plan.json")
    assert (example / "schemas" / "plan.json").is_file()
    (example / "schemas" / "plan.json").rename(tmp_path.parent / f"{tmp_path.name}.plan.json")  # not a schema
    assert main(["fmt", "--check"]) == 0
    assert capsys.readouterr().out == "11 files already formatted.\n"
    assert main(["graph", "retail.orders"]) == 0
    assert "retail.orders" in capsys.readouterr().out
    assert main(["completion", "--list", "objects"]) == 0
    assert "retail.orders\n" in capsys.readouterr().out


def test_a_new_project_is_written_here_not_in_a_project_above(example, monkeypatch, capsys):
    fresh = example / "schemas" / "new"
    fresh.mkdir()
    monkeypatch.chdir(fresh)
    assert main(["init", "--database", "shop"]) == 0
    assert (fresh / "schemaflow.yaml").is_file()
    assert "schemaflow validate " in capsys.readouterr().out


HOSTILE = "$(touch pwned)"


def project_with_names(root: Path) -> Path:
    """A project with two targets, two objects, and a schema file whose name is a shell's code."""
    (root / "schemas" / "shop").mkdir(parents=True)
    (root / "schemaflow.yaml").write_text("targets:\n  dev: {}\n  prod: {}\n")
    for name in ("orders", "order_lines", HOSTILE, "`touch pwned`"):
        (root / "schemas" / "shop" / f"{name}.yaml").write_text(f"table: shop.{name}\ncolumns: [{{name: a, type: int}}]\n")
    return root


def bash_completes(words: list[str], cwd: Path) -> list[str]:
    """What bash offers for ``words`` (the last is the one being completed), through ``complete``'s function."""
    script = subprocess.run([BIN / "schemaflow", "completion", "bash"], capture_output=True, text=True,
                            check=True).stdout
    line = " ".join(f"'{word}'" for word in words)
    program = script + f'COMP_WORDS=({line}); COMP_CWORD={len(words) - 1}; ' + \
        "$(complete -p schemaflow | sed 's/.*-F \\([^ ]*\\) .*/\\1/'); printf '%s\\n' \"${COMPREPLY[@]}\""
    done = subprocess.run(["bash", "-c", program], capture_output=True, text=True, check=True, cwd=cwd,
                          env={**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"})
    return [word for word in done.stdout.splitlines() if word]


@pytest.mark.parametrize("words, offered", [
    (["schemaflow", "plan", "--format", ""], ["text", "markdown", "json"]),
    (["schemaflow", "plan", "--format", "m"], ["markdown"]),
    (["schemaflow", "show", "--format", ""], ["text", "markdown"]),
    (["schemaflow", "graph", "--format", ""], ["text", "mermaid", "dot", "json"]),
    (["schemaflow", "plan", "--target", ""], ["dev", "prod"]),
    (["schemaflow", "--target", "p"], ["prod"]),
    (["schemaflow", "graph", ""], ["shop.order_lines", "shop.orders"]),
    (["schemaflow", "history", "shop.orders", "shop.order_"], ["shop.order_lines"]),
    (["schemaflow", "apply", "--recompile", "shop.o"], ["shop.order_lines", "shop.orders"]),
    (["schemaflow", "view-partitions", ""], ["sync"]),
    (["schemaflow", "completion", ""], ["bash", "zsh", "fish"]),
    (["schemaflow", "plan", "--out", ""], []),  # a path: bash's default completion takes over
    (["schemaflow", "graph", "$(touch"], []),
])
def test_bash_completes_values_and_the_projects_names(tmp_path, words, offered):
    project = project_with_names(tmp_path / "project")
    assert bash_completes(words, project / "schemas" / "shop") == offered
    assert not list(tmp_path.rglob("pwned")) and not (Path.cwd() / "pwned").exists()


def test_bash_completes_the_names_of_the_project_given_with_project(tmp_path):
    project = project_with_names(tmp_path / "project")
    assert bash_completes(["schemaflow", "--project", str(project), "plan", "--target", "d"], tmp_path) == ["dev"]
    assert bash_completes(["schemaflow", "plan", "--target", ""], tmp_path) == []  # no project here


def test_a_project_with_invalid_settings_completes_no_targets(tmp_path, capsys):
    project = project_with_names(tmp_path)
    (project / "schemaflow.yaml").write_text(f"targets:\n  '{HOSTILE}': {{}}\n")
    assert main(["--project", str(project), "completion", "--list", "targets"]) == 0
    assert capsys.readouterr().out == ""


def fish_words(text: str) -> list[str]:
    """The words of one line of fish, as fish reads them: single quotes hold \\' and \\\\ as escapes."""
    words, word, quoted, at = [], "", False, 0
    while at < len(text):
        char = text[at]
        if quoted and char == "\\" and text[at + 1] in "'\\":
            word, at = word + text[at + 1], at + 2
            continue
        if char == "'":
            quoted = not quoted
        elif char in " \t" and not quoted:
            if word:
                words.append(word)
            word = ""
        else:
            word += char
        at += 1
    assert not quoted, text
    return words + ([word] if word else [])


def test_fish_completes_commands_options_values_and_names():
    script = subprocess.run([BIN / "schemaflow", "completion", "fish"], capture_output=True, text=True,
                            check=True).stdout
    completes = [fish_words(line) for line in script.splitlines() if line.startswith("complete ")]
    by = {}
    for words in completes:
        assert words[:3] == ["complete", "-c", "schemaflow"], words
        flags, rest = {}, words[3:]
        while rest:  # -f, -x, -r and -F stand alone; the other flags take the word after them
            flag, rest = rest[0], rest[1:]
            if flag in ("-f", "-x", "-r", "-F"):
                flags[flag] = ""
            else:
                flags[flag], rest = rest[0], rest[1:]
        if "-l" in flags:
            by[(flags["-n"], flags["-l"])] = flags
        elif "-a" in flags:
            by[(flags["-n"], flags["-a"])] = flags
    assert by[("__fish_seen_subcommand_from plan", "format")]["-a"] == "text markdown json"
    assert by[("__fish_seen_subcommand_from plan", "format")]["-d"].startswith("text for a terminal")
    assert by[("__fish_seen_subcommand_from plan", "target")]["-a"] == "(__schemaflow_list targets)"
    assert by[("__fish_seen_subcommand_from plan", "out")]["-d"] == "also save the plan as JSON, for apply"
    assert ("__fish_seen_subcommand_from graph", "(__schemaflow_list objects)") in by
    assert by[("__fish_use_subcommand", "fmt")]["-d"].startswith("rewrite the project's YAML files")
    assert {flags["-a"] for (condition, _), flags in by.items() if condition == "__fish_use_subcommand"
            and "-l" not in flags} == {command.name for command in COMMANDS}
    assert ("__fish_seen_subcommand_from init", "target") not in by
    assert re.search(r"^    schemaflow \$project completion --list \$argv\[1\] 2>/dev/null$", script, re.M)


def commented_keys(text: str) -> list[list[int]]:
    """The commented keys of a settings file: for each, its line and those of its commented children."""
    lines = text.splitlines()
    keys = []
    for number, line in enumerate(lines):
        if re.fullmatch(r"# [a-z_]+:.*", line):
            children = [n for n in range(number + 1, len(lines)) if re.match(r"#   ", lines[n])]
            keys.append([number, *[n for n in children if all(c in children for c in range(number + 1, n))]])
    return keys


def test_every_commented_key_of_the_starter_settings_uncommented_is_already_formatted(tmp_path, capsys):
    assert main(["--project", str(tmp_path), "init", "--database", "shop"]) == 0
    settings = tmp_path / "schemaflow.yaml"
    starter = settings.read_text()
    keys = commented_keys(starter)
    assert sorted(starter.splitlines()[key[0]].split(":")[0] for key in keys) == ["# exclude", "# metastore"]
    for chosen in [*([key] for key in keys), keys]:  # each alone, then all together
        lines = starter.splitlines()
        for number in (n for key in chosen for n in key):
            lines[number] = lines[number][2:]
        settings.write_text("\n".join(lines) + "\n")
        capsys.readouterr()
        assert main(["--project", str(tmp_path), "fmt", "--check"]) == 0, capsys.readouterr().out
        assert main(["--project", str(tmp_path), "validate"]) == 0
    assert "metastore:\n  uri: thrift://" in settings.read_text()
    assert "\nexclude: [shop.tmp_*]" in settings.read_text()


def test_a_new_migration_is_called_new_not_changed(example, capsys):
    shutil.copytree(Path(__file__).resolve().parent.parent / "migrations", example / "migrations")
    (example / "migrations" / "0002_x.yaml").write_text(
        "description: Drop the note\nchanges:\n  - drop_column: {table: retail.customers, column: note}\n")
    assert main(["--project", str(example), "validate"]) == 1
    assert capsys.readouterr().err.splitlines()[0] == (
        "migrations/schemaflow.sum:1:1: does not match migrations/ (0002_x.yaml is new: not in it yet): review the "
        "change, then run schemaflow hash-migrations")


def test_an_after_apply_command_read_as_a_mapping_is_told_how_to_quote_it(example, capsys):
    settings = example / "schemaflow.yaml"
    settings.write_text(settings.read_text() + "after_apply:\n  - echo \"changed: $SCHEMAFLOW_CHANGED\" it's\n")
    assert main(["--project", str(example), "validate"]) == 1
    [problem] = [line for line in capsys.readouterr().err.splitlines() if "after_apply" in line]
    assert problem.endswith("after_apply[0] must be a string, not a mapping: YAML reads 'key: value' as a mapping; "
                            "quote the whole text to keep it one: 'echo \"changed: $SCHEMAFLOW_CHANGED\" it''s'")
    quoted = problem.split("keep it one: ")[1]
    settings.write_text(settings.read_text().replace("echo \"changed: $SCHEMAFLOW_CHANGED\" it's", quoted))
    assert main(["--project", str(example), "validate"]) == 0  # as told, it is one string


def test_confirmation_words_agree_with_their_counts(monkeypatch, capsys):
    from schemaflow.cli import _confirm
    from schemaflow.model import Column, Table
    from schemaflow.plan.plan import PlanBuilder

    table = Table("retail", "t", (Column("a", "int"),))
    asked: list[str] = []
    monkeypatch.setattr("builtins.input", lambda prompt: asked.append(prompt) or "yes")
    drop = PlanBuilder(Catalog(("retail",)), Catalog(("retail",), {table.key: table}), allow_destructive=True).build()
    assert _confirm(drop)
    assert capsys.readouterr().out == "\nData destroyed or at risk in 1 step:\n  retail.t: destructive\n"
    assert asked == ["\nApply this step? Only 'yes' is accepted: "]
    two = Table("retail", "u", (Column("a", "int"),))
    assert _confirm(PlanBuilder(Catalog(("retail",)), Catalog(("retail",), {table.key: table, two.key: two}),
                                allow_destructive=True).build())
    assert capsys.readouterr().out.startswith("\nData destroyed or at risk in 2 steps:\n")
    assert asked[-1] == "\nApply these 2 steps? Only 'yes' is accepted: "
