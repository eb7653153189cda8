"""Plans rendered for people and machines: a terminal, a pull-request comment, JSON.

Every renderer walks the same ordered steps the executor runs.
"""
from __future__ import annotations

from schemaflow.plan.plan import Plan
from schemaflow.render import json_format, markdown, text

FORMATS = ("text", "markdown", "json")


def render(plan: Plan, fmt: str) -> str:
    """The plan in one of ``FORMATS``."""
    renderers = {"text": text.render, "markdown": markdown.render, "json": json_format.render}
    return renderers[fmt](plan)
