"""The desired catalog: every ``schemas/<database>/<name>.yaml`` of a project, read and checked.

Each file declares one table or view, or a source (a table the views read that schemaflow does
not manage, see ``spec.sources``), and its place says which: the file's path must match the name it
declares. Tables, views and sources share one namespace per database. Everything wrong in any file
is collected, sorted and raised together as one ``SpecError``, so that a single run shows it all.
The files are read through ``spec.source``: from a directory, or from a git commit.

What ``schemas/`` does not declare is planned as dropped, so every file there is read or named:
any file but a YAML file (hidden ones too) is an error, as is anything in ``migrations/`` but
migrations and their checksum file. A file that cannot be read still names, by its path, the object it was to
declare, so views that read that object are not also reported for reading an unknown table.
"""
from __future__ import annotations

import gc
import posixpath
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path, PurePosixPath
from functools import partial
from collections.abc import Callable, Iterator, Sequence
from typing import NamedTuple

from schemaflow.errors import Problem, SpecError
from schemaflow.model import Catalog, Migration, Source, Table
from schemaflow.spec.analysis import analyze_views
from schemaflow.spec.migrations import (MIGRATIONS_DIR, SUM_FILE, agreement_problems, order_problems, read_migration,
                                        sum_problems)
from schemaflow.spec.declaration import Declaration, DeclarationKind, read_object
from schemaflow.spec.layout import SCHEMAS_DIR, SUFFIXES
from schemaflow.spec.source import Directory, ProjectFile, ProjectFiles, ReadFile
from schemaflow.spec.yamlpos import Budget, load_yaml, project_bounds, read_bytes
from schemaflow.sql.views import CacheInfo
from schemaflow.workers import halves

CACHED_FILES = 25_000  # schema files kept read in a process: two trees of a warehouse of 10,000 objects
# Empty files that keep an otherwise empty folder in git: they declare nothing, so nothing is lost unread.
_PLACEHOLDERS = (".gitkeep", ".keep")
# What each folder holds, for a file that is not a YAML file.
_NOT_YAML = {
    SCHEMAS_DIR: "not a schema file: schemas/ holds only .yaml files, one table or view each; "
                 "move it out of schemas/ (or, if it declares one, rename it to .yaml)",
    MIGRATIONS_DIR: "not a migration: a migration is a .yaml file named NNNN_<slug>.yaml; "
                    "move it out of migrations/ (or, if it is one, rename it)",
}


