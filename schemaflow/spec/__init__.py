"""YAML → model: the project's schema files and settings, validated, with file:line:col on every error."""
from __future__ import annotations

from schemaflow.spec.loader import load_catalog

__all__ = ["load_catalog"]
