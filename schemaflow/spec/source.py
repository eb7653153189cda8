"""Where a project's files are read from: a directory, or (``schemaflow.gitsource``) a git commit.

The spec reads a project through this small interface, so one loader checks the working tree and
any commit alike: list the files below a folder, open one. Paths are POSIX paths relative to the
project root (``schemas/retail/orders.yaml``), the paths every error message shows. A file is
anything with a ``name`` and ``read_bytes()``, as a ``pathlib.Path`` has.

Nothing below a folder is skipped unsaid: symlinks are followed (a database folder may be a link),
and what cannot be read as a file is listed as a problem at its path: a symlink that leads nowhere,
a loop, a second way to a folder already read, a device. Each folder is read once, so a tree of
links cannot make the work grow beyond the folders that exist.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol
from collections.abc import Callable, Hashable

from schemaflow.errors import Problem, SpecError
from schemaflow.model import Source
from schemaflow.spec.code_files import NOT_A_FILE, checkout_of, working_tree


class ProjectFile(Protocol):
    """One file of a project: its name and its bytes."""

    @property
    def name(self) -> str: ...

    def read_bytes(self) -> bytes: ...


@dataclass(frozen=True)
class ReadFile:
    """A file's bytes, read once, in the shape of a ``ProjectFile``."""

    name: str
    content: bytes

    def read_bytes(self) -> bytes:
        return self.content


class ProjectFiles(Protocol):
    """A project's files, wherever they are kept."""

    def files_under(self, folder: str) -> tuple[list[str], list[Problem]]:
        """The paths of every file below ``folder``, at any depth and sorted (none when there is no
        such folder), and a problem for each thing below it that cannot be read as a file."""
        ...

    def open(self, path: str) -> ProjectFile | None:
        """The file at ``path``, or None when nothing is there; raises ``SpecError`` when something
        that cannot be read as a file is (a folder, a symlink that leads nowhere)."""
        ...

    def checkout(self) -> str | None:
        """The folder of the repository's checkout that holds the project folder (outside git, the project folder
        itself): what lies below it is the repository's, which a pull request writes."""
        ...

    def code_files(self) -> dict[str, str]:
        """Every file of the project folder that code settings can run, by path, with the id of its content
        (``spec.code_files``); raises ``SpecError`` for a file refused there."""
        ...


def folder_problem(path: str) -> Problem:
    return Problem(Source(path), "expected a file here, found a folder: rename or move the folder")


def dangling_link(target: str, where: str = "") -> str:
    return f"a symlink to '{target}', which leads to no file or folder{where}: fix or remove the link"


@dataclass(frozen=True)
class Entry:
    """One thing in a folder, as a ``ProjectFiles`` sees it: a file, a folder to read, or a reason it is neither."""

    name: str
    folder: object = None           # a folder: what ``walk`` hands back to list its entries
    identity: Hashable = None       # a folder: the same whichever way leads to it
    link: str | None = None         # a folder reached through a symlink: the link's target
    reason: str | None = None       # neither a file nor a folder that can be read: why


def walk(folder: str, top: Any, identity: Hashable,
         entries: Callable[[Any], list[Entry]]) -> tuple[list[str], list[Problem]]:
    """Every file below ``folder`` (whose entries ``entries(top)`` lists) and the problems found, for ``files_under``.

    Links are followed, but each folder is read once: the folders reached without a link are read
    first, so that a folder is known by its own path, then those behind links in the order found;
    a link to a folder already read is a problem (a loop when it leads to an ancestor, else its
    files would be declared twice).
    """
    files: list[str] = []
    problems: list[Problem] = []
    read: dict[Hashable, str] = {}
    # To read: a path, its folder and identity, the identities of the folders around it, the link that led there.
    direct: list[tuple[str, Any, Hashable, tuple[Hashable, ...], str | None]] = [(folder, top, identity, (), None)]
    linked: list[tuple[str, Any, Hashable, tuple[Hashable, ...], str | None]] = []
    while direct or linked:
        path, here, identity, around, link = direct.pop() if direct else linked.pop(0)
        if identity in read:
            problems.append(_revisit(path, read[identity], identity in around, link))
            continue
        read[identity] = path
        try:
            listed = entries(here)
        except OSError as error:
            problems.append(Problem(Source(path), f"cannot read this folder: {error.strerror}"))
            continue
        for entry in listed:
            below = f"{path}/{entry.name}"
            if entry.reason is not None:
                problems.append(Problem(Source(below), entry.reason))
            elif entry.folder is None:
                files.append(below)
            else:
                (linked if entry.link else direct).append(
                    (below, entry.folder, entry.identity, around + (identity,), entry.link))
    return sorted(files), problems


def _revisit(path: str, first: str, loop: bool, target: str | None) -> Problem:
    link = f"a symlink to '{target}'" if target else "this folder, reached through a symlink,"
    if loop:
        return Problem(Source(path), f"{link} leads back to {first}, a folder that contains it: a loop; "
                                     "remove the link")
    return Problem(Source(path), f"{link} leads to the folder already read as {first}: each folder is read once, or "
                                 "its files would be declared twice; remove one of the two ways to it")


@dataclass(frozen=True)
class Directory:
    """A project in a directory on disk: the working tree, uncommitted edits and all."""

    root: Path

    def files_under(self, folder: str) -> tuple[list[str], list[Problem]]:
        top = self.root / folder
        if top.is_dir():
            return walk(folder, top, _identity(top), self._entries)
        return [], ([Problem(Source(folder), dangling_link(os.readlink(top)))] if top.is_symlink() else [])

    def open(self, path: str) -> Path | None:
        file = self.root / path
        if file.is_file():
            return file
        if file.is_dir():
            raise SpecError([folder_problem(path)])
        if file.is_symlink():
            raise SpecError([Problem(Source(path), dangling_link(os.readlink(file)))])
        return None

    def checkout(self) -> str:
        root = self.root.resolve()
        return str(checkout_of(root) or root)

    def code_files(self) -> dict[str, str]:
        return working_tree(self.root.resolve())

    @staticmethod
    def _entries(folder: Path) -> list[Entry]:
        entries = []
        for item in sorted(folder.iterdir()):
            link = os.readlink(item) if item.is_symlink() else None
            if item.is_dir():
                entries.append(Entry(item.name, item, _identity(item), link))
            elif item.is_file():
                entries.append(Entry(item.name))
            elif link is not None:
                entries.append(Entry(item.name, reason=dangling_link(link)))
            else:
                entries.append(Entry(item.name, reason=NOT_A_FILE))
        return entries


def _identity(folder: Path) -> tuple[int, int]:
    """What makes a folder the same folder whichever links lead to it: its device and inode."""
    status = folder.stat()
    return status.st_dev, status.st_ino
