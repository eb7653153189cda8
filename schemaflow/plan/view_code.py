"""Views whose SQL runs code: steps with an id, which apply runs only once the operator approves it.

A view's SQL may call what Spark resolves as its own, and the functions the project declares
(``sql.code_calls``). Any other call is code that runs wherever the view is read, in apply's own Spark
first, which analyses the view as it creates it: a function another team registered in the metastore
(its class, and the jars Spark fetches for it), a command (``TRANSFORM(...) USING``), a Java method by
name (``reflect``, which the view's file must allow with ``java_functions``). Whoever writes the view
approves none of it. Each step that creates or replaces such a view carries a hazard with the id of
its statements (``code_settings.CodeSetting``), shown in the plan and the comment, and apply refuses
the plan until the operator approves that id, as it refuses an unapproved hook. The id covers every
statement of the step that calls code, so an approval never carries over to another query.

Creating a view also has Spark analyse the live views its query reads, with their stored SQL, which another
client of the metastore writes: where that is code, the step carries it (``plan.live_code``), and the same id
covers it, so the operator approves exactly the code that runs, as it is.

Nor does planning run it: Spark checks a view's SQL by analysing it (``catalog.hive.view_check``), which
resolves its functions, fetching and loading what the metastore names. A view step whose code the
operator has not approved is not checked, and says so (``unchecked``).
"""
from __future__ import annotations

import json
from dataclasses import replace
from collections.abc import Collection, Iterable

from schemaflow.code_settings import APPROVAL_VARIABLE, CodeSetting
from schemaflow.plan.kinds import VIEW_DEFINITIONS
from schemaflow.plan.steps import CheckLiveViews, CreateViewAction, Step
from schemaflow.spark_version import spark_version
from schemaflow.sql.code_calls import UNREADABLE, Allowed, Resolved, code_calls, described
from schemaflow.sql.views import ViewSqlError


def step_code(step: Step, allowed: Allowed | None = None) -> tuple[CodeSetting, ...]:
    """The code the step has Spark run, as one code setting (none when it runs none): what its statements call, and
    the live views' SQL it has Spark analyse that is code (``plan.live_code``); ``allowed``: what views call freely
    (None: the installed Spark's built-ins, and nothing declared)."""
    calling = _own_code(step, allowed or Allowed(spark_version()))
    live = [action for action in step.actions if isinstance(action, CheckLiveViews) and action.code]
    if not calling and not live:
        return ()
    resolved = [call for _, code in calling if code is not None for call in code]
    unreadable = any(code is None for _, code in calling)
    what = " and ".join(filter(None, [UNREADABLE if unreadable else "", described(resolved) if resolved else ""]
                                + [f"reads live views whose SQL is code, analysed with it ({check.code})" for check in live]))
    # The live SQL as data: a view's texts are not told apart by where one ends and the next begins.
    value = ";\n".join([sql for sql, _ in calling] + [
        "-- the live views Spark analyses: " + json.dumps({key: sql and sql.to_data() for key, sql in check.views.items()},
                                                          sort_keys=True) for check in live])
    return (CodeSetting(f"view {step.object}", value, f"{what} in every engine that reads it, apply's Spark first"),)


def _own_code(step: Step, allowed: Allowed) -> list[tuple[str, tuple[Resolved, ...] | None]]:
    """Each statement of the step that calls code, with the calls (None: it cannot be read to tell)."""
    database = step.object.partition(".")[0]
    found = [(sql, _code(sql, database, allowed)) for action in step.actions
             if isinstance(action, CreateViewAction) for sql in action.statements]
    return [(sql, code) for sql, code in found if code != ()]


def _code(sql: str, database: str, allowed: Allowed) -> tuple[Resolved, ...] | None:
    """The calls of ``sql`` that are code; None where sqlglot cannot read it (then nothing says it calls none)."""
    try:
        return code_calls(sql, database, allowed)
    except ViewSqlError:
        return None


def with_code_hazard(step: Step, allowed: Allowed | None = None) -> Step:
    """The step with a hazard for the code its statements call, naming the id the operator approves."""
    hazards = tuple(f"runs code in the apply job: {code.setting} {code.reason}; apply refuses it until the "
                    f"operator approves id {code.id} ({APPROVAL_VARIABLE} or --approve-code)"
                    for code in step_code(step, allowed))
    return replace(step, hazards=step.hazards + hazards) if hazards else step


def plan_code(steps: Iterable[Step], allowed: Allowed | None = None) -> tuple[CodeSetting, ...]:
    """Every view of a plan's ``steps`` that calls code, in the plan's order."""
    return tuple(code for step in steps for code in step_code(step, allowed))


def unchecked(steps: Iterable[Step], allowed: Allowed | None, approved: Collection[str]) -> dict[str, str]:
    """The views ``steps`` create or replace whose own SQL calls code the operator has not approved, each with the
    note its step carries: Spark does not check them, since checking would run that code. (Spark checks a view
    against stand-ins of what it reads, never live views: ``catalog.hive.view_check``.)"""
    return {step.object: ("not checked with Spark before apply: Spark would run the code its SQL calls to analyse it, "
                          "and the operator has not approved that code")
            for step in steps if step.kind in VIEW_DEFINITIONS and _own_code(step, allowed or Allowed(spark_version()))
            and any(code.id not in approved for code in step_code(step, allowed))}


def calls_code(sql: str, database: str, allowed: Allowed) -> bool:
    """Whether a view's ``sql`` calls code (or cannot be read to tell)."""
    return _code(sql, database, allowed) != ()
