"""The files of a project that its code settings can run, each with the id of its content.

An approval of a code setting covers the setting, its value and the content of every file of the project
folder but its declarations (``code_settings``): whatever a hook or Spark runs from the repository is
there, whichever file a command happens to name. Which files, each with git's blob id of its content (the
same for a file on disk, in the index and in a commit):

- In a git checkout, the files git tracks in the project folder as the working tree holds them: the index's
  id for each file git sees unchanged (``git ls-files --stage``: no file is read), the content's on disk for
  the others (``git diff-files``). A clean checkout of a commit so gives the ids ``plan --base`` reads from
  that commit's tree (``gitsource.CommitFiles``): the ids a pull request's plan shows are those apply
  computes. A file git does not track is the job's own (the apply workflow writes reviewed.json there; no
  pull request can add one) and is not covered.
- Outside git (a folder on a laptop), every file below the project folder but schemaflow's state folder
  (``.schemaflow/``).

The declarations are left out (``layout.is_declaration``): schemaflow reads them as data, and each code
setting of schemaflow.yaml has an id of its own. A symlink is covered by where it points, as git keeps it;
one that leads out of the project folder is refused (what it points at would run with no approval covering
it), but below schemas/ and migrations/, whose files schemaflow reads as YAML and refuses otherwise. So is
a device, socket or pipe. At most ``MAX_FILES`` files and ``MAX_BYTES`` read from disk: past them the folder
holds more than a project (a virtual environment, build output), which is refused with what to do.
"""
from __future__ import annotations

import hashlib
import os
import posixpath
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path

from schemaflow.errors import Problem, SchemaflowError, SpecError
from schemaflow.model import Source
from schemaflow.output_safety import one_line
from schemaflow.spec.layout import MIGRATIONS_DIR, SCHEMAS_DIR, STATE_DIR, is_declaration

MAX_FILES = 5_000
MAX_BYTES = 64 << 20
NOT_A_FILE = "not a file or folder (a device, socket or pipe): remove it"
_GIT_SECONDS = 120
_SUBMODULE = b"160000"  # git's mode of a gitlink: its id is the submodule's commit
_LINK = b"120000"
_KEEP = ("keep in the project folder only what belongs to the project (schemaflow.yaml, schemas/, migrations/, the "
         "scripts its hooks run) and move the rest out of it (a virtual environment, build output, data)")


def blob_id(content: bytes) -> str:
    """git's id of a file holding ``content`` (of a symlink: its target)."""
    return hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()


@dataclass
class Tally:
    """The files counted and the bytes read so far: past ``MAX_FILES`` or ``MAX_BYTES``, a ``SpecError``."""

    files: int = 0
    read: int = 0

    def count(self, path: str) -> None:
        self.files += 1
        if self.files > MAX_FILES:
            raise SpecError([Problem(Source(path), (
                f"the project folder holds more than {MAX_FILES:,} files besides its declarations, and the approval "
                f"of its settings that run code covers each of them: {_KEEP}"))])

    def add(self, path: str, size: int) -> None:
        self.read += size
        if self.read > MAX_BYTES:
            raise SpecError([Problem(Source(path), (
                f"this file takes the files of the project folder past {MAX_BYTES:,} bytes, and the approval of its "
                f"settings that run code covers their content: {_KEEP}"))])


def link_problem(path: str, target: str) -> Problem | None:
    """Why the symlink at ``path`` to ``target`` is refused: it leads out of the project folder, and is not below
    schemas/ or migrations/. None when it is not."""
    if path.startswith((SCHEMAS_DIR + "/", MIGRATIONS_DIR + "/")):
        return None
    normal = posixpath.normpath(posixpath.join(posixpath.dirname(path), target))
    if not (normal.startswith("/") or normal == ".." or normal.startswith("../")):
        return None
    return Problem(Source(path), (
        f"a symlink to '{one_line(target)}', which leads out of the project folder: settings that run code could run what it "
        "points at, which no approval of them covers; put the files themselves in the project folder, or remove "
        "the link"))


def checkout_of(folder: Path) -> Path | None:
    """The top of the git checkout ``folder`` is in (the nearest folder holding ``.git``), None outside git."""
    return next((above for above in (folder, *folder.parents) if (above / ".git").exists()), None)


