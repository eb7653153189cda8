"""The desired state at a git commit, read from the repository's objects without a checkout.

``plan --base REF`` compares what two commits declare. gitpython reads a commit's tree straight
from the object store: nothing is checked out, uncommitted edits in the work tree stay out of it,
and a shallow CI clone works once the commit is fetched. The project may sit in a folder of the
repository; its files are then read relative to that folder, as on disk. The settings
(``schemaflow.yaml``) are read at the same commit, and a problem in any file is reported at
``REF:path:line:col``. A symlink stored in the commit is followed within the commit's tree, as the
work tree would follow it; one that leads out of the repository, or nowhere, is a problem.

Every file of a folder is read in one pass of ``git cat-file --batch`` when the folder is listed:
asked for one at a time, each blob is a round trip to git (1.5 s of a plan of 5,500 files). The
pass runs in the background, in the order the files are read, so the first files are parsed while
git still reads the rest; for a large project's folder it is waited for instead, so that the files are
parsed in two processes (``workers.halves``), as validate parses them from disk: a fork is made only of a
process that runs one thread. A blob is read once per process, however many commits hold it.
"""
from __future__ import annotations

import os
import posixpath
import shutil
import subprocess
import threading
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any
from collections.abc import Iterable, Iterator

from schemaflow.errors import Problem, SchemaflowError, SpecError
from schemaflow.model import Catalog, Source
from schemaflow.output_safety import one_line
from schemaflow.project import declared_databases, managed_databases
from schemaflow.spec import load_catalog
from schemaflow.spec.code_files import Tally, link_problem
from schemaflow.spec.layout import is_declaration
from schemaflow.spec.loader import CACHED_FILES, SHARED_FROM, CacheInfo
from schemaflow.spec.settings import read_settings
from schemaflow.spec.source import Entry, dangling_link, folder_problem, walk
from schemaflow.wording import DIRTY
from schemaflow.spec.code_files import checkout_of
from schemaflow.workers import ended, threads

if TYPE_CHECKING:
    import git
    from gitdb.exc import BadName


def require_git(needed_for: str) -> None:
    """Import GitPython (``git`` and gitdb's ``BadName`` in this module) where a command reads a repository: it
    refuses to load without a git on the PATH, and every command that reads no repository works without one."""
    if "git" in globals():
        return
    try:
        import git as gitpython
        from gitdb.exc import BadName as bad_name
    except ImportError:
        if shutil.which("git") is not None:
            raise
        raise SchemaflowError(f"git is not on the PATH, and {needed_for}: install git (e.g. apt-get install git), or "
                              "add the folder that holds it to PATH") from None
    globals().update(git=gitpython, BadName=bad_name)


def reading_at(ref: str) -> str:
    """Why a command that reads ``ref`` needs git."""
    return f"schemaflow reads the project's files at {ref!r} from the repository with it"


# How many symlinks one path may pass through before it counts as a loop (Linux's limit, ELOOP).
_MAX_LINKS = 40
_SUBMODULE = "a git submodule: the commit holds another repository's commit id, not its files; commit the files here"


@dataclass(frozen=True)
class GitFile:
    """A file in a commit, read the way a ``Path`` is; ``name`` is the last part of the path that led to it."""

    blob: git.Blob
    name: str

    def read_bytes(self) -> bytes:
        return _blob_bytes(self.blob)


