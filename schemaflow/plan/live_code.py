"""What Spark analyses of the live catalog as apply runs a step, held to the rule declared view SQL is held to.

Spark analyses a live view's stored SQL whenever a statement resolves the view, and with it runs what resolving
needs: the functions it calls (fetching and loading what the metastore names for them) and every view it reads,
with theirs. Measured with a metastore function whose class writes a marker as it loads, on pyspark 3.5.9 and 4.3.0:

- ``DROP VIEW`` analyses the view it drops (to uncache it), on both;
- ``CREATE OR REPLACE VIEW`` (and ``ALTER VIEW ... AS``) analyses the view it replaces on 3.5, not on 4.3;
- ``CREATE [OR REPLACE] VIEW`` analyses every view its query reads, on both; a table's statements (``DROP TABLE``,
  ``ALTER TABLE``) analyse none of the views over it.

What Spark parses of a live view is the metastore's expanded text, which another client may store apart from the
original one that plans show, and it resolves the text's unqualified names in the database stored with the view,
or, where none is, the session's current one (``model.ViewSql``). A metastore writer (another team's job, with
write access to a database schemaflow manages) sets all three.

So every live view a step would have Spark analyse is held to the rule of ``sql.code_calls``, with the same finder
and the same allowed calls as declared SQL: Spark's built-ins of the project's release and the declared functions
(where the metastore holds them as declared: ``LiveViews.otherwise``). Where one calls anything else, or cannot be
read to tell:

- a drop does not go through Spark: the view's entry is dropped through the metastore client (a ``DropViewAction``
  not through the engine), so nothing of its SQL is analysed. Nobody has to read that code and approve it to be rid of the view;
- a replace drops the live entry so too, then creates the view (``CREATE VIEW``, which fails rather than replace
  an entry someone else made meanwhile). One rule for every release (4.3 would not analyse what it replaces, 3.5
  would). A reader of the view meets no view for the moment between the two, as with Spark's own ``CREATE OR
  REPLACE VIEW``, which drops the entry and creates it anew too (measured on both releases): a moment longer, by
  Spark's analysis of the new query;
- a create or replace whose query reads such a view, directly or through other live views, runs that code, which
  is the point of reading that view: its step carries the SQL Spark would analyse (``CheckLiveViews``), which its
  id covers (``plan.view_code``), and apply refuses it until the operator has read that code and approved the id.

And since another client may change a view between the plan apply makes and the step (an apply that rewrites a
table runs for an hour, and its claims show what it will touch), every step whose statement has Spark analyse live
views carries their SQL as planned, code or not, and apply checks them unchanged through the metastore client just
before the statement, refusing the rest of the apply otherwise: a plan made again then sees what they hold. Where
none of that SQL is code, the check is bookkeeping, left out of what a reader is shown (``render.shown``).

Views an earlier step of the plan (re-)creates are seen as declared there (their own step's id covers their code);
live views of the databases the plan does not read (another team's, behind a ``source:``) are read by name, where
the plan is made against the metastore (``LiveViews.elsewhere``). A plan made from files (a git ref, a snapshot)
knows only the views it was given, and what it reads elsewhere stands as its files declare it: apply, which plans
against the metastore again, is where those are read.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence

from schemaflow.model import CURRENT_DATABASE, Catalog, View, ViewSql, split_key, view_sql
from schemaflow.plan.changes import Change, CreateView, DropView, ReplaceView
from schemaflow.plan.steps import CheckLiveViews
from schemaflow.sql.code_calls import UNREADABLE, Allowed, Reach, Resolved, described, resolved_calls
from schemaflow.sql.views import ViewSqlError, tables_read

# Reads views by name outside the databases a plan read: None for a name of no view; a name left out was not read.
ViewReader = Callable[[Collection[str]], Mapping[str, "View | None"]]


@dataclass(frozen=True)
class LiveViews:
    """The live views a plan's steps may have Spark analyse: those of ``catalog``, the databases the plan read (views
    schemaflow leaves alone there too), and others read by name through ``elsewhere`` (None: not known); and which of
    the declared functions their SQL calls the catalog holds otherwise than declared (``otherwise``, asked only of
    those called; None: not known, each is as declared). Spark would load what the catalog holds for such a function,
    which the operator did not approve: a live view that calls one calls code."""

    catalog: Catalog
    elsewhere: ViewReader | None = None
    otherwise: Callable[[Collection[str]], Collection[str]] | None = None


@dataclass(frozen=True)
class Reached:
    """A live view a statement has Spark analyse: its SQL (None: it could not be read), and the code that SQL calls
    (None: not known, for ``unknown``)."""

    key: str
    sql: ViewSql | None
    code: tuple[Resolved, ...] | None
    unknown: str = ""

    def describe(self) -> str:
        """What of its SQL is code, in words ("" for none)."""
        return f"{self.key} {self.unknown}" if self.code is None else f"{self.key} {described(self.code)}" if self.code else ""


def with_live_code(changes: Sequence[Change], live: LiveViews, allowed: Allowed) -> list[Change]:
    """``changes``, in the order they run, each that has Spark analyse a live view whose SQL is code made to run none
    of it, or to carry it for the operator's approval, and each that has Spark analyse live views made to check them
    first (see the module docstring)."""
    state = _State(live, allowed)
    found: list[Change] = []
    for change in changes:
        if isinstance(change, DropView):
            old = state.reached([change.key])
            if said := _words(old):
                change = replace(change, through_metastore=(
                    f"dropped through the metastore client, not Spark's DROP VIEW, which would analyse its live SQL "
                    f"first: {said}; none of it runs"))
            elif old:
                change = replace(change, check=_check(change.key, old))
            state.drop(change.key)
        elif isinstance(change, (CreateView, ReplaceView)):
            old = state.reached([change.key]) if isinstance(change, ReplaceView) else []
            if isinstance(change, ReplaceView) and (said := _words(old)):
                change = replace(change, drop_first=(
                    f"its live entry is dropped through the metastore client first, then the view created anew: Spark "
                    f"would analyse its live SQL to replace it, and {said}; none of it runs. Readers meet no view in "
                    f"between, as with Spark's own CREATE OR REPLACE VIEW, which drops and creates the entry too"))
                state.drop(change.key)
                old = []
            reached = {r.key: r for r in old + state.reached(change.view.reads)}
            if reached:
                change = replace(change, check=_check(change.key, list(reached.values())))
            state.make(change.view)
        found.append(change)
    return found


def _check(key: str, reached: Sequence[Reached]) -> CheckLiveViews:
    return CheckLiveViews(key, {r.key: r.sql for r in reached}, _words(reached))


def _words(reached: Iterable[Reached]) -> str:
    """What of the ``reached`` views' SQL is code, in words ("" for none)."""
    return "; ".join(filter(None, (r.describe() for r in reached)))


