"""What follows a successful apply: caches refreshed, other engines told, never hiding the apply.

Engines that cache the metastore (Spark sessions, Trino, Impala, Doris) go on reading the old
definitions of what an apply changed until told otherwise. After an apply, schemaflow refreshes its
own Spark session's cache of every changed table it may have read before (``REFRESH TABLE``; not one
the apply created or dropped, nor a view, of which Spark caches nothing), then runs each command of ``after_apply`` in
``schemaflow.yaml`` in turn, through the shell, with every changed object in ``SCHEMAFLOW_CHANGED``
(``db.name`` separated by spaces, sorted) and on standard input (one a line). A hook that fails or times out is reported with its exit code and the end of its
output; the others still run, and the apply's own outcome, already printed, stands.

A hook runs only once the operator approved it (``code_settings``; apply checks before its first
step), and it gets only what it needs of schemaflow's environment, not the job's secrets: the
variables that find and run programs, and those the operator names in ``SCHEMAFLOW_HOOK_ENV``.

Filtering a child's environment keeps nothing from it on its own: any process of the same user reads
another's ``/proc/<pid>/environ`` and may attach to it. So on Linux a hook runs in process namespaces of
its own (``unshare``: a user, PID and mount namespace with its own ``/proc``), where schemaflow's process
and its JVM do not exist for it: it can neither read their environment nor attach to them. Where the
system allows no namespaces, the hook is not run and the report says how to run hooks without them
(``SCHEMAFLOW_HOOK_ISOLATION=none``, the operator's choice). An approved hook is still code with the
job's privileges: its files, its network, the variables it is passed.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from collections.abc import Callable, Mapping, Sequence

from schemaflow.plan.kinds import Effect, ObjectType
from schemaflow.plan.plan import Plan
from schemaflow.plan.steps import Step
from schemaflow.sql.session import refresh_table

CHANGED_VARIABLE = "SCHEMAFLOW_CHANGED"
PASSED_VARIABLE = "SCHEMAFLOW_HOOK_ENV"  # names of further variables the operator passes to hooks
# What every hook gets of schemaflow's environment: enough to find programs and run them.
HOOK_ENVIRONMENT = ("PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "TERM")
HOOK_TIMEOUT_SECONDS = 600
ISOLATION_VARIABLE = "SCHEMAFLOW_HOOK_ISOLATION"  # "none": run hooks without namespaces (the operator's choice)
# A user namespace (whose root is the job's user), a PID namespace and a /proc of its own; the hook dies with it.
_UNSHARE = ("--user", "--map-root-user", "--pid", "--fork", "--mount-proc", "--kill-child")
OUTPUT_TAIL = 500  # characters of a failed hook's output worth showing


def changed_objects(plan: Plan) -> tuple[str, ...]:
    """The tables and views a plan changes (its databases aside), sorted."""
    return tuple(sorted({s.object for s in plan.steps if s.object_type in (ObjectType.TABLE, ObjectType.VIEW)}))


@dataclass(frozen=True)
class HookFailure:
    command: str
    reason: str  # "exit 3" or "timed out after 600 s"
    output: str  # the end of what it printed

    def describe(self) -> str:
        said = f": {self.output}" if self.output else ""
        return f"after_apply hook `{self.command}` failed ({self.reason}){said}"


def cached_before(plan: Plan) -> tuple[str, ...]:
    """The changed tables this session may hold metadata of from before the apply: neither created by it (no
    earlier metadata to hold) nor, last, dropped (gone: nothing left to refresh). Not a view: Spark keeps no
    metadata of one to refresh, and its REFRESH analyses the view, running the functions its SQL calls (a live
    view's may be code nobody approved: ``plan.view_code``)."""
    steps: dict[str, list[Step]] = {}
    for step in plan.steps:
        if step.object_type == ObjectType.TABLE:
            steps.setdefault(step.object, []).append(step)
    return tuple(sorted(key for key, of in steps.items()
                        if of[0].effect != Effect.CREATE and of[-1].effect != Effect.DROP))


def refresh(objects: Sequence[str], run_sql: Callable[[str], None]) -> list[str]:
    """Refresh this session's cached metadata of each object (``REFRESH TABLE`` takes views too);
    a line for each it could not refresh, which changes nothing in the metastore."""
    failed = []
    for key in objects:
        try:
            run_sql(refresh_table(key))
        except Exception as error:  # noqa: BLE001 -- the cache of this session only: never the apply's outcome
            failed.append(f"could not refresh Spark's cache of {key}: {error}")
    return failed


def hook_environment(environ: Mapping[str, str], objects: Sequence[str]) -> dict[str, str]:
    """What a hook's environment holds: ``HOOK_ENVIRONMENT``, the variables ``SCHEMAFLOW_HOOK_ENV`` names
    (separated by spaces or commas), and the changed objects."""
    names = (*HOOK_ENVIRONMENT, *re.split(r"[\s,]+", environ.get(PASSED_VARIABLE, "")))
    return {**{name: environ[name] for name in names if name in environ}, CHANGED_VARIABLE: " ".join(objects)}


def run_hooks(commands: Sequence[str], objects: Sequence[str], cwd: str,
              timeout: float = HOOK_TIMEOUT_SECONDS, environ: Mapping[str, str] = os.environ) -> list[HookFailure]:
    """Run each hook command in ``cwd`` (the project), telling it ``objects``; the ones that failed.
    Each gets ``hook_environment`` of ``environ``."""
    failures = []
    environment = hook_environment(environ, objects)
    isolation = None if not commands or environ.get(ISOLATION_VARIABLE) == "none" else isolated()
    for command in commands:
        if isinstance(isolation, str):
            failures.append(HookFailure(command, "not run", isolation))
            continue
        try:
            ran = subprocess.run([*(isolation or ()), "/bin/sh", "-c", command], cwd=cwd, env=environment,
                                 input="".join(f"{o}\n" for o in objects), capture_output=True, text=True,
                                 timeout=timeout)
        except subprocess.TimeoutExpired as expired:
            output = expired.stderr or expired.stdout or ""
            text = output.decode(errors="replace") if isinstance(output, bytes) else output
            failures.append(HookFailure(command, f"timed out after {timeout:g} s", _tail(text)))
            continue
        if ran.returncode != 0:
            failures.append(HookFailure(command, f"exit {ran.returncode}", _tail(ran.stderr or ran.stdout)))
    return failures


def isolated() -> tuple[str, ...] | str | None:
    """The command that runs a hook in namespaces of its own on Linux; None elsewhere; a reason where Linux
    has none to give (tried once, with ``true``)."""
    if not sys.platform.startswith("linux"):
        return None
    unshare = shutil.which("unshare")
    prefix = (unshare, *_UNSHARE, "--") if unshare else ()
    tried = subprocess.run([*prefix, "/bin/true"], capture_output=True, text=True) if prefix else None
    if tried is not None and tried.returncode == 0:
        return prefix
    why = tried.stderr.strip() if tried is not None else "no unshare command (util-linux)"
    return (f"this system gives hooks no namespaces of their own ({why}), so a hook could read the job's secrets "
            f"from schemaflow's process; set {ISOLATION_VARIABLE}=none where the job runs to run hooks without them")


def _tail(output: str) -> str:
    text = " ".join(output.split())
    return text if len(text) <= OUTPUT_TAIL else "..." + text[-OUTPUT_TAIL:]
