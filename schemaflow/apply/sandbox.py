"""A hook's sandbox: bubblewrap runs it where it sees only what it was given, and cannot undo that.

An approved ``after_apply`` hook runs in the job that applies, beside what the hook was not given: schemaflow's
process and its JVM (whose command line carries Spark's settings), the runner's files (the step-environment
files a later step reads, the checkout's ``.git/config``, where ``actions/checkout`` keeps the job's token unless
told not to) and everything else of the machine. So each hook runs under bubblewrap (``bwrap``):

- processes: namespaces of its own (``--unshare-all``: PID, IPC, UTS, cgroup and a user namespace) with a fresh
  ``/proc``, where no other process of the machine exists, and it dies with schemaflow (``--die-with-parent``);
- privilege: no capabilities (``--cap-drop ALL``: run as root, as CI containers often are, bwrap otherwise
  leaves the hook every one) and no user namespace of its own making (``--disable-userns``), so it can neither
  unmount its ``/proc`` nor build a namespace where it could; a session of its own (``--new-session``), so it
  cannot push input into the job's terminal (TIOCSTI);
- files: an allow-list. Its root is empty and read-only; it sees, read-only, the machine's installed software
  (``code_settings.SYSTEM_FOLDERS``; one that is a link, ``/bin -> usr/bin``, is made the same link), the folders
  the operator supplies code from (``SCHEMAFLOW_CODE_PATHS``), the folders on its ``PATH`` and the Python
  installation schemaflow runs on (its prefixes: ``python3 -m tools.notify`` and a virtual environment's tools
  run), the file ``/etc/resolv.conf`` points to (names resolve where systemd-resolved keeps it in ``/run``),
  and the project folder, its working folder, without the repository's ``.git`` and the project's state
  directory (the embedded metastore and its logs). One folder is writable: its own, in the state directory.
  ``/tmp`` and ``/dev`` are its own and end with it. A folder on ``PATH`` or a prefix that holds the project
  (``/``, the checkout) is not shown: it would show the repository and the runner's files around it;
- network: shared with the job, because hooks exist to tell other services (Trino, Impala) what changed.

bubblewrap, Flatpak's sandbox, is a system program rather than mount code of ours because making such a
sandbox is subtle (the order of the mounts, read-only remounts, the pivot into an empty root, dropping
capabilities, an init that reaps) and bubblewrap is small, audited and well kept. ``unshare`` alone, which
schemaflow used before, cannot be made safe by itself: it gives the hook root in a user namespace of its own,
which unmounts the ``/proc`` it was given and sees the machine's beneath it, and it shares every file of the
machine; showing only what a hook needs means building its view mount by mount and locking it, bubblewrap's
work.

The hook's environment goes to bwrap as its own environment, which bwrap hands on (setting ``PWD``), never as
``--setenv`` arguments: a command line is readable by every process of the machine.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from schemaflow.code_settings import SYSTEM_FOLDERS, operator_paths
from schemaflow.spec.code_files import checkout_of

BUBBLEWRAP = "bwrap"
# Namespaces of its own but the network's; no capabilities, no further user namespace; its own session, /proc,
# /dev and /tmp; killed with schemaflow.
_ISOLATION = ("--unshare-all", "--share-net", "--unshare-user", "--disable-userns", "--cap-drop", "ALL",
              "--die-with-parent", "--new-session", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp")
_RESOLVER = "/etc/resolv.conf"  # often a link into /run (systemd-resolved's stub), which is not shown
_REPOSITORY = ".git"


def sandbox(project: str, state: str, folder: str, environ: Mapping[str, str]) -> list[str] | str:
    """The command that runs a program as a hook of ``project`` (shown read-only, without its repository's
    ``.git`` and without ``state``, the state directory), writing only into ``folder``, and seeing the folders
    ``environ`` names (``PATH``, ``SCHEMAFLOW_CODE_PATHS``); or why none can be made here (tried once)."""
    bwrap = shutil.which(BUBBLEWRAP, path=environ.get("PATH", os.defpath))
    if not bwrap:
        return "bubblewrap (bwrap) is not on PATH"
    prefix = [bwrap, *arguments(project, state, folder, environ), "--"]
    try:
        tried = subprocess.run([*prefix, "/bin/true"], capture_output=True, text=True, env={}, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"bwrap did not run: {error}"
    if tried.returncode != 0:
        return f"bwrap could not make a sandbox here: {' '.join(tried.stderr.split()) or f'exit {tried.returncode}'}"
    return prefix


def arguments(project: str, state: str, folder: str, environ: Mapping[str, str]) -> list[str]:
    """bwrap's options for a hook of ``project`` (see ``sandbox``), every path absolute and normalised."""
    project, state, folder = (os.path.abspath(path) for path in (project, state, folder))
    options = list(_ISOLATION)
    shown: list[str] = []  # the real paths of the folders bound so far

    def show(path: str) -> None:
        real = os.path.realpath(path)
        if os.path.isdir(real) and not any(_within(real, other) for other in (*shown, project)):
            options.extend(("--ro-bind", path, path))
            shown.append(real)

    for system in SYSTEM_FOLDERS:
        if os.path.islink(system):
            options.extend(("--symlink", os.readlink(system), system))
    for system in SYSTEM_FOLDERS:
        show(os.path.realpath(system))
    automatic = [*_path_folders(environ), sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix]
    for path in sorted({*operator_paths(environ),
                        *(path for path in automatic if not _within(project, os.path.realpath(path)))}):
        show(path)
    resolver = os.path.realpath(_RESOLVER)
    if os.path.isfile(resolver) and not any(_within(resolver, other) for other in shown):
        options.extend(("--ro-bind", resolver, resolver))

    def visible(path: str) -> bool:
        return any(_within(os.path.realpath(path), other) for other in (*shown, project))

    options.extend(("--ro-bind", project, project))
    checkout = checkout_of(Path(project))
    repository = str(checkout / _REPOSITORY) if checkout is not None else None
    if repository and visible(repository):
        options.extend(("--tmpfs", repository, "--remount-ro", repository) if os.path.isdir(repository)
                       else ("--ro-bind", os.devnull, repository))
    hidden_state = visible(state)
    if hidden_state:
        options.extend(("--tmpfs", state))
    options.extend(("--bind", folder, folder))
    if hidden_state:
        options.extend(("--remount-ro", state))
    options.extend(("--remount-ro", "/", "--chdir", project))
    return options


def _path_folders(environ: Mapping[str, str]) -> list[str]:
    """The absolute folders on ``PATH``, normalised (a relative entry is the working folder's, shown anyway)."""
    return [os.path.normpath(entry) for entry in environ.get("PATH", "").split(os.pathsep) if entry.startswith("/")]


def _within(path: str, folder: str) -> bool:
    return os.path.commonpath((path, folder)) == folder