class _Blobs:
    """Blobs' contents by blob id, each read from git once (``plan --base`` reads two commits that share
    most of their files), many at once by ``read_ahead``; ``cache_info`` counts as ``functools.lru_cache`` does."""

    def __init__(self, kept: int) -> None:
        self.kept = kept
        self.contents: dict[bytes, bytes] = {}
        self.coming: set[bytes] = set()  # asked of git by a read ahead, not arrived yet
        self.arrival = threading.Condition()
        self.readers: list[threading.Thread] = []  # the read aheads' threads
        self.threads_before = 0  # how many threads this process ran before them
        self.hits = self.misses = 0

    def __call__(self, blob: git.Blob) -> bytes:
        sha = blob.binsha
        with self.arrival:
            self.arrival.wait_for(lambda: sha not in self.coming)
            known = self.contents.get(sha)
            if known is not None:
                self.hits += 1
                return known
        content: bytes = blob.data_stream.read()
        self._arrived([sha], {sha: content})
        return content

    def read_ahead(self, repo: git.Repo, blobs: Iterable[git.Blob]) -> None:
        """Read those of ``blobs`` not read yet in one ``git cat-file --batch``, in their order, in the
        background: the first are parsed while git still reads the rest (loose objects are inflated
        one by one: 0.2 s of 5,500 files). A blob not arrived yet is waited for; one git did not
        send (missing, or the pass failed) is read on its own when asked for."""
        with self.arrival:
            wanted = [sha for sha in dict.fromkeys(blob.binsha for blob in blobs)
                      if sha not in self.contents and sha not in self.coming]
            if len(wanted) < _FEWEST_AHEAD:
                return
            self._make_room(len(wanted))
            self.coming.update(wanted)
        try:
            process = repo.git.cat_file("--batch", "--buffer", as_process=True, istream=subprocess.PIPE)
        except BaseException:
            self._arrived(wanted, {})
            raise
        reader = threading.Thread(target=self._receive, args=(process, wanted), name="git-blobs", daemon=True)
        if not self.readers:
            self.threads_before = threads()
        reader.start()
        self.readers.append(reader)

    def settle(self) -> None:
        """Wait until every read ahead has ended: then this process runs no thread of theirs."""
        if not self.readers:
            return
        while self.readers:
            self.readers.pop().join()
        ended(self.threads_before)

    def cache_info(self) -> CacheInfo:
        return CacheInfo(self.hits, self.misses, self.kept, len(self.contents))

    def _receive(self, process: Any, wanted: list[bytes]) -> None:
        """Write the ids ``wanted`` to git and keep each blob as it arrives; all of them are no longer
        coming when this ends, however it ends."""
        stdin = process.proc.stdin
        pipe = process.proc.stdout.fileno()

        def ask() -> None:
            with suppress(OSError):  # git stopped: what it did not send is read one by one
                stdin.write(b"".join(sha.hex().encode() + b"\n" for sha in wanted))
            with suppress(OSError):
                stdin.close()
        asking = threading.Thread(target=ask, name="git-blob-ids", daemon=True)
        asking.start()
        try:
            for sha, content in _batch_answers(pipe, wanted):
                self._arrived([sha], {sha: content} if content is not None else {})
        except (OSError, ValueError):  # what did not arrive is read on its own, where a real problem shows
            pass
        finally:
            self._arrived(wanted, {})
            process.proc.stdout.close()  # a git cut off part way stops at its next write, so is not left waiting
            asking.join()
            process.proc.wait()

    def _arrived(self, shas: list[bytes], contents: dict[bytes, bytes]) -> None:
        """Keep ``contents`` (read from git: misses) and wake those waiting for any of ``shas``."""
        with self.arrival:
            self._make_room(len(contents))
            self.contents.update(contents)
            self.misses += len(contents)
            self.coming.difference_update(shas)
            self.arrival.notify_all()

    def _make_room(self, count: int) -> None:
        if len(self.contents) + count > self.kept:
            self.contents.clear()


# Fewer blobs than this are read one by one: a pass of their own starts a git (3 ms), gitpython's git
# already running answers each in 0.06 ms (packed; measured).
_FEWEST_AHEAD = 50
# The most of git's answers taken off the pipe at once (a pipe holds 64 KiB on Linux).
_READ_SIZE = 1 << 20


def _batch_answers(pipe: int, wanted: list[bytes]) -> Iterator[tuple[bytes, bytes | None]]:
    """Each blob of ``wanted`` and its content (None when git has no such blob), from the answers of
    ``git cat-file --batch`` read off ``pipe`` in large pieces: each read of the pipe may wait for
    the main thread to let go of the interpreter, so they are few. Ends early if git does."""
    buffer = bytearray()
    start = 0
    for sha in wanted:
        while (end := buffer.find(b"\n", start)) < 0:
            if not _fill(pipe, buffer):
                return
        header = bytes(buffer[start:end]).split()  # "<id> blob <size>", or "<id> missing"
        start = end + 1
        if len(header) != 3:
            yield sha, None
            continue
        size = int(header[2])
        while len(buffer) < start + size + 1:  # the content, then a newline
            if not _fill(pipe, buffer):
                return
        yield sha, bytes(buffer[start:start + size])
        start += size + 1
        if start > _READ_SIZE:
            del buffer[:start]
            start = 0


