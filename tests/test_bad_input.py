"""The corpus of hostile and unusual inputs: every one refused, located, with nothing written.

Each folder under ``tests/cases/bad_input/`` is a small project (``schemas/``, maybe
``migrations/`` and ``schemaflow.yaml``) and an ``expected.txt`` whose every line must appear in
what schemaflow prints on stderr, usually ``path:line:col: message``. ``refused_by.txt``, when
present, says which command is the first to refuse it: ``validate`` (the default: validate, plan and
apply all refuse it before a metastore is touched) or ``plan`` (only Spark can judge it: validate
accepts it, plan and apply refuse it). A case git cannot hold (a pipe, a file of 30 MB) is made when
the case is copied (``MADE``). The fast test runs validate on every case without a JVM; the Spark test
runs plan and apply on every case against the real metastore and reads the metastore back, byte for
byte, before and after. The corpus covers every refusal validate can make: each ``Problem`` the
project's checks construct, and each JSON Schema keyword the file formats use.
"""
from __future__ import annotations

import ast
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

import schemaflow as package
from schemaflow import errors
from schemaflow.spark_version import spark_version
from schemaflow.spec import schema
from schemaflow.spec.code_files import MAX_BYTES, MAX_FILES
from tests.inprocess import schemaflow

CASES = Path(__file__).parent / "cases" / "bad_input"
NAMES = sorted(p.name for p in CASES.iterdir() if p.is_dir())


def _thirty_megabytes_then_an_error(root: Path) -> None:
    lines = ["table: bad.t", "columns:", "  - {name: a, type: int}", "comment: |"]
    text = "\n".join(lines) + "\n" + ("  " + "x" * 98 + "\n") * 300_000 + "columns: [\n"
    (root / "schemas" / "bad").mkdir(parents=True)
    (root / "schemas" / "bad" / "t.yaml").write_text(text)


def _more_files_than_a_project(root: Path) -> None:
    (root / "venv").mkdir()
    for number in range(MAX_FILES + 1):
        (root / "venv" / f"{number}.py").touch()


def _more_bytes_than_a_project(root: Path) -> None:
    with (root / "data.bin").open("wb") as data:  # sparse: nothing is written, and it is refused unread
        data.truncate(MAX_BYTES + 1)


MADE: dict[str, Callable[[Path], None]] = {
    "a_fifo_in_schemas": lambda root: os.mkfifo(root / "schemas" / "bad" / "u.yaml"),
    "a_file_of_30_mb_with_an_error_on_its_last_line": _thirty_megabytes_then_an_error,
    "a_fifo_beside_a_hook": lambda root: os.mkfifo(root / "notify.sh"),
    "b_more_files_than_a_project_beside_a_hook": _more_files_than_a_project,
    "b_more_bytes_than_a_project_beside_a_hook": _more_bytes_than_a_project,
}


def refused_by(case: str) -> str:
    marker = CASES / case / "refused_by.txt"
    return marker.read_text().strip() if marker.exists() else "validate"


def expected(case: str) -> list[str]:
    """The lines a refusal of ``case`` must say; where Spark words a refusal otherwise in the release
    the tests run on (Spark 3.5), ``expected.spark-<release>.txt`` holds them as that release says them."""
    release = CASES / case / "expected.spark-{}.{}.txt".format(*spark_version())
    chosen = release if release.exists() else CASES / case / "expected.txt"
    return [line for line in chosen.read_text().splitlines() if line.strip()]


def project(case: str, tmp_path: Path) -> Path:
    """The case's project, copied so nothing the commands write lands in the source tree."""
    root = tmp_path / case
    shutil.copytree(CASES / case, root, symlinks=True, ignore=shutil.ignore_patterns("expected*.txt", "refused_by.txt"))
    if case in MADE:
        MADE[case](root)
    (root / "schemas").mkdir(exist_ok=True)
    return root


def assert_refused(case: str, code: int, stderr: str) -> None:
    assert code == 1, f"{case}: exit {code}, stderr:\n{stderr}"
    missing = [line for line in expected(case) if line not in stderr]
    assert not missing, f"{case}: stderr lacks {missing}; it was:\n{stderr}"


def test_corpus_is_large_enough():
    assert len(NAMES) >= 120


# The modules whose refusals validate makes (fmt, plan --base's git reading and the checks against a
# live table have their own tests), and the refusals no case can hold, each with the reason.
VALIDATE_RULES = [*sorted((Path(package.__file__).parent / "spec").glob("*.py")),
                  Path(package.__file__).parent / "target.py", Path(package.__file__).parent / "workflow.py"]