class _State:
    """What each name holds as apply's steps reach it: live views, views an earlier step made, names dropped."""

    def __init__(self, live: LiveViews, allowed: Allowed) -> None:
        self.allowed = allowed
        self.read = frozenset(live.catalog.databases)
        self.elsewhere, self.otherwise = live.elsewhere, live.otherwise
        self.held: dict[str, bool] = {}  # whether the catalog holds each declared function as declared, once asked
        self.known: dict[str, tuple[Reached, tuple[str, ...]]] = {}  # each live view as Spark analyses it, once read
        self.live: dict[str, View | None] = {key: obj for key, obj in live.catalog.objects.items()
                                             if isinstance(obj, View)}  # and None where no view is, read elsewhere
        self.made: dict[str, View] = {}  # declared views the steps so far (re-)created
        self.gone: set[str] = set()
        self.asked: set[str] = set()  # the names read elsewhere, answered or not

    def drop(self, key: str) -> None:
        self.gone.add(key)
        self.made.pop(key, None)

    def make(self, view: View) -> None:
        self.made[view.key] = view
        self.gone.discard(view.key)

    def reached(self, keys: Iterable[str]) -> list[Reached]:
        """Each live view Spark analyses to resolve ``keys`` now, and what they read, in name order."""
        found: dict[str, Reached] = {}
        seen: set[str] = set()
        wanted = set(keys)
        while wanted:
            self._read(wanted)
            following: set[str] = set()
            for key in sorted(wanted):
                seen.add(key)
                if key in self.gone:
                    continue
                if key in self.made:  # as declared: its own step's id covers its code
                    following.update(self.made[key].reads)
                elif key not in self.live and split_key(key)[0] not in self.read:
                    found[key] = Reached(key, None, None, "could not be read (what it calls is not known)")
                elif (view := self.live.get(key)) is not None:
                    if key not in self.known:
                        self.known[key] = self._reached(view)
                    found[key], reads = self.known[key]
                    following.update(reads)
            wanted = following - seen
        return [found[key] for key in sorted(found)]

    def _read(self, keys: Iterable[str]) -> None:
        """Read the views among ``keys`` of the databases not read yet, where they can be."""
        unread = {key for key in keys if key not in self.live and split_key(key)[0] not in self.read
                  and key not in self.asked}
        if not unread:
            return
        self.asked |= unread
        if self.elsewhere is None:  # not known here: it stands as its files declare it
            self.live.update(dict.fromkeys(unread))
            return
        self.live.update(self.elsewhere(unread))


    def _reached(self, view: View) -> tuple[Reached, tuple[str, ...]]:
        """The live ``view`` as Spark analyses it, and what it reads (qualified as Spark qualifies it)."""
        sql = view_sql(view)
        where = view.resolves_in or view.database
        try:
            calls, reads = resolved_calls(sql.analysed, where, self.allowed), tables_read(sql.analysed, where)
        except ViewSqlError:
            return Reached(view.key, sql, None, UNREADABLE), ()
        named = tuple(key for key in reads if split_key(key)[0] != CURRENT_DATABASE)
        if len(named) < len(reads):
            return Reached(view.key, sql, None, "reads names it does not qualify, which Spark resolves in the session's "
                                                "current database (what they are is not known)"), named
        self._ask({found.function for found in calls if found.reach == Reach.DECLARED})
        code = tuple(found if found.code else replace(found, reach=Reach.METASTORE) for found in calls
                     if found.code or found.reach == Reach.DECLARED and not self.held[found.function])
        return Reached(view.key, sql, code), named

    def _ask(self, functions: Collection[str]) -> None:
        """Learn whether the catalog holds each of the declared ``functions`` as declared."""
        unasked = sorted(set(functions) - self.held.keys())
        if unasked:
            otherwise = set(self.otherwise(unasked)) if self.otherwise else set()
            self.held |= {name: name not in otherwise for name in unasked}