def _fill(pipe: int, buffer: bytearray) -> bool:
    """Append what the pipe holds (waiting for something) to ``buffer``; False at its end."""
    piece = os.read(pipe, _READ_SIZE)
    buffer += piece
    return bool(piece)


_blob_bytes = _Blobs(CACHED_FILES)


@dataclass(frozen=True)
class CommitFiles:
    """The project's files in one commit (a ``spec.source.ProjectFiles``).

    ``root`` is the commit's tree; ``folder`` the project's folder in it ("" at the top), None when
    the commit does not have it; ``work_tree`` the folder the repository is checked out in on this machine.
    """

    root: git.Tree
    folder: str | None
    work_tree: str | None = None
    # What each path names, once found: each file's path is followed to read ahead, then to open it.
    _followed: dict[str, git.objects.base.IndexObject | None] = field(default_factory=dict, compare=False, repr=False)

    def files_under(self, folder: str) -> tuple[list[str], list[Problem]]:
        try:
            top = self._follow(folder)
        except _BadLink as bad:
            return [], [Problem(Source(folder), bad.reason)]
        if not isinstance(top, git.Tree):
            return [], []
        paths, problems = walk(folder, top, str(top.path), self._entries)
        _blob_bytes.read_ahead(self.root.repo, self._blobs(paths))
        if len(paths) >= SHARED_FROM:  # parsed in two processes (``spec.loader``): git's reader ends first
            _blob_bytes.settle()
        return paths, problems

    def _blobs(self, paths: list[str]) -> Iterator[git.Blob]:
        """The blobs of the files at ``paths`` (those that lead elsewhere are read when opened)."""
        for path in paths:
            try:
                item = self._follow(path)
            except _BadLink:
                continue
            if isinstance(item, git.Blob):
                yield item

    def open(self, path: str) -> GitFile | None:
        try:
            item = self._follow(path)
        except _BadLink as bad:
            raise SpecError([Problem(Source(path), bad.reason)]) from None
        if isinstance(item, git.Tree):
            raise SpecError([folder_problem(path)])
        return GitFile(item, posixpath.basename(path)) if isinstance(item, git.Blob) else None

    def checkout(self) -> str | None:
        return self.work_tree

    def code_files(self) -> dict[str, str]:
        """The project folder's files in the commit that code settings can run, with their blob ids, as a clean
        checkout's ``spec.code_files.working_tree`` gives them."""
        found: dict[str, str] = {}
        problems: list[Problem] = []
        tally = Tally()
        top = self._follow("")
        trees = [("", top)] if isinstance(top, git.Tree) else []
        while trees:
            prefix, tree = trees.pop()
            for name, item in sorted(_children(tree).items()):
                path = prefix + name
                if isinstance(item, git.Tree):
                    trees.append((path + "/", item))
                    continue
                if is_declaration(path):
                    continue
                tally.count(path)
                if isinstance(item, git.Blob) and item.mode == git.Blob.link_mode:
                    problem = link_problem(path, _link_target(item))
                    problems.extend([problem] if problem else [])
                found[path] = item.hexsha  # a submodule's: its commit, as git's index has it
        if problems:
            raise SpecError(problems)
        return dict(sorted(found.items()))

    def _follow(self, path: str) -> git.objects.base.IndexObject | None:
        if self.folder is None:
            return None
        if path not in self._followed:  # a link that cannot be followed raises, each time
            self._followed[path] = _follow(self.root, posixpath.join(self.folder, path))
        return self._followed[path]

    def _entries(self, tree: git.Tree) -> list[Entry]:
        entries = []
        for name, item in _children(tree).items():  # a folder both commits hold is listed once
            if isinstance(item, git.Tree):
                entries.append(Entry(item.name, item, str(item.path)))
            elif isinstance(item, git.Blob) and item.mode == git.Blob.link_mode:
                entries.append(self._link(item))
            elif isinstance(item, git.Blob):
                entries.append(Entry(item.name))
            else:
                entries.append(Entry(name, reason=_SUBMODULE))
        return entries

    def _link(self, link: git.Blob) -> Entry:
        """A symlink in a folder, followed within the commit."""
        target = _link_target(link)
        try:
            item = _follow(self.root, posixpath.join(posixpath.dirname(link.path), target), target)
        except _BadLink as bad:
            return Entry(link.name, reason=bad.reason)
        if isinstance(item, git.Tree):
            return Entry(link.name, item, str(item.path), target)
        return Entry(link.name) if isinstance(item, git.Blob) else Entry(link.name, reason=f"a link to {_SUBMODULE}")


