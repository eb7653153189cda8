"""The settings file, ``schemaflow.yaml``: checked against ``schemas/settings.json`` before use.

Every key is optional (``schemaflow.project`` supplies the defaults and environment overrides);
what is written must still have the right shape, so a misspelt key is an error, not a silent default.
A folder (or a broken link) where the file belongs is an error too, not a project without settings.
"""
from __future__ import annotations

from typing import Any

from schemaflow.errors import SpecError
from schemaflow.spec.schema import check_shape
from schemaflow.spec.source import ProjectFile, ProjectFiles
from schemaflow.spec.yamlpos import load_yaml

SETTINGS_FILE = "schemaflow.yaml"


def read_settings(files: ProjectFiles) -> dict[str, Any]:
    """The settings of the project ``files`` hold (``{}`` when it has no settings file); raises ``SpecError``."""
    file = files.open(SETTINGS_FILE)
    return {} if file is None else check_settings(file)


def check_settings(path: ProjectFile) -> dict[str, Any]:
    """The settings at ``path`` as a plain dict (empty file: ``{}``); raises ``SpecError``.

    Positions are reported against the file's name, as schema files are against the project root.
    """
    doc = load_yaml(path, path.name)
    data = {} if doc.data is None else doc.data
    problems = check_shape(doc, data, "settings")
    if problems:
        raise SpecError(problems)
    conf = (data.get("spark") or {}).get("conf") or {}
    for key in conf:  # Spark settings are text: "1.10" or "NO" as written, not as YAML 1.1 reads them
        conf[key] = doc.written("spark", "conf", key) or conf[key]
    return data
