"""Test projects: written from YAML text, planned and applied in the test process, and the ``schemaflow`` command
run on them as a user runs it: a process of its own, on the checkout under test, paused at a chosen point where a
test needs to kill or race it (``paused_apply.py``)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from schemaflow.apply.executor import apply_plan
from schemaflow.catalog.hive import local_server
from schemaflow.catalog.live import Live
from schemaflow.catalog.snapshot import read_snapshot
from schemaflow.errors import SpecError
from schemaflow.model import Catalog
from schemaflow.plan.plan import Plan
from schemaflow.project import Project, load_project
from schemaflow.spec import load_catalog
from schemaflow.workflow import make_plan

ROOT = Path(__file__).resolve().parent.parent
PAUSED_APPLY = Path(__file__).with_name("paused_apply.py")  # the command line with a pause injected


def write_project(root: Path, files: dict[str, str]) -> Project:
    """A project of YAML files (replacing any schemas it had), loaded with no environment overrides."""
    shutil.rmtree(root / "schemas", ignore_errors=True)
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return load_project(root, env={})


def reported(root: Path) -> list[str]:
    """The ``path:line:col: message`` lines loading the project at ``root`` reports (none: it loads)."""
    try:
        load_catalog(root)
    except SpecError as error:
        return [str(problem) for problem in error.problems]
    return []


def plan(project: Project, metastore: Any, allow_destructive: bool = False, **options: Any) -> Plan:
    """The plan of ``project`` against the metastore of the test session (``metastore``)."""
    return make_plan(project, Live(project, connected=metastore), allow_destructive=allow_destructive, **options)


def plan_and_apply(project: Project, metastore: Any, allow_destructive: bool = False) -> Plan:
    result = plan(project, metastore, allow_destructive)
    apply_plan(result, metastore)
    return result


def schemaflow(project: Path, *args: str, env: Mapping[str, str | None] | None = None,
               timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """``schemaflow ARGS`` run in ``project`` as a user runs it (relative paths are the project's), from the checkout
    under test, with no terminal; ``env`` adds to the environment (None: a variable taken out)."""
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    for key, value in (env or {}).items():
        if value is None:
            environment.pop(key, None)
        else:
            environment[key] = value
    return subprocess.run([sys.executable, "-m", "schemaflow", *args], cwd=project, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL, env=environment)


def live_state(project: Path, scratch: Path) -> Catalog:
    """The live state of ``project``'s databases, as ``schemaflow snapshot`` saves it (into ``scratch``)."""
    out = scratch / f"live-{time.monotonic_ns()}.json"
    result = schemaflow(project, "snapshot", "--out", str(out))
    assert result.returncode == 0, result.stderr
    return read_snapshot(out)


def paused(project: Path, point: str, *args: str) -> tuple[subprocess.Popen[str], Path]:
    """``schemaflow apply --auto-approve`` started in the background and stopped at ``point``."""
    marker = project / f"paused-{point}-{time.monotonic_ns()}"
    process = subprocess.Popen([sys.executable, str(PAUSED_APPLY), point, str(marker), "apply", "--auto-approve", *args],
                               cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while not marker.exists():
        if process.poll() is not None:
            out, err = process.communicate()
            raise AssertionError(f"apply ended before reaching {point}:\n{out}\n{err}")
        assert time.monotonic() < deadline, f"apply did not reach {point}"
        time.sleep(0.1)
    return process, marker


def resume(process: subprocess.Popen[str], marker: Path) -> tuple[int, str, str]:
    """Let the apply ``paused`` stopped go on, and wait for it: its exit code, output and errors."""
    marker.unlink()
    out, err = process.communicate(timeout=600)
    return process.returncode, out, err


def done_steps(stdout: str) -> list[str]:
    """The summaries of the steps a run reports done."""
    return [line.split("] ", 1)[1].rsplit(" ... ", 1)[0] for line in stdout.splitlines()
            if line.startswith("[") and " ... done (" in line]


def aliased_table(name: str) -> str:
    """A file within every bound of one file whose aliases add 67,885 values (the project allows 100,000)."""
    levels = ["a: &a [x, x, x, x, x, x, x, x, x, x]"] + [
        f"{b}: &{b} [{', '.join(['*' + a] * 10)}]" for a, b in zip("abc", "bcd", strict=True)]
    return f"table: bad.{name}\n" + "\n".join(levels) + "\ne: [*d, *d, *d, *d, *d]\n"


def serving(project: Path) -> local_server.Served:
    """The local metastore server that serves ``project``'s embedded metastore; fails the test where none does."""
    found = local_server.running(project / ".schemaflow")
    assert found is not None, "no local server serves the project"
    return found