class _BadLink(Exception):
    """A symlink in a commit that cannot be followed within it."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _follow(root: git.Tree, path: str, target: str = "") -> git.objects.base.IndexObject | None:
    """What ``path`` (from the top of the commit) names, symlinks followed as the file system would; None
    when nothing. Raises ``_BadLink`` for a link that leads nowhere, out of the repository or round in
    a loop (``target``: the link that gave ``path``, to name in that error)."""
    todo = list(reversed(_parts(path)))
    resolved: list[str] = []  # the path so far, every link in it followed
    item: git.objects.base.IndexObject | None = root
    links = 0
    while todo:
        part = todo.pop()
        if part == "/":
            raise _BadLink(_outside(target))
        if part == "..":
            if not resolved:
                raise _BadLink(_outside(target))
            resolved.pop()
            item = _entry(root, "/".join(resolved)) if resolved else root
            continue
        found = _entry(item, part) if isinstance(item, git.Tree) else None
        if found is None and target:
            raise _BadLink(dangling_link(target, " in this commit"))
        if found is None:
            return None
        if isinstance(found, git.Blob) and found.mode == git.Blob.link_mode:
            target, links = _link_target(found), links + 1
            if links > _MAX_LINKS:
                raise _BadLink(f"a symlink to '{one_line(target)}', which is one of a loop of symlinks: fix or remove "
                               "the link")
            todo.extend(reversed(_parts(target)))
            continue
        resolved.append(part)
        item = found
    return item


def _parts(path: str) -> tuple[str, ...]:
    """``PurePosixPath(path).parts``, without making one for a plain relative path: every file's path is
    followed, twice over in ``plan --base``."""
    parts = path.split("/")
    if "" in parts or "." in parts:  # "", "/x", "a//b", "a/./b", "a/": as pathlib reads them
        return PurePosixPath(path).parts
    return tuple(parts)


def _outside(target: str) -> str:
    return (f"a symlink to '{one_line(target)}', which leads out of the repository: a commit holds the link, not "
            "what it points at; commit the files themselves")


def _link_target(link: git.Blob) -> str:
    """Where a symlink stored in a commit points: the blob's content is the target path."""
    target: bytes = link.data_stream.read()
    return target.decode("utf-8", errors="replace")


def desired_at(project_root: Path, ref: str) -> Catalog:
    """The catalog the project declares at ``ref``, in the databases its settings there manage.

    A commit without the project's files declares nothing. Raises ``SpecError`` with each problem
    at ``REF:path:line:col``, and ``SchemaflowError`` when ``ref`` names no commit in the repository.
    """
    with commit_files(project_root, ref) as files:
        settings = read_settings(files, None)
        return replace(load_catalog(files, managed_databases(settings)), database_details=declared_databases(settings))


def settings_at(project_root: Path, ref: str) -> dict[str, Any]:
    """The project's settings at ``ref`` as written (``{}`` without a settings file there), for reviews."""
    with commit_files(project_root, ref) as files:
        return read_settings(files, None)  # the operator's folders are not known: apply checks them


