"""The desired state at a git commit, read from the repository's objects without a checkout.

``plan --base REF`` compares what two commits declare. gitpython reads a commit's tree straight
from the object store: nothing is checked out, uncommitted edits in the work tree stay out of it,
and a shallow CI clone works once the commit is fetched. The project may sit in a folder of the
repository; its files are then read relative to that folder, as on disk. The settings
(``schemaflow.yaml``) are read at the same commit, and a problem in any file is reported at
``REF:path:line:col``.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import Iterator

import git
from gitdb.exc import BadName

from schemaflow.errors import Problem, SchemaflowError, SpecError
from schemaflow.model import Catalog
from schemaflow.project import SETTINGS_FILE, managed_databases
from schemaflow.spec import load_catalog
from schemaflow.spec.settings import check_settings


@dataclass(frozen=True)
class GitFile:
    """A file in a commit, read the way a ``Path`` is."""

    blob: git.Blob

    @property
    def name(self) -> str:
        return self.blob.name

    def read_bytes(self) -> bytes:
        return self.blob.data_stream.read()


@dataclass(frozen=True)
class CommitFiles:
    """The project's files in one commit (a ``spec.source.ProjectFiles``).

    ``folder`` is the project's folder in the commit's tree, None when the commit does not have it.
    """

    folder: git.Tree | None

    def files_under(self, folder: str) -> list[str]:
        tree = _entry(self.folder, folder)
        if not isinstance(tree, git.Tree):
            return []
        return [self._relative(item) for item in tree.traverse() if isinstance(item, git.Blob)]

    def open(self, path: str) -> GitFile | None:
        item = _entry(self.folder, path)
        return GitFile(item) if isinstance(item, git.Blob) else None

    def _relative(self, item: git.Blob) -> str:
        return PurePosixPath(item.path).relative_to(self.folder.path).as_posix()


def desired_at(project_root: Path, ref: str) -> Catalog:
    """The catalog the project declares at ``ref``, in the databases its settings there manage.

    A commit without the project's files declares nothing. Raises ``SpecError`` with each problem
    at ``REF:path:line:col``, and ``SchemaflowError`` when ``ref`` names no commit in the repository.
    """
    with commit_files(project_root, ref) as files:
        try:
            settings_file = files.open(SETTINGS_FILE)
            settings = check_settings(settings_file) if settings_file else {}
            return load_catalog(files, managed_databases(settings))
        except SpecError as error:
            raise SpecError([_at_ref(ref, problem) for problem in error.problems]) from None


@contextmanager
def commit_files(project_root: Path, ref: str) -> Iterator[CommitFiles]:
    """The project's files at ``ref``, readable while the block runs."""
    try:
        repo = git.Repo(project_root, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        message = f"{project_root} is not in a git repository, so there is no {ref!r} to plan from"
        raise SchemaflowError(message) from None
    try:
        tree = _tree(repo, ref)
        prefix = Path(project_root).resolve().relative_to(Path(repo.working_tree_dir).resolve()).as_posix()
        folder = tree if prefix == "." else _entry(tree, prefix)
        yield CommitFiles(folder if isinstance(folder, git.Tree) else None)
    finally:
        repo.close()


def commit_of(project_root: Path, ref: str | None = None) -> str | None:
    """The commit the project's files come from, recorded on every object an apply writes.

    ``ref`` None means the working tree: its HEAD, marked ``+dirty`` when ``schemas/`` or
    ``migrations/`` have uncommitted changes. None outside a git repository.
    """
    try:
        repo = git.Repo(project_root, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        return None
    try:
        if ref is not None:
            return repo.commit(ref).hexsha
        if not repo.head.is_valid():
            return None
        prefix = Path(project_root).resolve().relative_to(Path(repo.working_tree_dir).resolve())
        folders = [(prefix / name).as_posix() for name in ("schemas", "migrations")]
        dirty = any(repo.is_dirty(untracked_files=True, path=folder) for folder in folders)
        return repo.head.commit.hexsha + ("+dirty" if dirty else "")
    except (BadName, ValueError):
        return None
    finally:
        repo.close()


def _tree(repo: git.Repo, ref: str) -> git.Tree:
    """The tree of the commit ``ref`` names; a shallow clone may know a commit's name but not its files."""
    try:
        return repo.commit(ref).tree
    except (BadName, ValueError):
        raise SchemaflowError(_not_a_commit(repo, ref)) from None


def _entry(tree: git.Tree | None, path: str) -> git.objects.base.IndexObject | None:
    """What ``path`` names below ``tree`` (a file or a folder), or None."""
    if tree is None:
        return None
    try:
        return tree / path
    except KeyError:
        return None


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
