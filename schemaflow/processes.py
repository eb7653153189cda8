"""Other processes on this machine: whether one still runs, whether something listens on a local port.

For the state schemaflow leaves between commands (the JVM's class archive being written, the embedded
metastore's local server), which names the processes it belongs to.
"""
from __future__ import annotations

import os
import socket


def alive(pid: int) -> bool:
    """Whether the process ``pid`` runs (another user's included)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def accepts(port: int) -> bool:
    """Whether something accepts connections on ``port`` of the loopback address."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False
