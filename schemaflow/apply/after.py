"""What follows a successful apply: caches refreshed, other engines told, never hiding the apply.

Engines that cache the metastore (Spark sessions, Trino, Impala, Doris) go on reading the old
definitions of what an apply changed until told otherwise. After an apply, schemaflow has the catalog's writer
do what follows an apply there (``CatalogWriter.after_apply``: the Hive metastore's refreshes its own Spark
session's cache) for every changed table it may have read before (not one the apply created or dropped, nor a view,
of which Spark caches nothing), then runs each command of ``after_apply`` in
``schemaflow.yaml`` in turn, through the shell, with every changed object in ``SCHEMAFLOW_CHANGED``
(``db.name`` separated by spaces, sorted) and on standard input (one a line). A hook that fails or times out is reported with its exit code and the end of its
output; the others still run, and the apply's own outcome, already printed, stands.

A hook runs only once the operator approved it (``code_settings``; apply checks before its first
step), and it gets only what it needs of schemaflow's environment, not the job's secrets: the
variables that find and run programs, and those the operator names in ``SCHEMAFLOW_HOOK_ENV``.

Filtering a child's environment keeps nothing from it on its own: any process of the same user reads
another's ``/proc/<pid>/environ``, and every process reads another's command line. So a hook runs in a
sandbox (``sandbox``: bubblewrap), where schemaflow's process and its JVM do not exist, where it sees the
machine's software, the project folder read-only and no more, and writes one folder of its own:
``hooks`` in the project's state directory (``.schemaflow/hooks``), its ``HOME`` and ``SCHEMAFLOW_HOOK_DIR``,
made empty before an apply's hooks run (so no file a pull request committed there, a start-up file of a
shell, of git or of Python, is in it) and left for the operator after. Where no sandbox can be made
(bubblewrap missing, or the system refusing it namespaces), the hook is not run and the report says
how to run hooks without one (``SCHEMAFLOW_HOOK_ISOLATION=none``, the operator's choice). An approved
hook is still code with the job's network and the variables it is passed.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from collections.abc import Mapping, Sequence

from schemaflow.apply.sandbox import sandbox
from schemaflow.plan.kinds import Effect, ObjectType
from schemaflow.plan.plan import Plan
from schemaflow.plan.steps import Step

CHANGED_VARIABLE = "SCHEMAFLOW_CHANGED"
FOLDER_VARIABLE = "SCHEMAFLOW_HOOK_DIR"  # the hooks' own folder, the one they write
PASSED_VARIABLE = "SCHEMAFLOW_HOOK_ENV"  # names of further variables the operator passes to hooks
# What every hook gets of schemaflow's environment: enough to find programs and run them (its HOME and TMPDIR are
# its own folders).
HOOK_ENVIRONMENT = ("PATH", "USER", "LOGNAME", "SHELL", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TERM")
HOOK_FOLDER = "hooks"  # in the project's state directory
HOOK_TIMEOUT_SECONDS = 600
ISOLATION_VARIABLE = "SCHEMAFLOW_HOOK_ISOLATION"  # "none": run hooks without a sandbox (the operator's choice)
TEMPORARY = "/tmp"  # the sandbox's own
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


def hook_environment(environ: Mapping[str, str], objects: Sequence[str], folder: str) -> dict[str, str]:
    """What a hook's environment holds: ``HOOK_ENVIRONMENT`` and the variables ``SCHEMAFLOW_HOOK_ENV`` names
    (separated by spaces or commas) of ``environ``, its own ``folder`` (as ``HOME`` too), ``/tmp`` as
    ``TMPDIR``, and the changed objects."""
    names = (*HOOK_ENVIRONMENT, *re.split(r"[\s,]+", environ.get(PASSED_VARIABLE, "")))
    return {**{name: environ[name] for name in names if name in environ}, "HOME": folder, "TMPDIR": TEMPORARY,
            FOLDER_VARIABLE: folder, CHANGED_VARIABLE: " ".join(objects)}


def run_hooks(commands: Sequence[str], objects: Sequence[str], project: str, state: str,
              timeout: float = HOOK_TIMEOUT_SECONDS, environ: Mapping[str, str] = os.environ) -> list[HookFailure]:
    """Run each hook command in ``project``, telling it ``objects``, each in a sandbox (unless ``environ`` sets
    ``SCHEMAFLOW_HOOK_ISOLATION=none``) with ``hook_environment`` of ``environ`` and the folder ``hooks`` of
    ``state`` (the project's state directory), made empty first; the ones that failed."""
    if not commands:
        return []
    folder = os.path.join(os.path.abspath(state), HOOK_FOLDER)
    prefix = _emptied(folder) or _isolation(project, state, folder, environ)
    if isinstance(prefix, str):
        return [HookFailure(command, "not run", prefix) for command in commands]
    failures = []
    environment = hook_environment(environ, objects, folder)
    for command in commands:
        try:
            ran = subprocess.run([*prefix, "/bin/sh", "-c", command], cwd=project, env=environment,
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


def _emptied(folder: str) -> str | None:
    """Make the hooks' ``folder`` anew, empty; why it cannot be, if so. Nothing a pull request committed there is
    in a hook's HOME when it starts, and no link a pull request committed on its way (``.schemaflow`` pointing at
    the repository's ``.git``) makes another folder the one hooks write."""
    if os.path.realpath(folder) != folder:
        return (f"the hooks' folder {folder} is reached through a symbolic link, so it could be any folder (the "
                "repository's .git, the runner's files): make it a folder of its own")
    try:
        if os.path.isdir(folder):
            shutil.rmtree(folder)
        elif os.path.lexists(folder):
            os.remove(folder)
        os.makedirs(folder)
    except OSError as error:
        return f"the hooks' folder could not be made anew: {error}"
    return None


def _isolation(project: str, state: str, folder: str, environ: Mapping[str, str]) -> list[str] | str:
    """What runs a hook: a sandbox's command, nothing where the operator chose no isolation, or why hooks are not
    run."""
    if environ.get(ISOLATION_VARIABLE) == "none":
        return []
    made = sandbox(project, state, folder, environ)
    if isinstance(made, list):
        return made
    return (f"no sandbox for hooks here ({made}), and outside one a hook could read the job's secrets from "
            "schemaflow's processes and write the runner's files; install bubblewrap (apt-get install bubblewrap), "
            f"or set {ISOLATION_VARIABLE}=none where the job runs to run hooks without isolation")


def _tail(output: str) -> str:
    text = " ".join(output.split())
    return text if len(text) <= OUTPUT_TAIL else "..." + text[-OUTPUT_TAIL:]
