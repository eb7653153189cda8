"""Where a project's files are read from: a directory, or (``schemaflow.gitsource``) a git commit.

The spec reads a project through this small interface, so one loader checks the working tree and
any commit alike: list the files below a folder, open one. Paths are POSIX paths relative to the
project root (``schemas/retail/orders.yaml``), the paths every error message shows. A file is
anything with a ``name`` and ``read_bytes()``, as a ``pathlib.Path`` has.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol


class ProjectFile(Protocol):
    """One file of a project: its name and its bytes."""

    @property
    def name(self) -> str: ...

    def read_bytes(self) -> bytes: ...


class ProjectFiles(Protocol):
    """A project's files, wherever they are kept."""

    def files_under(self, folder: str) -> list[str]:
        """The paths of every file below ``folder``, at any depth; none when there is no such folder."""
        ...

    def open(self, path: str) -> ProjectFile | None:
        """The file at ``path``, or None when there is no file there."""
        ...


@dataclass(frozen=True)
class Directory:
    """A project in a directory on disk: the working tree, uncommitted edits and all."""

    root: Path

    def files_under(self, folder: str) -> list[str]:
        return [file.relative_to(self.root).as_posix() for file in (self.root / folder).rglob("*") if file.is_file()]

    def open(self, path: str) -> Path | None:
        file = self.root / path
        return file if file.is_file() else None