@contextmanager
def _no_cycle_collection() -> Iterator[None]:
    """Python's cycle collector off while a project is read and its views analysed.

    Reading builds millions of objects that stay (data, positions) and no cycles; the collector
    would walk all of them again and again as they pile up (measured: a third of the time of
    reading 5,500 files, and then 40 % of the time of analysing their 500 views). What is read
    holds no cycle; the few that analysis makes (sqlglot's trees point to their parents) are
    collected once the collector is back on.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        # What was read sits in the youngest generation, where each of the next collections would
        # walk it again on its way to the oldest (a second at 5,500 files, measured); there it goes
        # at once, without a walk. It is still collected there, with the rest of the oldest.
        gc.freeze()
        gc.unfreeze()
        if enabled:
            gc.enable()


@_no_cycle_collection()
def load_catalog(project: str | Path | ProjectFiles, databases: tuple[str, ...] = ()) -> Catalog:
    """The tables, views and sources declared under ``schemas/`` of a project; raises ``SpecError``.

    ``project`` is the project's directory, or its files read from elsewhere (a git commit).
    ``databases``, when given, are the databases the project manages: a table or view declared in
    any other is an error (a source may be anywhere). Otherwise the databases are those in which
    the files declare tables and views.
    """
    with project_bounds() as budget:
        return _load(Directory(Path(project)) if isinstance(project, (str, Path)) else project, databases, budget)


def _load(files: ProjectFiles, databases: tuple[str, ...], budget: Budget) -> Catalog:
    problems: list[Problem] = []
    declarations: list[Declaration] = []
    unread: set[str] = set()  # what the files that could not be read were to declare, by their paths
    found = _yaml_files(files, SCHEMAS_DIR, problems)
    for path, declaration in zip(found, _each_declared(list(found.items()), budget), strict=True):
        if not isinstance(declaration, Declaration):
            problems.extend(declaration)
            unread.add(_path_key(path))
            continue
        declarations.append(declaration)
        problems.extend(declaration.problems)
        problems.extend(_placement_problems(declaration, databases))
    problems.extend(_duplicate_problems(declarations))
    valid = {d.key: d.obj for d in declarations if d.obj is not None and d.key is not None and d.kind != DeclarationKind.SOURCE}
    sources = {d.key: d.obj for d in declarations if isinstance(d.obj, Table) and d.key is not None
               and d.kind == DeclarationKind.SOURCE}
    broken = {d.key for d in declarations if d.key is not None} - valid.keys() - sources.keys()
    broken |= unread | {_path_key(d.doc.path) for d in declarations if d.key is None}
    broken |= {key for key, obj in valid.items() if databases and obj.database not in databases}
    views, view_problems = analyze_views(
        {key: obj for key, obj in valid.items() if key not in broken},
        {key: source for key, source in sources.items() if key not in broken},
        {d.key: d.doc for d in declarations if d.key is not None},
        broken,
    )
    problems.extend(view_problems)
    objects = dict(sorted({**valid, **views}.items()))
    migrations = _read_migrations(files, problems)
    problems.extend(agreement_problems(migrations, objects, sources))
    if problems:
        raise SpecError(problems)
    return Catalog(databases=databases or tuple(sorted({o.database for o in objects.values()})), objects=objects,
                   migrations=migrations, sources=dict(sorted(sources.items())))


def _read_migrations(files: ProjectFiles, problems: list[Problem]) -> tuple[Migration, ...]:
    """The migrations under ``migrations/``, in order; their problems are added to ``problems``."""
    found = _yaml_files(files, MIGRATIONS_DIR, problems)
    contents = {file.name: file.read_bytes() for file in found.values()}
    migrations = []
    for path, file in found.items():
        try:
            doc = load_yaml(file, path)
        except SpecError as error:
            problems.extend(error.problems)
            continue
        migration, errors = read_migration(doc, contents[file.name])
        problems.extend(errors)
        if migration is not None:
            migrations.append(migration)
    migrations.sort(key=lambda m: m.id)
    problems.extend(order_problems(migrations))
    recorded = files.open(f"{MIGRATIONS_DIR}/{SUM_FILE}")
    problems.extend(sum_problems(contents, recorded.read_bytes() if recorded else None))
    return tuple(migrations)


def migration_files(files: ProjectFiles) -> dict[str, ProjectFile]:
    """The migration files by path, sorted; raises ``SpecError`` when ``migrations/`` holds anything else."""
    problems: list[Problem] = []
    found = _yaml_files(files, MIGRATIONS_DIR, problems)
    if problems:
        raise SpecError(problems)
    return found


# From this many schema files, half of them are read in a fork of this process, where a core is free for it
# (``workers.halves``): each file takes about 0.3 ms, and the fork some tens of milliseconds to start and send
# back what it read (measured: 5,500 files in 1.0 s instead of 1.8 s).
SHARED_FROM = 1_000

_Read = Declaration | list[Problem]  # a file's declaration, or why it could not be read


class _Half(NamedTuple):
    """What the files of a half declare, what is left of the budget, and each declaration with its path and content."""

    read: list[_Read]
    left: Budget
    declared: list[tuple[str, bytes, Declaration]]


def _each_declared(found: list[tuple[str, ProjectFile]], budget: Budget) -> list[_Read]:
    """What each file found declares, in their order; spends ``budget`` on them.

    A large project's files are read in two processes (``workers.halves``), each half with all of
    ``budget``: when the two together spend more than it has, they are read again here, one after the
    other, for the message at the file or alias that crosses the project's bounds. What the fork read is
    known here afterwards, as what this process read is: ``plan --base`` reads a second tree of the same files.
    """
    found, new = _peeked(found)
    read = halves(partial(_read_files, budget=budget), found, SHARED_FROM) if new >= SHARED_FROM else [
        _read_files(found, budget)]
    spent = [(budget.bytes - half.left.bytes, budget.aliased - half.left.aliased) for half in read]
    bytes_spent, aliased_spent = sum(b for b, _ in spent), sum(a for _, a in spent)
    if len(read) > 1 and (bytes_spent > budget.bytes or aliased_spent > budget.aliased):
        read = [_read_files(found, budget, _declared.read)]  # each file spends again: none taken as read
        bytes_spent, aliased_spent = budget.bytes - read[0].left.bytes, budget.aliased - read[0].left.aliased
    budget.bytes -= bytes_spent
    budget.aliased -= aliased_spent
    for path, content, declaration in read[-1].declared if len(read) > 1 else ():
        _declared.learn(path, content, declaration)
    return [declared for half in read for declared in half.read]


def _peeked(found: list[tuple[str, ProjectFile]]) -> tuple[list[tuple[str, ProjectFile]], int]:
    """``found``, and how many of its files this process has not read yet: all of them in its first read; in a
    second (``plan --base``'s other tree), each file's content is read first (a ``ReadFile`` from then on), so that
    only a tree with enough files that differ is shared with a fork. A file that cannot be read stays as it was."""
    if not _declared.known:
        return found, len(found)
    peeked: list[tuple[str, ProjectFile]] = []
    new = 0
    for path, file in found:
        try:
            content = read_bytes(file, path)
        except SpecError:
            peeked.append((path, file))  # read again where its problem is reported
            new += 1
            continue
        peeked.append((path, ReadFile(file.name, content)))
        new += (path, content) not in _declared.known
    return peeked, new


def _read_files(found: Sequence[tuple[str, ProjectFile]], budget: Budget,
                declared: Callable[[str, bytes], Declaration] | None = None) -> _Half:
    """What each file declares (by ``declared``, else as read once per process), and what is left of ``budget``
    (a copy: the halves of ``_each_declared`` each spend their own)."""
    half = _Half([], replace(budget), [])
    with project_bounds(half.left):
        for path, file in found:
            try:
                content = read_bytes(file, path)
                declaration = (declared or _declared)(path, content)
            except SpecError as error:
                half.read.append(error.problems)
                continue
            half.read.append(declaration)
            half.declared.append((path, content, declaration))
    return half


class _Declarations:
    """The object the file at a path declares, read once per path and content in a process (the last ``kept``).

    ``plan --base`` reads two trees that differ in a few files: each file the same in both is
    composed and checked once, in this process or in the fork that read it (``learn``). A file that
    cannot be read raises ``SpecError`` (not kept).
    """

    def __init__(self, kept: int) -> None:
        self.kept = kept
        self.known: dict[tuple[str, bytes], Declaration] = {}
        self.hits = self.misses = 0

    def __call__(self, path: str, content: bytes) -> Declaration:
        known = self.known.get((path, content))
        if known is not None:
            self.hits += 1
            return known
        self.misses += 1
        known = self.read(path, content)
        self.learn(path, content, known)
        return known

    @staticmethod
    def read(path: str, content: bytes) -> Declaration:
        """What the file at ``path`` declares, read now."""
        return read_object(load_yaml(ReadFile(posixpath.basename(path), content), path))

    def learn(self, path: str, content: bytes, declaration: Declaration) -> None:
        """Keep ``declaration`` as what the file at ``path`` holding ``content`` declares."""
        if len(self.known) >= self.kept:
            self.known.clear()
        self.known[path, content] = declaration

    def cache_info(self) -> CacheInfo:
        return CacheInfo(self.hits, self.misses, self.kept, len(self.known))

    def cache_clear(self) -> None:
        self.known.clear()
        self.hits = self.misses = 0


_declared = _Declarations(CACHED_FILES)


def _yaml_files(files: ProjectFiles, folder: str, problems: list[Problem]) -> dict[str, ProjectFile]:
    """Every YAML file under ``folder`` by path, sorted; each other thing found there is added to ``problems``.

    Hidden files are refused, not skipped: schemaflow does not read them, and one could be a
    declaration hidden by mistake (its object then planned as dropped). A hidden folder is named
    once, however many files it holds. Only an empty ``.gitkeep`` (or ``.keep``) passes.
    """
    paths, unreadable = files.files_under(folder)
    problems.extend(unreadable)
    found: dict[str, ProjectFile] = {}
    hidden_named: set[str] = set()
    # Paths as strings: files_under gives each as ``folder/.../name``, no empty or "." part (a
    # PurePosixPath of each, three times over, took 0.1 s of a plan --base of 5,500 files).
    for path in paths:
        parts = path[len(folder) + 1:].split("/")
        hidden = next((i for i, part in enumerate(parts) if part.startswith(".")), None)
        if hidden is not None:
            named = "/".join([folder, *parts[:hidden + 1]])
            if named == path and parts[-1] in _PLACEHOLDERS and not _open(files, path).read_bytes():
                continue
            kind = "file" if named == path else "folder"
            if named not in hidden_named:
                hidden_named.add(named)
                problems.append(Problem(Source(named), (
                    f"a hidden {kind} in {folder}/: schemaflow does not read hidden files, and one could hide a "
                    f"declaration; if it holds one, rename it without the leading dot, else move it out of {folder}/")))
        elif path == f"{MIGRATIONS_DIR}/{SUM_FILE}":
            continue
        elif posixpath.splitext(parts[-1])[1].lower() in SUFFIXES:
            found[path] = _open(files, path)
        else:
            problems.append(Problem(Source(path), _NOT_YAML[folder]))
    return found


def _open(files: ProjectFiles, path: str) -> ProjectFile:
    """A file ``files_under`` listed; raises ``SpecError`` if it went away since."""
    file = files.open(path)
    if file is None:
        raise SpecError([Problem(Source(path), "went away while schemaflow read the project: run it again")])
    return file


def _path_key(path: str) -> str:
    """The object a schema file's path says it declares: ``schemas/<db>/<name>.yaml`` declares ``db.name``."""
    pure = PurePosixPath(path)
    return f"{pure.parent.name}.{pure.stem}".lower()


def _placement_problems(declaration: Declaration, databases: tuple[str, ...]) -> list[Problem]:
    """The file must be ``schemas/<database>/<name>.yaml``, and a table's or view's database one the project manages."""
    if declaration.key is None or declaration.problems:
        return []
    database, _, name = declaration.key.partition(".")
    # A path as _yaml_files gives it (see there), of a file whose name ends in one of SUFFIXES.
    folder, _, filename = declaration.doc.path.rpartition("/")
    stem, suffix = posixpath.splitext(filename)
    problems = []
    if folder != f"{SCHEMAS_DIR}/{database}" or stem != name:
        expected = f"{SCHEMAS_DIR}/{database}/{name}{suffix}"
        problems.append(Problem(declaration.name_source,
                                f"{declaration.key} must be declared in {expected}: rename or move this file"))
    if databases and database not in databases and declaration.kind != DeclarationKind.SOURCE:
        managed = ", ".join(databases)
        message = f"database '{database}' is not managed by this project (databases: {managed})"
        problems.append(Problem(declaration.name_source, f"{message}; add it to 'databases' in schemaflow.yaml"))
    return problems


def _duplicate_problems(declarations: list[Declaration]) -> list[Problem]:
    """A name declared by several files (as a table, a view or a source) is an error in each of them."""
    files: dict[str, list[Declaration]] = {}
    for declaration in declarations:
        if declaration.key is not None:
            files.setdefault(declaration.key, []).append(declaration)
    problems = []
    for key, same in sorted(files.items()):
        for declaration in same if len(same) > 1 else ():
            others = ", ".join(d.doc.path for d in same if d is not declaration)
            problems.append(Problem(declaration.name_source, f"{key} is declared more than once: also in {others}"))
    return problems
