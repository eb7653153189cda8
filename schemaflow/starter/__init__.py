"""A starter project: what ``schemaflow init`` writes into an empty folder.

Settings for an embedded metastore, one table to start from, an empty migrations folder, a
``.gitignore`` for schemaflow's local state, and the two GitHub workflows (plan on every pull
request, apply after merge). ``$database`` in the settings and the table stands for the database
the project manages. Nothing that exists is overwritten unless asked.
"""
from __future__ import annotations

from importlib.resources import files
from pathlib import Path
from string import Template

from schemaflow.errors import SchemaflowError
from schemaflow.spark_version import installed, release_text

# Where each starter file goes in the project (``{database}`` filled in), and where it comes from.
FILES = {
    "schemaflow.yaml": "schemaflow.yaml",
    "schemas/{database}/events.yaml": "schemas/events.yaml",
    "migrations/.gitkeep": "gitkeep",
    ".gitignore": "gitignore",
    ".github/workflows/schemaflow-plan-on-pull-request.yml": "workflows/schemaflow-plan-on-pull-request.yml",
    ".github/workflows/schemaflow-apply-on-merge.yml": "workflows/schemaflow-apply-on-merge.yml",
}


def write_starter(root: Path, database: str, overwrite: bool = False) -> list[Path]:
    """Write the starter project into ``root``; the files written. Raises ``SchemaflowError``, writing
    nothing, when one exists (unless ``overwrite``)."""
    planned = {root / target.format(database=database): source for target, source in FILES.items()}
    existing = sorted(str(path) for path in planned if path.exists())
    if existing and not overwrite:
        raise SchemaflowError(f"{', '.join(existing)} already exist: nothing was written (pass --force to overwrite "
                              "them, or run init in an empty folder)")
    for path, source in planned.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_text(source, database))
    return list(planned)


def _text(source: str, database: str) -> str:
    text = (files("schemaflow.starter") / "files" / source).read_text(encoding="utf-8")
    # The workflows are copied as they are: their shell and GitHub expressions use $ of their own.
    return text if source.startswith("workflows/") else Template(text).substitute(database=database,
                                                                                  release=_release())


def _release() -> str:
    """The settings' line declaring the Spark release: the installed pyspark's, else one to fill in. Pull
    requests' plans run without pyspark and plan for it."""
    found = installed()
    line = f'release: "{release_text(found[0])}"' if found else '# release: "4.0"'
    return f"  {line}  # the Spark release apply runs with (pull requests plan for it without pyspark)"
