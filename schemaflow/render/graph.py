"""The dependency graph of the declared tables and views, for a terminal, a pull request (Mermaid) or Graphviz.

Each view points at every table, view and source (a table schemaflow does not manage, drawn as a
cylinder) its SQL reads, and each edge is labelled with the columns of that object the view uses
anywhere in its query (output, WHERE, JOIN, GROUP BY, HAVING, windows, subqueries; ``SELECT *``
expanded against the declared schema). Given one object, only the part of the graph upstream and
downstream of it is drawn. Nodes come in name order and Mermaid nodes are numbered, so the same
schemas always draw the same graph.
"""
from __future__ import annotations

import json
from collections.abc import Callable

from schemaflow.errors import SchemaflowError
from schemaflow.model import Catalog, View

GRAPH_FORMATS = ("text", "mermaid", "dot", "json")


def render_graph(catalog: Catalog, fmt: str, focus: str | None = None) -> str:
    """The graph of ``catalog`` in one of ``GRAPH_FORMATS``; with ``focus`` ("db.name"), only its part."""
    keys = _part(catalog, focus.lower()) if focus else sorted(catalog.objects.keys() | catalog.sources.keys())
    renderers: dict[str, Callable[[Catalog, list[str]], list[str]]] = {"text": _text, "mermaid": _mermaid,
                                                                        "dot": _dot, "json": _json}
    return "\n".join(renderers[fmt](catalog, keys)) + "\n"


def _part(catalog: Catalog, focus: str) -> list[str]:
    """``focus`` and every object upstream (what it reads, transitively) and downstream (what reads it)."""
    if focus not in catalog.objects and focus not in catalog.sources:
        raise SchemaflowError(f"no table or view {focus} is declared; see schemaflow graph for them all")
    readers: dict[str, set[str]] = {}
    for view in catalog.views():
        for read in view.reads:
            readers.setdefault(read, set()).add(view.key)

    def reach(step: Callable[[str], set[str] | tuple[str, ...]]) -> set[str]:
        found, todo = set(), [focus]
        while todo:
            for key in step(todo.pop()):
                if key not in found:
                    found.add(key)
                    todo.append(key)
        return found

    upstream = reach(lambda key: getattr(catalog.get(key), "reads", ()))
    downstream = reach(lambda key: readers.get(key, set()))
    return sorted(upstream | downstream | {focus})


def _edges(catalog: Catalog, keys: list[str]) -> list[tuple[str, str, tuple[str, ...]]]:
    """(view, object read, the columns used) for each view among ``keys``, sorted."""
    shown = set(keys)
    return [(view.key, read, tuple(view.uses.get(read, ())))
            for view in (catalog.get(key) for key in keys) if isinstance(view, View)
            for read in view.reads if read in shown]


def _text(catalog: Catalog, keys: list[str]) -> list[str]:
    lines = []
    edges = _edges(catalog, keys)
    for key in keys:
        lines.append(f"{key} ({_kind(catalog, key)})")
        lines += [f"  reads {read}" + (f": {', '.join(columns)}" if columns else "") for view, read, columns in edges
                  if view == key]
        lines += [f"  read by {view}" for view, read, _ in edges if read == key]
    return lines


def _mermaid(catalog: Catalog, keys: list[str]) -> list[str]:
    ids = {key: f"n{number}" for number, key in enumerate(keys, 1)}
    lines = ["graph LR"]
    for key in keys:
        shape = {"view": '("{}")', "table": '["{}"]', "source": '[("{}")]'}[_kind(catalog, key)]
        lines.append(f"  {ids[key]}{shape.format(key)}")
    for view, read, columns in _edges(catalog, keys):
        label = f'|"{", ".join(columns)}"|' if columns else ""
        lines.append(f"  {ids[view]} -->{label} {ids[read]}")
    return lines


def _dot(catalog: Catalog, keys: list[str]) -> list[str]:
    lines = ["digraph schemaflow {", "  rankdir=LR;", "  node [shape=box];"]
    for key in keys:
        style = {"view": " [style=rounded]", "table": "", "source": " [shape=cylinder]"}[_kind(catalog, key)]
        lines.append(f'  "{key}"{style};')
    for view, read, columns in _edges(catalog, keys):
        lines.append(f'  "{view}" -> "{read}"' + (f' [label="{", ".join(columns)}"]' if columns else "") + ";")
    return lines + ["}"]


def _json(catalog: Catalog, keys: list[str]) -> list[str]:
    """``{"objects": [{"object", "kind"}], "edges": [{"view", "reads", "columns"}]}``, for tools."""
    edges = [{"view": view, "reads": read, "columns": list(columns)} for view, read, columns in _edges(catalog, keys)]
    document = {"objects": [{"object": key, "kind": _kind(catalog, key)} for key in keys], "edges": edges}
    return [json.dumps(document, indent=2, sort_keys=True)]


def _kind(catalog: Catalog, key: str) -> str:
    """``table``, ``view`` or ``source``: what ``key`` is declared as."""
    obj = catalog.get(key)
    return obj.kind if obj is not None else "source"
