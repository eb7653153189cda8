"""Settings handed to another process in a file, not on its command line: every process of the same user reads a
command line (``/proc/<pid>/cmdline``, ``ps``), a hook among them.

The file is readable by this user alone, in a folder of its own that only this user can list (``tempfile``'s), and
both are removed as the ``with`` block ends: once the process has read it.
"""
from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def private_file(name: str, text: str) -> Iterator[Path]:
    """A new file ``name`` holding ``text`` (UTF-8), mode 0600 in a new 0700 folder; removed, folder and all, after."""
    with tempfile.TemporaryDirectory(prefix="schemaflow-") as folder:
        path = Path(folder) / name
        with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w", encoding="utf-8") as file:
            file.write(text)
        yield path
