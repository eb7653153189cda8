"""What a reader is shown of a step's actions, in a terminal and in a pull-request comment alike.

Each action is worded for the catalog the plan was made for (``Plan.catalog``), as its backend's ``Wording`` says
(``catalog.backends.backend_capabilities``, through ``review.capabilities_of``): on the Hive metastore, the Spark SQL and metastore calls its writer runs;
on a catalog that runs no SQL, the catalog's own calls and what they change (``render.catalog_words``).
schemaflow's own bookkeeping (the ``schemaflow.*`` parameters each write stamps, the record of the
settings applied, the check that live views none of whose SQL is code are as planned) is left out unless asked for
(``verbose``); a view whose SQL changes shows a unified
diff of it, old against declared, rather than the whole new statement. The plan's JSON has everything.
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import assert_never

from schemaflow.capabilities import HIVE_METASTORE, Wording
from schemaflow.model import SCHEMAFLOW_PREFIX
from schemaflow.plan.plan import HIVE, Plan
from schemaflow.plan.steps import (Action, AddColumnsAction, AddDatabase, ChangeViewPartitions, CheckLiveViews, DeltaAlter,
                                   DeltaCreate,
                                   CreateTableAction, CreateViewAction, DropTableAction, DropViewAction, IcebergCommit,
                                   ForgetEntryAction, KeepViewPartitions, PartitionView, RegisterTableAction,
                                   RestoreBackup, RewriteRows, SetColumnCommentsAction, SetColumns,
                                   SetDatabaseParameters, SetParameters, SetStorageAction, SetTableCommentAction, Step)
from schemaflow.render.catalog_words import words
from schemaflow.render.review import capabilities_of
from schemaflow.sql.ddl import CLAIM

# Said under the first statement that holds CLAIM: a reader meets ${claim} in every CREATE.
CLAIM_EXPLAINED = f"-- {CLAIM}: apply puts its run's claim here; the step's last write replaces it with the object's version"


def statements_of(plan: Plan, verbose: bool = False) -> Iterator[list[str]]:
    """``statement_lines`` of each of the plan's steps, worded for its catalog, with ``CLAIM_EXPLAINED`` under the
    first that shows ``CLAIM``."""
    wording = capabilities_of(plan).wording
    explained = False
    for step in plan.steps:
        lines = statement_lines(step, verbose, plan.catalog, wording)
        if not explained and any(CLAIM in line for line in lines):
            lines.append(CLAIM_EXPLAINED)
            explained = True
        yield lines


def statement_lines(step: Step, verbose: bool = False, catalog: str = HIVE,
                    wording: Wording = HIVE_METASTORE.wording) -> list[str]:
    """The lines that show what ``step`` runs on the backend ``catalog`` (worded as its ``wording`` says): its SQL
    diff, or each action's statement, bookkeeping left out."""
    if step.sql_diff and not verbose:
        return list(step.sql_diff)
    # The Hive metastore's text shows an Iceberg commit and the stamp it takes in apart, as it always has; the words
    # of another catalog, and a Delta table's statements (whose stamp the engine writes too), show each write as apply
    # makes it.
    as_run = not wording.sql or any(isinstance(action, DeltaCreate | DeltaAlter) for action in step.body)
    shown = [kept for action in (step.runs if as_run else step.actions)
             if (kept := action if verbose else without_bookkeeping(action)) is not None]
    texts = (_described(shown) if wording.sql else
             [words(action, catalog, wording, step.object_type, verbose) for action in shown])
    # Split at newlines only: a CR or another separator in user text stays in its line, to be escaped.
    return [line for text in texts for line in text.split("\n")]


def _described(actions: Sequence[Action]) -> list[str]:
    """Each action's text, but that the ``USE`` a view's CREATE runs in comes first in its step, as plans have always
    shown it: what runs between (reads of its partitions and of live views, a drop of its entry) are metastore calls,
    which no current database moves."""
    uses = [f"{action.statements[0]};" for action in actions if isinstance(action, CreateViewAction)]
    return uses + ["\n".join(f"{s};" for s in action.statements[1:]) if isinstance(action, CreateViewAction)
                   else action.describe() for action in actions]


def without_bookkeeping(action: Action) -> Action | None:
    """``action`` without the ``schemaflow.*`` parameters it writes; None when that is all it writes."""
    match action:
        case SetParameters():
            kept = {k: v for k, v in action.set.items() if not k.startswith(SCHEMAFLOW_PREFIX)}
            unset = tuple(k for k in action.unset if not k.startswith(SCHEMAFLOW_PREFIX))
            return replace(action, set=kept, unset=unset) if kept or unset else None
        case SetColumns():
            return replace(action, parameters={})
        case IcebergCommit() | DeltaAlter():
            return replace(action, set={k: v for k, v in action.set.items() if not k.startswith(SCHEMAFLOW_PREFIX)},
                           unset=tuple(k for k in action.unset if not k.startswith(SCHEMAFLOW_PREFIX)))
        case DeltaCreate():
            return replace(action, set={k: v for k, v in action.set.items() if not k.startswith(SCHEMAFLOW_PREFIX)})
        case SetDatabaseParameters():
            kept = {k: v for k, v in action.properties.items() if not k.startswith(SCHEMAFLOW_PREFIX)}
            return replace(action, properties=kept) if kept else None
        case CheckLiveViews():  # bookkeeping where none of those views' SQL is code
            return action if action.code else None
        case (CreateTableAction() | AddColumnsAction() | SetTableCommentAction() | SetColumnCommentsAction()
              | DropTableAction() | CreateViewAction() | DropViewAction() | AddDatabase() | PartitionView()
              | ChangeViewPartitions() | KeepViewPartitions() | SetStorageAction() | RewriteRows() | RestoreBackup()
              | RegisterTableAction() | ForgetEntryAction()):
            return action
        case _ as unreachable:
            assert_never(unreachable)
