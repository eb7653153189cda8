"""The project folder's layout: where schemaflow reads its declarations and keeps its state.

A project folder holds ``schemaflow.yaml`` (its settings), ``schemas/`` (one table, view or source per YAML
file) and ``migrations/`` (ordered explicit changes, YAML files too), which schemaflow reads as data: its
declarations. Outside git it keeps its state in ``.schemaflow/`` there (the embedded metastore, its
warehouse, the JVM's logs). Everything else in the folder is the team's own: scripts, documentation, the
files hooks run (see ``spec.code_files``).
"""
from __future__ import annotations

import posixpath

SETTINGS_FILE = "schemaflow.yaml"
SCHEMAS_DIR = "schemas"
MIGRATIONS_DIR = "migrations"
SUFFIXES = (".yaml", ".yml")  # in any case: ORDERS.YAML is read too
STATE_DIR = ".schemaflow"


def is_declaration(path: str) -> bool:
    """Whether the file at ``path`` (relative to the project folder) is one schemaflow reads as data: the settings
    file, or a YAML file below ``schemas/`` or ``migrations/`` (where schemaflow refuses any other file)."""
    if path == SETTINGS_FILE:
        return True
    return (path.startswith((SCHEMAS_DIR + "/", MIGRATIONS_DIR + "/"))
            and posixpath.splitext(path)[1].lower() in SUFFIXES)
