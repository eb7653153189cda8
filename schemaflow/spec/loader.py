"""The desired catalog: every ``schemas/<database>/<name>.yaml`` of a project, read and checked.

Each file declares one table or view, and its place says which: the file's path must match the
name it declares. Tables and views share one namespace per database. Everything wrong in any file
is collected, sorted and raised together as one ``SpecError``, so that a single run shows it all.
The files are read through ``spec.source``: from a directory, or from a git commit.
"""
from __future__ import annotations

from pathlib import Path, PurePosixPath

from schemaflow.errors import Problem, SpecError
from schemaflow.model import Catalog, Migration
from schemaflow.spec.analysis import analyze_views
from schemaflow.spec.migrations import (MIGRATIONS_DIR, SUM_FILE, agreement_problems, order_problems, read_migration,
                                        sum_problems)
from schemaflow.spec.objects import Declaration, read_object
from schemaflow.spec.source import Directory, ProjectFile, ProjectFiles
from schemaflow.spec.yamlpos import load_yaml

SCHEMAS_DIR = "schemas"
SUFFIXES = (".yaml", ".yml")


def load_catalog(project: str | Path | ProjectFiles, databases: tuple[str, ...] = ()) -> Catalog:
    """The tables and views declared under ``schemas/`` of a project; raises ``SpecError``.

    ``project`` is the project's directory, or its files read from elsewhere (a git commit).
    ``databases``, when given, are the databases the project manages: an object declared in
    any other is an error. Otherwise the databases are those the files declare.
    """
    files = Directory(Path(project)) if isinstance(project, (str, Path)) else project
    problems: list[Problem] = []
    declarations: list[Declaration] = []
    for path in _yaml_files(files, SCHEMAS_DIR):
        try:
            doc = load_yaml(files.open(path), path)
        except SpecError as error:
            problems.extend(error.problems)
            continue
        declaration = read_object(doc)
        declarations.append(declaration)
        problems.extend(declaration.problems)
        problems.extend(_placement_problems(declaration, databases))
    problems.extend(_duplicate_problems(declarations))
    valid = {d.key: d.obj for d in declarations if d.obj is not None and d.key is not None}
    broken = {d.key for d in declarations if d.key is not None} - valid.keys()
    broken |= {key for key, obj in valid.items() if databases and obj.database not in databases}
    views, view_problems = analyze_views(
        {key: obj for key, obj in valid.items() if key not in broken},
        {d.key: d.doc for d in declarations if d.key is not None},
        broken,
    )
    problems.extend(view_problems)
    objects = dict(sorted({**valid, **views}.items()))
    migrations = _read_migrations(files, problems)
    problems.extend(agreement_problems(migrations, objects))
    if problems:
        raise SpecError(problems)
    return Catalog(databases=databases or tuple(sorted({o.database for o in objects.values()})), objects=objects,
                   migrations=migrations)


def _read_migrations(files: ProjectFiles, problems: list[Problem]) -> tuple[Migration, ...]:
    """The migrations under ``migrations/``, in order; their problems are added to ``problems``."""
    found = migration_files(files)
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
    """The migration files by path, sorted."""
    return {path: files.open(path) for path in _yaml_files(files, MIGRATIONS_DIR)}


def _yaml_files(files: ProjectFiles, folder: str) -> list[str]:
    """Every YAML file under ``folder`` (hidden files and folders aside), sorted."""
    paths = (PurePosixPath(path) for path in files.files_under(folder))
    return [
        path.as_posix() for path in sorted(paths)
        if path.suffix in SUFFIXES and not any(part.startswith(".") for part in path.relative_to(folder).parts)
    ]


def _placement_problems(declaration: Declaration, databases: tuple[str, ...]) -> list[Problem]:
    """The file must be ``schemas/<database>/<name>.yaml`` and the database one the project manages."""
    if declaration.key is None or declaration.problems:
        return []
    doc = declaration.doc
    database, _, name = declaration.key.partition(".")
    where = declaration.name_source
    path = PurePosixPath(doc.path)
    problems = []
    if path.parent != PurePosixPath(SCHEMAS_DIR, database) or path.stem != name:
        expected = PurePosixPath(SCHEMAS_DIR, database, name + path.suffix)
        problems.append(Problem(where, f"{declaration.key} must be declared in {expected}: rename or move this file"))
    if databases and database not in databases:
        managed = ", ".join(databases)
        message = f"database '{database}' is not managed by this project (databases: {managed})"
        problems.append(Problem(where, f"{message}; add it to 'databases' in schemaflow.yaml"))
    return problems


def _duplicate_problems(declarations: list[Declaration]) -> list[Problem]:
    """A name declared by several files (as a table or a view) is an error in each of them."""
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
