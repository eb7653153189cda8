"""Where a project's files are read from: a directory, or (``schemaflow.gitsource``) a git commit.

The spec reads a project through this small interface, so one loader checks the working tree and
any commit alike: list the files below a folder, open one. Paths are POSIX paths relative to the
project root (``schemas/retail/orders.yaml``), the paths every error message shows. A file is
anything with a ``name`` and ``read_bytes()``, as a ``pathlib.Path`` has.

Nothing below a folder is skipped unsaid: symlinks are followed (a database folder may be a link),
and what cannot be read as a file is listed as a problem at its path: a symlink that leads nowhere,
a loop, a second way to a folder already read, a device. Each folder is read once, so a tree of
links cannot make the work grow beyond the folders that exist.

A symlink is followed only to what the repository holds, which a review sees: a commit's links
within its tree (``gitsource``), the working tree's within the repository's top folder (the git work
tree's, or the project's folder outside a repository), wherever the chain of links leads on the way.
A link that ends outside (``/etc/passwd``, a file in the runner's home) is a problem at the link's
path, which names the link's target as written and nothing of what is there.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Protocol
from collections.abc import Callable, Hashable

from schemaflow.errors import Problem, SpecError
from schemaflow.model import Source
from schemaflow.output_safety import one_line
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
    return f"a symlink to '{one_line(target)}', which leads to no file or folder{where}: fix or remove the link"


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
    link = f"a symlink to '{one_line(target)}'" if target else "this folder, reached through a symlink,"
    first = one_line(first)
    if loop:
        return Problem(Source(path), f"{link} leads back to {first}, a folder that contains it: a loop; "
                                     "remove the link")
    return Problem(Source(path), f"{link} leads to the folder already read as {first}: each folder is read once, or "
                                 "its files would be declared twice; remove one of the two ways to it")


def outside_link(target: str) -> str:
    return (f"a symlink to '{one_line(target)}', which leads out of the repository: schemaflow reads only the repository's own "
            "files, which a review sees; put the file itself in the repository, or remove the link")


@dataclass(frozen=True)
class Directory:
    """A project in a directory on disk: the working tree, uncommitted edits and all."""

    root: Path

    @cached_property
    def repository(self) -> Path:
        """The folder links may lead into: the top of the git work tree the project is in (the nearest of its
        folder and those above it that holds ``.git``, as git finds it), else the project's folder; resolved."""
        real = Path(os.path.realpath(self.root))
        return checkout_of(real) or real

    def files_under(self, folder: str) -> tuple[list[str], list[Problem]]:
        top = self.root / folder
        if self._outside(top):
            return [], [self._outside_problem(folder)]
        if top.is_dir():
            return walk(folder, top, _identity(top), self._entries)
        return [], ([Problem(Source(folder), dangling_link(os.readlink(top)))] if top.is_symlink() else [])

    def open(self, path: str) -> Path | None:
        file = self.root / path
        if self._outside(file):
            raise SpecError([self._outside_problem(path)])
        if file.is_file():
            return file
        if file.is_dir():
            raise SpecError([folder_problem(path)])
        if file.is_symlink():
            raise SpecError([Problem(Source(path), dangling_link(os.readlink(file)))])
        return None

    def checkout(self) -> str:
        return str(self.repository)

    def code_files(self) -> dict[str, str]:
        return working_tree(self.root.resolve())

    def _outside(self, path: Path) -> bool:
        """Whether ``path``, its links followed however many there are, leads out of the repository."""
        return not Path(os.path.realpath(path)).is_relative_to(self.repository)

    def _outside_problem(self, path: str) -> Problem:
        """The problem of ``path`` (relative, no ``..``), which leads out of the repository: at the first link on it
        that does (there is one: the project's folder is inside, and a part that is no link stays where it is)."""
        parts = path.split("/")
        prefixes = ("/".join(parts[:end]) for end in range(1, len(parts) + 1))
        link = next(prefix for prefix in prefixes
                    if (self.root / prefix).is_symlink() and self._outside(self.root / prefix))
        return Problem(Source(link), outside_link(os.readlink(self.root / link)))

    def _entries(self, folder: Path) -> list[Entry]:
        entries = []
        for item in sorted(folder.iterdir()):
            link = os.readlink(item) if item.is_symlink() else None
            if link is not None and self._outside(item):
                entries.append(Entry(item.name, reason=outside_link(link)))
            elif item.is_dir():
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
