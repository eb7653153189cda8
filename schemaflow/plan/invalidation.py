"""Which live views a change set breaks, and what the project's ``invalidation`` mode does about it.

The metastore tracks no view dependencies, but schemaflow knows every live view's SQL and, once it
is qualified against the live schema (``deps.with_live_reads``), the columns each view uses of each
object it reads, wherever in the query it uses them. A change hits a column a view uses when it
drops or renames it (a migration), drops the object, or re-creates a view without that column; it
retypes the column when its type changes. What a view then does, in Spark 4:

- a dropped, renamed or vanished column or object: the view fails when queried;
- a type change that reaches the view's output (its lineage): a view whose ``view.schemaMode`` is
  BINDING fails ("Cannot up cast"), and so does one with no mode stored (Spark treats it as
  BINDING); a COMPENSATION view (the Spark 4 default) casts the new type back to the type it
  stored; an EVOLUTION view takes the new type. A type change used only in WHERE, JOIN and the
  like changes nothing Spark checks.

A failing view fails every view that reads it in turn; a view the plan re-creates passes on only
what its re-creation changes (columns it loses, types it now shows). A view is spared when the same
change set updates it deliberately (its SQL changed, or ``apply --recompile``) or drops it. For
every other failing view the mode decides:

- ``strict`` (default): the change that breaks it is blocked, naming the view, the column and the change;
- ``lenient``: the plan goes ahead and warns which views will fail when queried, and leaves them as they are,
  but for those a view the plan creates or re-creates reads (Spark would refuse that view): it re-creates them;
- ``cascade``: each is re-created from its declared SQL after the change, in dependency order.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import assert_never
from collections.abc import Mapping

from schemaflow.graph import CycleError, topological_order
from schemaflow.model import Catalog, Column, Invalidation, Object, View
from schemaflow.plan.changes import Change, CreateView, DropTable, DropView, ReplaceView
from schemaflow.plan.evolution import ColumnChange
from schemaflow.plan.rewrite import RewriteTable
from schemaflow.spark_version import SparkVersion
from schemaflow.wording import listed, plural

BINDING, COMPENSATION = "BINDING", "COMPENSATION"
WHOLE = None  # the column key of an effect on the whole object


def created_schema_mode(release: SparkVersion) -> str | None:
    """The schema mode Spark stores for a view it creates: COMPENSATION from Spark 4; none before, which
    Spark reads as BINDING."""
    return COMPENSATION if release >= (4, 0) else None


@dataclass(frozen=True)
class Effect:
    """What a change does to one column of an object (or, column ``WHOLE``, to the object) for its readers."""

    words: str                  # finishes "which ...": "migration 0002 drops", "is dropped", "changes type from ..."
    cause: str                  # the object whose change starts it
    retype: tuple[str, str] | None = None  # (old type, new type) for a type change


@dataclass(frozen=True)
class Breakage:
    """One reason a live view fails when queried after the plan."""

    view: str
    object: str
    column: str | None
    effect: Effect

    def describe(self) -> str:
        if self.column is WHOLE:
            return f"{self.view} reads {self.object}, which {self.effect.words}"
        return f"{self.view} uses {self.object}.{self.column}, which {self.effect.words}"


@dataclass(frozen=True)
class Outcome:
    """The change set as the mode leaves it, and what the plan says beside it."""

    changes: list[Change]
    blocked: Mapping[str, str] = field(default_factory=dict)           # object whose change is refused -> why
    notes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # object changed -> what it does to views
    warnings: tuple[str, ...] = ()


def resolve(changes: list[Change], desired: Catalog, live: Catalog, mode: Invalidation) -> Outcome:
    """Find the views ``changes`` break in ``live`` and apply ``mode`` (see the module docstring).

    ``live`` must carry each view's ``uses`` and ``lineage`` (``deps.with_live_reads``).
    """
    effects = _base_effects(changes, desired, live)
    replaced = {c.key: c for c in changes if isinstance(c, ReplaceView)}
    dropped = {c.key for c in changes if isinstance(c, DropView)}
    broken: dict[str, list[Breakage]] = {}
    notes: dict[str, list[str]] = {}
    for key in _live_order(live):
        view = live.get(key)
        assert isinstance(view, View)  # _live_order lists live views only
        if key in dropped:
            continue
        hits, retypes = _hits(view, effects)
        for hit in retypes:
            if (view.schema_mode or BINDING) == BINDING:
                hits.append(replace(hit, effect=replace(hit.effect, words=hit.effect.words + _binding(view))))
            else:
                notes.setdefault(hit.effect.cause, []).append(_follows(view, hit))
        change = replaced.get(key)
        if hits and not (change and change.deliberate):
            broken[key] = hits
        # Lenient leaves a broken view as it is; cascade re-creates it.
        recreated = mode == Invalidation.CASCADE if key in broken else change is not None
        effects[key] = _passed_on(view, desired.get(key), hits, retypes, recreated,
                                  deliberate=change is not None and change.deliberate)
    changes = list(changes)
    warnings: tuple[str, ...] = ()
    blocked: dict[str, list[Breakage]] = {}
    for key, hits in sorted(broken.items()):
        match mode:
            case Invalidation.STRICT:
                for hit in hits:
                    blocked.setdefault(hit.effect.cause, []).append(hit)
            case Invalidation.CASCADE:
                if key not in replaced:
                    declared = desired.get(key)
                    # A live view that the changes do not drop is still declared, as a view.
                    assert isinstance(declared, View)
                    changes.append(ReplaceView(declared, (f"re-created after {hits[0].effect.cause} changed: "
                                                          + "; ".join(h.describe() for h in hits),)))
            case Invalidation.LENIENT:
                pass  # below, once every broken view is known
            case _:
                assert_never(mode)
    if mode == Invalidation.LENIENT and broken:
        # A view the plan creates reads through the views it reads when it is created: those it would
        # leave broken are re-created first, or the creation would fail half-way through the apply.
        for key, reader in sorted(_read_by_creations(changes, desired, broken).items()):
            broken.pop(key)
            if key not in replaced:
                declared = desired.get(key)
                assert isinstance(declared, View)  # as for cascade
                changes.append(ReplaceView(declared, (f"re-created for {reader}, which this plan creates and which "
                                                      f"reads it (invalidation: lenient leaves only views nothing "
                                                      "created reads)",)))
        # The others are left as they are, as Hive and MySQL leave them. The next plan sees no change
        # that breaks them and re-creates them, if their declared SQL still resolves.
        changes = [c for c in changes if not (isinstance(c, ReplaceView) and c.key in broken)]
        warnings = tuple(f"{'; '.join(h.describe() for h in hits)}: {key} will fail when queried "
                         f"(invalidation: lenient leaves it as it is){_deferred(live.get(key), replaced.get(key))}"
                         for key, hits in sorted(broken.items()))
    return Outcome(changes, {cause: _strict_message(reasons) for cause, reasons in blocked.items()},
                   {cause: tuple(sorted(set(words))) for cause, words in notes.items()}, warnings)


def _deferred(live: Object | None, change: ReplaceView | None) -> str:
    """What the re-creation lenient leaves to a later plan will cost, when that plan is destructive:
    a partitioned view whose partition columns change loses every partition it has."""
    if not (isinstance(live, View) and live.partitioned_on and change
            and change.view.partitioned_on != live.partitioned_on):
        return ""
    return (f"; the plan that re-creates it, once nothing breaks it, drops its partitions, which do not fit it "
            f"(partitioned on {listed(live.partitioned_on)} -> {listed(change.view.partitioned_on)}): that plan is "
            "destructive and needs --allow-destructive")


def _read_by_creations(changes: list[Change], desired: Catalog, broken: Mapping[str, object]) -> dict[str, str]:
    """The broken views that a view the changes create or deliberately re-create reads, directly or
    through others among them: each with the created view that first needs it."""
    needed: dict[str, str] = {}
    readers = sorted(c.key for c in changes if isinstance(c, CreateView)
                     or (isinstance(c, ReplaceView) and c.key not in broken))
    while readers:
        reader = readers.pop(0)
        view = desired.get(reader)
        for key in view.reads if isinstance(view, View) else ():
            if key in broken and key not in needed:
                needed[key] = needed.get(reader, reader)
                readers.append(key)
    return needed


def _base_effects(changes: list[Change], desired: Catalog, live: Catalog) -> dict[str, dict[str | None, Effect]]:
    """What each change to a table, and each drop, does to the columns readers use."""
    effects: dict[str, dict[str | None, Effect]] = {}
    for change in changes:
        if not change.reshapes:
            continue
        if isinstance(change, ColumnChange):
            evolution = change.evolution
            found = effects.setdefault(change.key, {})
            if isinstance(change, RewriteTable):  # partition columns too may go
                found.update(_vanished(change.have.partition_columns, change.want.all_columns, "is rewritten",
                                       change.key))
            found.update({column: Effect(words, change.key) for column, words in evolution.lost})
            live_names = {c.name for c in evolution.old}
            for column, old, new in evolution.retyped:
                if column in live_names and column not in found:
                    found[column] = Effect(f"changes type from {old} to {new}", change.key, (old, new))
        elif isinstance(change, (DropTable, DropView)):
            successor = desired.get(change.key)
            if successor is None:
                effects[change.key] = {WHOLE: Effect("is dropped", change.key)}
            else:
                have = live.objects[change.key].columns  # a dropped object is live
                effects[change.key] = _vanished(have, successor.columns, f"is re-created as a {successor.kind}",
                                                change.key)
    return effects


def _vanished(have: tuple[Column, ...], want: tuple[Column, ...], how: str, cause: str) -> dict[str | None, Effect]:
    """The columns of ``have`` that ``want`` lacks, as effects."""
    names = {c.name for c in want}
    return {c.name: Effect(f"{how} without it", cause) for c in have if c.name not in names}


def _live_order(live: Catalog) -> list[str]:
    """The live views, each after the views it reads; a cycle (which Spark itself refuses) by name."""
    reads = {v.key: v.reads for v in live.views()}
    try:
        return topological_order(reads)
    except CycleError:
        return sorted(reads)


def _hits(view: View, effects: Mapping[str, Mapping[str | None, Effect]]) -> tuple[list[Breakage], list[Breakage]]:
    """What a change hits of what ``view`` uses: losses anywhere in the query, and type changes that reach
    its output (a view checks the types of its output columns only)."""
    losses = []
    for obj, columns in sorted(view.uses.items()):
        found = effects.get(obj, {})
        if WHOLE in found:
            losses.append(Breakage(view.key, obj, WHOLE, found[WHOLE]))
            continue
        losses += [Breakage(view.key, obj, c, found[c]) for c in columns if c in found and not found[c].retype]
    sources = sorted({tuple(source.rsplit(".", 1)) for sources in view.lineage.values() for source in sources})
    retypes = [Breakage(view.key, obj, column, effects[obj][column]) for obj, column in sources
               if effects.get(obj, {}).get(column) and effects[obj][column].retype]
    return losses, retypes


def _binding(view: View) -> str:
    mode = f"its schema mode is {BINDING}" if view.schema_mode else f"it stores no schema mode ({BINDING} in Spark)"
    return f"; {view.key} keeps the old type and {mode}, so Spark refuses to read it (Cannot up cast)"


def _follows(view: View, hit: Breakage) -> str:
    assert hit.effect.retype is not None  # a type change's effect carries both types
    old, new = hit.effect.retype
    column = f"{hit.object}.{hit.column}"
    if view.schema_mode == COMPENSATION:
        return (f"{view.key} ({COMPENSATION}) keeps {column} as {old}: Spark casts the new {new} values back, "
                "and a value that does not fit fails the query")
    return f"{view.key} ({view.schema_mode}) takes the new type of {column}: {new}"


def _passed_on(view: View, successor: Object | None, hits: list[Breakage], retypes: list[Breakage], recreated: bool,
               deliberate: bool) -> dict[str | None, Effect]:
    """What ``view``'s readers see change: it fails, it is re-created with other columns, or its types follow.

    A view re-created only to catch up with columns that already changed (a recompile after a
    lenient plan, say) breaks nothing new: its readers that use the old columns fail already.
    """
    if hits and not recreated:
        return {WHOLE: Effect("fails when queried", hits[0].effect.cause)}
    passed: dict[str | None, Effect] = {}
    if recreated and successor is not None and (hits or deliberate):
        passed.update(_vanished(view.columns, successor.columns, "is re-created", hits[0].effect.cause
                                if hits else view.key))
    if recreated or view.schema_mode not in (None, BINDING, COMPENSATION):
        retyped = {f"{h.object}.{h.column}": h.effect for h in retypes}
        for column, sources in view.lineage.items():
            through = [retyped[s] for s in sources if s in retyped]
            if through and column not in passed:
                passed[column] = Effect(f"changes type with {through[0].cause}", through[0].cause, through[0].retype)
    return passed


def _strict_message(hits: list[Breakage]) -> str:
    views = plural(len({h.view for h in hits}), "view")
    return (f"invalidation: strict, and this change breaks {views}: " + "; ".join(h.describe() for h in hits)
            + ". Change those views in the same change set, or set invalidation: lenient or cascade "
              "in schemaflow.yaml")