def working_tree(root: Path) -> dict[str, str]:
    """The files of the project folder ``root`` that code settings can run, by path, each with its content's id;
    raises ``SpecError`` for a file refused, or past the bounds."""
    found: dict[str, str] = {}
    problems: list[Problem] = []
    tally = Tally()
    if checkout_of(root) is None:
        _walk(root, found, problems, tally)
    else:
        _tracked(root, found, problems, tally)
    if problems:
        raise SpecError(problems)
    return dict(sorted(found.items()))


def _tracked(root: Path, found: dict[str, str], problems: list[Problem], tally: Tally) -> None:
    """The files git tracks below ``root``: the index's ids, but the content's on disk where it changed."""
    changed = set(_git(root, "diff-files", "--name-only", "--relative", "-z").split(b"\0"))
    for entry in _git(root, "ls-files", "--stage", "-z").split(b"\0"):
        if not entry:
            continue
        info, _, raw = entry.partition(b"\t")
        mode, index_id, stage = info.split()
        path = os.fsdecode(raw)
        if is_declaration(path) or path in found:  # an unmerged file is listed once a side
            continue
        tally.count(path)
        if mode == _SUBMODULE or (mode != _LINK and stage == b"0" and raw not in changed):
            found[path] = index_id.decode()
            continue
        on_disk = _content_id(root, path, tally, problems, "a folder, device, socket or pipe where git tracks a file: "
                                                           "restore the file, or commit what replaced it")
        if on_disk is not None:
            found[path] = on_disk


def _walk(root: Path, found: dict[str, str], problems: list[Problem], tally: Tally) -> None:
    """Every file below ``root`` but the state folder's, symlinked folders not followed (they are files here)."""
    folders = [""]
    while folders:
        folder = folders.pop()
        try:
            with os.scandir(root / folder) as listed:
                entries = sorted(listed, key=lambda entry: entry.name)
        except OSError as error:
            problems.append(Problem(Source(folder or "."), f"cannot read this folder: {error.strerror}"))
            continue
        for entry in entries:
            path = posixpath.join(folder, entry.name)
            if path == STATE_DIR or is_declaration(path):
                continue
            if entry.is_dir(follow_symlinks=False):
                folders.append(path)
                continue
            tally.count(path)
            on_disk = _content_id(root, path, tally, problems, NOT_A_FILE)
            if on_disk is not None:
                found[path] = on_disk


def _content_id(root: Path, path: str, tally: Tally, problems: list[Problem], not_a_file: str) -> str | None:
    """The id of what is at ``path`` on disk: a file's content, a symlink's target (a problem where it leads out);
    None where nothing is, with a problem where something else than a file or a symlink is."""
    full = root / path
    try:
        if os.path.islink(full):
            target = os.readlink(full)
            problem = link_problem(path, target)
            problems.extend([problem] if problem else [])
            return blob_id(os.fsencode(target))
        descriptor = os.open(full, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)  # a pipe does not block this
    except FileNotFoundError:  # gone since git listed it: nothing there runs
        return None
    except OSError as error:
        problems.append(Problem(Source(path), f"cannot read the file: {error.strerror}"))
        return None
    with os.fdopen(descriptor, "rb") as file:
        size = os.fstat(descriptor)
        if not stat.S_ISREG(size.st_mode):
            problems.append(Problem(Source(path), not_a_file))
            return None
        tally.add(path, size.st_size)
        return blob_id(file.read(MAX_BYTES + 1))


def _git(root: Path, *arguments: str) -> bytes:
    """What ``git ARGUMENTS`` prints, run in the project folder ``root``."""
    try:
        done = subprocess.run(["git", *arguments], cwd=root, capture_output=True, stdin=subprocess.DEVNULL,
                              timeout=_GIT_SECONDS, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise SchemaflowError(f"could not run git in {root} to list the files its settings that run code cover "
                              f"({error}): install git, or run schemaflow where it can") from None
    if done.returncode != 0:
        said = done.stderr.decode(errors="replace").strip().splitlines()
        raise SchemaflowError(f"git {arguments[0]} failed in {root} ({one_line(said[0]) if said else done.returncode}):"
                              " schemaflow lists the files its settings that run code cover with git; fix the "
                              "checkout, and run again")
    return done.stdout
