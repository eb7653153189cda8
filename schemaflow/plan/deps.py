"""Dependencies between objects, and the order of the steps that follows from them.

Views depend on what their SQL reads, down to the columns they use (which views a change breaks,
and what happens to them, is ``plan.invalidation``'s to say). Steps are ordered by a
deterministic topological sort: a database before its objects, an object's own changes in the
order the diff gave them, a view after everything it reads, and a drop after the drops of the views
that read it. Ties go to the usual reading order (databases, drops of views, drops of tables, table
changes, view changes), then by name.
"""
from __future__ import annotations

from dataclasses import replace
from collections.abc import Iterator, Mapping

from schemaflow.graph import topological_order
from schemaflow.model import Catalog, Table, View
from schemaflow.plan.changes import Change, CreateView, DropTable, DropView, ReplaceView
from schemaflow.plan.kinds import ObjectType
from schemaflow.sql.views import ViewSqlError, analyze_view, tables_read


def with_live_reads(live: Catalog) -> Catalog:
    """The live catalog with each view's ``reads``, ``uses`` and ``lineage`` derived from its stored SQL.

    The SQL is Spark's stored original text, qualified against the live columns of what it reads
    (``SELECT *`` expands to the columns the view stored when it was created, as Spark froze them).
    A view whose SQL does not resolve any more uses the objects it reads as a whole; one whose SQL
    does not parse (written by another engine, say) reads nothing we know of.
    """
    schema = _LiveColumns(live)

    def derived(view: View) -> View:
        try:
            analysis = analyze_view(view.sql, view.database, schema)
        except ViewSqlError:
            try:
                reads = tables_read(view.sql, view.database)
            except ViewSqlError:
                reads = ()
            return replace(view, reads=reads, uses={key: () for key in reads}, lineage={})
        lineage = dict(zip((c.name for c in view.columns), analysis.lineage.values(), strict=False))
        return replace(view, reads=analysis.reads, uses=analysis.uses, lineage=lineage)
    objects = {k: derived(o) if isinstance(o, View) else o for k, o in live.objects.items()}
    return replace(live, objects=objects)


class _LiveColumns(Mapping[str, list[tuple[str, str]]]):
    """``{"db.name": [(column, type), ...]}`` of the live objects, each worked out only when a view reads it."""

    def __init__(self, live: Catalog) -> None:
        self.objects = live.objects

    def __getitem__(self, key: str) -> list[tuple[str, str]]:
        obj = self.objects[key]
        return [(c.name, c.type or "string") for c in (obj.all_columns if isinstance(obj, Table) else obj.columns)]

    def __iter__(self) -> Iterator[str]:
        return iter(self.objects)

    def __len__(self) -> int:
        return len(self.objects)


def _phase(change: Change) -> int:
    if isinstance(change, DropView):
        return 1
    if isinstance(change, DropTable):
        return 2
    return {ObjectType.DATABASE: 0, ObjectType.TABLE: 3, ObjectType.VIEW: 4}[change.object_type]


def order(changes: list[Change], live: Catalog) -> list[Change]:
    """The changes in the order they must run (see the module docstring)."""
    readers: dict[str, list[str]] = {}  # live object -> the live views that read it
    for view in live.views():
        for read in view.reads:
            readers.setdefault(read, []).append(view.key)
    ids = [f"{i:06d}" for i in range(len(changes))]
    by_object: dict[str, list[str]] = {}
    for node, change in zip(ids, changes, strict=True):
        by_object.setdefault(change.key, []).append(node)
    deps: dict[str, set[str]] = {node: set() for node in ids}
    for node, change in zip(ids, changes, strict=True):
        database = change.key.partition(".")[0]
        if "." in change.key:
            deps[node].update(by_object.get(database, ()))
        same = by_object[change.key]
        deps[node].update(same[:same.index(node)])
        if isinstance(change, (CreateView, ReplaceView)):
            for read in change.view.reads:
                deps[node].update(by_object.get(read, ()))
        if isinstance(change, (DropTable, DropView)):
            for reader in readers.get(change.key, ()):
                deps[node].update(n for n in by_object.get(reader, ()) if isinstance(changes[int(n)], DropView))
    rank = {node: (_phase(c), c.key, node) for node, c in zip(ids, changes, strict=True)}
    return [changes[int(node)] for node in topological_order(deps, key=rank.__getitem__)]