NOT_IN_THE_CORPUS = {
    "fmt.py": "fmt's own refusals, tested in test_fmt",
    "went away while schemaflow read the project": "a file removed while it is read: a race",
    "cannot read the file: {error.strerror}": "an OS error reading a file: the suite runs as root, whom modes do not stop",
    "cannot read this folder": "an OS error listing a folder: the suite runs as root, whom modes do not stop",
    "takes the project past": "256 MiB of YAML: test_trust_boundary lowers the bound to reach it",
    "needs pyiceberg, which is not installed here": "plan's refusal of an Iceberg table without pyiceberg, which "
                                                    "the suite installs: tests/test_iceberg.py hides it",
}


def _problem_sites() -> list[tuple[str, int, int, str]]:
    """Every ``Problem(...)`` in the validate modules: file, first and last line, source text."""
    sites = []
    for path in VALIDATE_RULES:
        text = path.read_text()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Problem":
                segment = ast.get_source_segment(text, node) or ""
                if not any(marker in segment or marker == path.name for marker in NOT_IN_THE_CORPUS):
                    sites.append((str(path), node.lineno, node.end_lineno or node.lineno, segment))
    return sites


def _schema_keywords() -> set[str]:
    """The JSON Schema keywords that can refuse a value, as the shipped file formats use them."""
    ignored = {"$schema", "$id", "$ref", "$defs", "$comment", "title", "description", "properties", "items",
               "if", "then", "else"}
    found: set[str] = set()

    def walk(value: object) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                if key in ("default", "examples"):  # annotations holding values, not keywords
                    continue
                if key not in ignored:
                    found.add(key)
                walk(list(item.values()) if key in ("properties", "$defs") and isinstance(item, dict) else item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    for name in ("table", "view", "source", "settings", "migration", "schema-file"):
        walk(schema.inlined_schema(name))
    return found


def test_every_refusal_validate_makes_has_a_case(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    made: dict[tuple[str, int], set[str]] = {}
    keywords: dict[str, set[str]] = {}
    case = ""
    construct, reword = errors.Problem.__init__, schema._problems

    def recorded(self: errors.Problem, *args: object, **kwargs: object) -> None:
        caller = sys._getframe(1)
        while caller.f_code.co_filename in ("<string>", errors.__file__):  # the dataclass's own __init__
            caller = caller.f_back  # type: ignore[assignment]
        made.setdefault((caller.f_code.co_filename, caller.f_lineno), set()).add(case)
        construct(self, *args, **kwargs)  # type: ignore[arg-type]

    def reworded(doc, error):  # type: ignore[no-untyped-def]
        for keyword in {str(error.validator), *map(str, error.schema_path)}:  # propertyNames is on the path
            keywords.setdefault(keyword, set()).add(case)
        return reword(doc, error)

    monkeypatch.setattr(errors.Problem, "__init__", recorded)
    monkeypatch.setattr(schema, "_problems", reworded)
    for case in NAMES:
        schemaflow("--project", str(project(case, tmp_path)), "validate")
    uncovered = [f"{Path(path).name}:{first}: {text.splitlines()[0]}" for path, first, last, text in _problem_sites()
                 if not any(hit == path and first <= line <= last for hit, line in made)]
    assert not uncovered, "refusals no case makes:\n" + "\n".join(uncovered)
    assert sorted(_schema_keywords() - keywords.keys()) == []


@pytest.mark.parametrize("case", NAMES)
def test_validate(case: str, tmp_path: Path):
    ran = schemaflow("--project", str(project(case, tmp_path)), "validate")
    if refused_by(case) == "plan":
        assert ran.code == 0, f"{case}: validate should accept what only Spark can judge:\n{ran.err}"
    else:
        assert_refused(case, ran.code, ran.err)


def metastore_dump(metastore) -> dict[str, list[str]]:
    """Every database and every table of the metastore, as the JSON of its Thrift objects."""
    import json

    dump = {}
    for database in metastore.databases():
        data = metastore.to_data(metastore.msc.getDatabase(database))
        tables = [json.dumps(t, sort_keys=True) for t in metastore.table_data(database)]
        dump[database] = [json.dumps(data, sort_keys=True)] + sorted(tables)
    return dump


@pytest.mark.spark
def test_plan_and_apply_refuse_every_case_and_write_nothing(metastore, tmp_path: Path):
    before = metastore_dump(metastore)
    failures = []
    for case in NAMES:
        root = project(case, tmp_path)
        for args in (("plan",), ("apply", "--auto-approve")):
            ran = schemaflow("--project", str(root), *args)
            missing = [line for line in expected(case) if line not in ran.said]
            if ran.code != 1 or missing:
                failures.append(f"{case}: {args[0]} exit {ran.code}, lacks {missing}:\n{ran.said}")
        after = metastore_dump(metastore)
        if after != before:
            failures.append(f"{case}: the metastore changed")
            before = after
    assert not failures, "\n".join(failures)
