"""The corpus of hostile and unusual inputs: every one refused, located, with nothing written.

Each folder under ``tests/cases/bad_input/`` is a small project (``schemas/``, maybe
``migrations/`` and ``schemaflow.yaml``) and an ``expected.txt`` whose every line must appear in
what schemaflow prints on stderr, usually ``path:line:col: message``. ``refused_by.txt``, when
present, says which command is the first to refuse it: ``validate`` (the default: validate, plan and
apply all refuse it before a metastore is touched) or ``plan`` (only Spark can judge it: validate
accepts it, plan and apply refuse it). The fast test runs validate on every case without a JVM; the
Spark test runs plan and apply on every case against the real metastore and reads the metastore
back, byte for byte, before and after.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.inprocess import schemaflow

CASES = Path(__file__).parent / "cases" / "bad_input"
NAMES = sorted(p.name for p in CASES.iterdir() if p.is_dir())


def refused_by(case: str) -> str:
    marker = CASES / case / "refused_by.txt"
    return marker.read_text().strip() if marker.exists() else "validate"


def expected(case: str) -> list[str]:
    return [line for line in (CASES / case / "expected.txt").read_text().splitlines() if line.strip()]


def project(case: str, tmp_path: Path) -> Path:
    """The case's project, copied so nothing the commands write lands in the source tree."""
    root = tmp_path / case
    shutil.copytree(CASES / case, root, symlinks=True, ignore=shutil.ignore_patterns("expected.txt", "refused_by.txt"))
    (root / "schemas").mkdir(exist_ok=True)
    return root


def assert_refused(case: str, code: int, stderr: str) -> None:
    assert code == 1, f"{case}: exit {code}, stderr:\n{stderr}"
    missing = [line for line in expected(case) if line not in stderr]
    assert not missing, f"{case}: stderr lacks {missing}; it was:\n{stderr}"


def test_corpus_is_large_enough():
    assert len(NAMES) >= 120


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
