"""Dependencies between objects, and what follows from them: which views to re-create, and the order.

Views depend on what their SQL reads. A view over an object whose columns change (created, columns
added, re-created) is re-created after that change, and so on downstream. Steps are ordered by a
deterministic topological sort: a database before its objects, an object's own changes in the
order the diff gave them, a view after everything it reads, and a drop after the drops of the views
that read it. Ties go to the usual reading order (databases, drops of views, drops of tables, table
changes, view changes), then by name.
"""
from __future__ import annotations

from dataclasses import replace

from schemaflow.graph import topological_order
from schemaflow.model import Catalog, View
from schemaflow.plan.changes import Change, CreateView, DropTable, DropView, ReplaceView
from schemaflow.sql.views import ViewSqlError, tables_read


def with_live_reads(live: Catalog) -> Catalog:
    """The live catalog with each view's ``reads`` derived from its stored SQL.

    A view whose stored SQL does not parse (written by another engine, say) reads nothing we know of.
    """
    def reads(view: View) -> tuple[str, ...]:
        try:
            return tables_read(view.sql, view.database)
        except ViewSqlError:
            return ()
    objects = {k: replace(o, reads=reads(o)) if isinstance(o, View) else o for k, o in live.objects.items()}
    return replace(live, objects=objects)


def recreate_dependents(desired: Catalog, changes: list[Change]) -> list[ReplaceView]:
    """Re-create each desired view downstream of a reshaped object, unless it is already (re)created."""
    reshaped = {c.key for c in changes if c.reshapes}
    handled = {c.key for c in changes if isinstance(c, (CreateView, ReplaceView))}
    extra: list[ReplaceView] = []
    for key in topological_order({v.key: v.reads for v in desired.views()}):
        view = desired.get(key)
        changed_inputs = [r for r in view.reads if r in reshaped]
        if not changed_inputs:
            continue
        reshaped.add(key)
        if key not in handled:
            extra.append(ReplaceView(view, (f"re-created after {', '.join(changed_inputs)} changed",)))
    return extra


def _phase(change: Change) -> int:
    if isinstance(change, DropView):
        return 1
    if isinstance(change, DropTable):
        return 2
    return {"database": 0, "table": 3, "view": 4}[change.object_type]


def order(changes: list[Change], live: Catalog) -> list[Change]:
    """The changes in the order they must run (see the module docstring)."""
    readers: dict[str, list[str]] = {}  # live object -> the live views that read it
    for view in live.views():
        for read in view.reads:
            readers.setdefault(read, []).append(view.key)
    ids = [f"{i:06d}" for i in range(len(changes))]
    by_object: dict[str, list[str]] = {}
    for node, change in zip(ids, changes):
        by_object.setdefault(change.key, []).append(node)
    deps: dict[str, set[str]] = {node: set() for node in ids}
    for node, change in zip(ids, changes):
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
    rank = {node: (_phase(c), c.key, node) for node, c in zip(ids, changes)}
    return [changes[int(node)] for node in topological_order(deps, key=rank.__getitem__)]