@contextmanager
def commit_files(project_root: Path, ref: str) -> Iterator[CommitFiles]:
    """The project's files at ``ref``, readable while the block runs; a problem found in them is reported at
    ``REF:path:line:col``."""
    require_git(reading_at(ref))
    try:
        repo = git.Repo(project_root, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        message = f"{project_root} is not in a git repository, so there is no {ref!r} to plan from"
        raise SchemaflowError(message) from None
    try:
        tree = _tree(repo, ref)
        prefix = Path(project_root).resolve().relative_to(_work_tree(repo).resolve()).as_posix()
        folder = "" if prefix == "." else prefix
        try:
            found = isinstance(_follow(tree, folder), git.Tree)
        except _BadLink:
            found = False
        try:
            yield CommitFiles(tree, folder if found else None, str(_work_tree(repo).resolve()))
        except SpecError as error:
            raise SpecError([_at_ref(ref, problem) for problem in error.problems]) from None
    finally:
        repo.close()


def commit_of(project_root: Path, ref: str | None = None) -> str | None:
    """The commit the project's files come from, recorded on every object an apply writes.

    ``ref`` None means the working tree: its HEAD, marked ``+dirty`` when ``schemas/`` or
    ``migrations/`` have uncommitted changes. None outside a git repository (then git is not needed).
    """
    if checkout_of(Path(project_root).resolve()) is None:
        return None
    require_git("the project is in a git repository: schemaflow records the commit its files come from on each "
               "object it writes, and reads it with git")
    try:
        repo = git.Repo(project_root, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        return None
    try:
        if ref is not None:
            return repo.commit(ref).hexsha
        if not repo.head.is_valid():
            return None
        prefix = Path(project_root).resolve().relative_to(_work_tree(repo).resolve())
        folders = [(prefix / name).as_posix() for name in ("schemas", "migrations")]
        dirty = any(repo.is_dirty(untracked_files=True, path=folder) for folder in folders)
        return repo.head.commit.hexsha + (DIRTY if dirty else "")
    except (BadName, ValueError):
        return None
    finally:
        repo.close()


def _work_tree(repo: git.Repo) -> Path:
    """The folder ``repo`` is checked out in (GitPython gives None for a bare repository)."""
    if repo.working_tree_dir is None:
        raise SchemaflowError(f"{repo.git_dir} is a bare git repository: it has no project folder to read")
    return Path(repo.working_tree_dir)


def _tree(repo: git.Repo, ref: str) -> git.Tree:
    """The tree of the commit ``ref`` names; a shallow clone may know a commit's name but not its files."""
    try:
        return repo.commit(ref).tree
    except (BadName, ValueError):
        raise SchemaflowError(_not_a_commit(repo, ref)) from None


def _entry(tree: git.Tree | None, path: str) -> git.objects.base.IndexObject | None:
    """What ``path`` names below ``tree`` (a file or a folder), or None."""
    item: git.objects.base.IndexObject | None = tree
    for part in path.split("/"):
        item = _children(item).get(part) if isinstance(item, git.Tree) else None
    return item


# The entries of the trees read, by tree: gitpython's ``tree / name`` scans and checks every entry,
# so finding each of a folder's thousands of files by name would take time quadratic in their number.
_LISTINGS: dict[tuple[str, bytes, str], dict[str, git.objects.base.IndexObject]] = {}
_LISTINGS_KEPT = 4096


def _children(tree: git.Tree) -> dict[str, git.objects.base.IndexObject]:
    """The entries of ``tree`` by name, listed once (a tree's entries carry its path, so that is part of the key)."""
    key = (str(tree.repo.git_dir), tree.binsha, str(tree.path))
    if key not in _LISTINGS:
        if len(_LISTINGS) >= _LISTINGS_KEPT:
            _LISTINGS.clear()
        # By the path's last part: a submodule's (a gitlink's) name is not known without its .gitmodules entry.
        _LISTINGS[key] = {posixpath.basename(item.path): item for item in tree}
    return _LISTINGS[key]


def _not_a_commit(repo: git.Repo, ref: str) -> str:
    where = f"{ref!r} is not a commit in the git repository at {repo.working_tree_dir}"
    if not (Path(repo.common_dir) / "shallow").exists():
        return f"{where}: check the name, or fetch it first (git fetch origin)"
    remote, _, branch = ref.partition("/")
    if branch and remote in {r.name for r in repo.remotes}:
        return (f"{where}, a shallow clone: fetch it first, e.g. "
                f"git fetch --depth=1 {remote} +refs/heads/{branch}:refs/remotes/{remote}/{branch}")
    return f"{where}, a shallow clone: fetch its history first, e.g. git fetch --unshallow"


def _at_ref(ref: str, problem: Problem) -> Problem:
    """A problem found at ``ref``, placed as git names a file there: ``REF:path``."""
    return replace(problem, source=replace(problem.source, path=f"{ref}:{problem.source.path}"))
