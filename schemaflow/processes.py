"""Other processes on this machine: whether one still runs, whether something listens on a local port.

For the state schemaflow leaves between commands (the JVM's class archive being written, the embedded
metastore's local server), which names the processes it belongs to.
"""
from __future__ import annotations

import os
import socket
from pathlib import Path

PROC = Path("/proc")  # where Linux shows each process's command line


def alive(pid: int) -> bool:
    """Whether the process ``pid`` runs (another user's included): one that has ended, but its parent has not
    collected yet (a zombie, where the system shows it), does not."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    try:  # "pid (name) state ...": the name may hold anything, the state follows its last parenthesis
        return (PROC / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def runs(pid: int, *arguments: str) -> bool:
    """Whether the process ``pid`` runs with each of ``arguments`` among its command line's, where the system shows
    command lines (Linux); elsewhere, whether it runs: a process id written down earlier may be another program's now."""
    if not alive(pid):
        return False
    if not (PROC / "self" / "cmdline").exists():
        return True
    try:
        started_with = (PROC / str(pid) / "cmdline").read_bytes().split(b"\0")
    except OSError:  # it ended meanwhile
        return False
    return all(argument.encode() in started_with for argument in arguments)


def accepts(port: int) -> bool:
    """Whether something accepts connections on ``port`` of the loopback address."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False
