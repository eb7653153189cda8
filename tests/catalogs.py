"""Catalogs for the planner's tests, in the model: a small warehouse (a partitioned table, a view over it and a view
over that), a change of it, and each as a complete apply leaves it in the metastore."""
from __future__ import annotations

from dataclasses import replace

from schemaflow.model import Catalog, Column, Table, View, fingerprint


def table(key: str, *cols: str, parts: tuple[str, ...] = (), **kw) -> Table:
    db, name = key.split(".")
    return Table(db, name, tuple(Column(*c.split(":")) for c in cols),
                 tuple(Column(*p.split(":")) for p in parts), **kw)


def view(key: str, sql: str, cols: tuple[str, ...], reads: tuple[str, ...], **kw) -> View:
    db, name = key.split(".")
    return View(db, name, sql, tuple(Column(c) for c in cols), reads=reads, **kw)


def catalog(*objects, databases=("retail",)) -> Catalog:
    return Catalog(databases=databases, objects={o.key: o for o in objects})


ORDERS = table("retail.orders", "order_id:bigint", "amount:decimal(12,2)", parts=("ds:string",),
               properties={"owner": "sales-eng"})
DAILY = view("retail.daily", "SELECT order_id, ds FROM retail.orders", ("order_id", "ds"), ("retail.orders",))
TOP = view("retail.top", "SELECT order_id FROM retail.daily", ("order_id",), ("retail.daily",))
DESIRED = catalog(ORDERS, DAILY, TOP)


def applied(desired: Catalog) -> Catalog:
    """The live catalog after a perfect apply of ``desired``: stamped, with views' stored columns."""
    def live(o):
        o = replace(o, managed_keys=tuple(sorted(o.properties)), version=fingerprint(o))
        return replace(o, reads=()) if isinstance(o, View) else o
    return replace(desired, objects={k: live(o) for k, o in desired.objects.items()})


# A column appended to the table, and both views re-created with new comments: three objects change.
WIDER = catalog(replace(ORDERS, columns=ORDERS.columns + (Column("channel", "string"),)),
                replace(DAILY, comment="Orders by day"), replace(TOP, comment="The top orders"))
