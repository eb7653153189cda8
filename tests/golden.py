"""Golden files: what a test compares output with, rewritten on request to accept a deliberate change.

Run with ``SCHEMAFLOW_UPDATE_GOLDEN=1`` to write the output as the new expected file, then review the diff.
"""
from __future__ import annotations

import os
from pathlib import Path


MARKDOWN_CASES = Path(__file__).parent / "cases" / "markdown"  # a project and its expected comment, each
MARKDOWN_NAMES = sorted(case.name for case in MARKDOWN_CASES.iterdir())


def golden(path: Path, text: str) -> str:
    """The expected text at ``path`` (first written from ``text`` when updating golden files)."""
    if os.environ.get("SCHEMAFLOW_UPDATE_GOLDEN"):
        path.write_text(text)
    return path.read_text()
