"""The first project, step by step (docs/getting-started.md), run as written: its shell blocks in an empty folder with
the installed ``schemaflow`` on the PATH, its one edit, then its PySpark snippet against the same
embedded metastore, through the local server the commands start, as for a newcomer (the server the test run
turns off for other tests is on here, and stopped at the end)."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from schemaflow.catalog.hive import local_server
from schemaflow.project import ENV_LOCAL_SERVER
from tests.pages import walkthrough_blocks as blocks

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.spark


def run(command: list[str], cwd: Path) -> str:
    env = {**{key: value for key, value in os.environ.items() if key != ENV_LOCAL_SERVER}, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "GIT_AUTHOR_NAME": "newcomer", "GIT_AUTHOR_EMAIL": "newcomer@example.invalid",
           "GIT_COMMITTER_NAME": "newcomer", "GIT_COMMITTER_EMAIL": "newcomer@example.invalid",
           "GIT_CONFIG_GLOBAL": os.devnull, "NO_COLOR": "1"}
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=900,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, f"{command}\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.fixture
def folder(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path
    local_server.stop(tmp_path / ".schemaflow")


def test_the_first_project_walkthrough_runs_as_written(folder):
    found = blocks()
    assert [language for language, _ in found] == ["sh", "yaml", "sh", "python"]
    (_, first), (_, column), (_, second), (_, pyspark) = found

    out = run(["bash", "-e", "-o", "pipefail", "-c", first], folder)
    assert "valid: 1 table and 0 views in 1 database (shop)" in out
    assert out.rstrip().endswith("Applied 2 steps.")

    events = folder / "schemas" / "shop" / "events.yaml"
    text = events.read_text()
    at = text.index("\n", text.index("  - {name: at,")) + 1
    events.write_text(text[:at] + column + text[at:])

    out = run(["bash", "-e", "-o", "pipefail", "-c", second], folder)
    assert "add 1 column to shop.events: country string" in out
    assert out.rstrip().endswith("No changes: the metastore matches the schemas (databases: shop).")

    shown = run([sys.executable, "-c", pyspark], folder)
    assert re.search(r"\|\s*1\|\s*signup\|2026-11-23 09:00:00\|\s*NL\|2026-11-23\|", shown), shown
    # It shared the server the commands started, and opened no Derby database of its own.
    assert local_server.running(folder / ".schemaflow") is not None
    assert not (folder / "metastore_db").exists()
