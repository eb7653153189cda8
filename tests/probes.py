"""What a test measures of what schemaflow did, from outside it: the connections made to a port of the loopback,
and the bytes this process read (the kernel's count, not schemaflow's own)."""
from __future__ import annotations

import socket
import threading
from pathlib import Path


class Listener:
    """A port of the loopback that counts the connections made to it, and hangs up on each; ``close`` ends it."""

    def __init__(self) -> None:
        self.socket = socket.create_server(("127.0.0.1", 0))
        self.uri = f"thrift://127.0.0.1:{self.socket.getsockname()[1]}"
        self.accepted = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self.socket.accept()
            except OSError:  # closed
                return
            self.accepted += 1
            connection.close()

    def close(self) -> None:
        self.socket.close()


def bytes_read() -> int:
    """What this process has read so far, through ``read`` and its kin (``rchar`` of /proc/self/io)."""
    return int(next(line for line in Path("/proc/self/io").read_text().splitlines()
                    if line.startswith("rchar:")).split()[1])
