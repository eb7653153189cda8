"""Plans rendered for people and machines: a terminal, a pull-request comment, JSON.

Every renderer walks the same ordered steps the executor runs.
"""
from __future__ import annotations

from schemaflow.render import json_format, markdown, text
from schemaflow.render.review import Review

FORMATS = ("text", "markdown", "json")


def render(review: Review, fmt: str, *, color: bool = False, verbose: bool = False) -> str:
    """The review in one of ``FORMATS``: markdown adds what was compared and how objects depend on each other.

    ``color`` and ``verbose`` (schemaflow's own bookkeeping shown) are for the terminal's text.
    """
    if fmt == "text":
        return text.render(review, color=color, verbose=verbose)
    renderers = {"markdown": markdown.render, "json": json_format.render}
    return renderers[fmt](review)
