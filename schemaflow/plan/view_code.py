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

Nor does planning run it: Spark checks a view's SQL by analysing it (``catalog.view_check``), which
resolves its functions, fetching and loading what the metastore names. A view step whose code the
operator has not approved is not checked, and says so (``unchecked``).
"""
from __future__ import annotations

from dataclasses import replace
from collections.abc import Collection, Iterable

from schemaflow.code_settings import APPROVAL_VARIABLE, CodeSetting
from schemaflow.plan.kinds import VIEW_DEFINITIONS
from schemaflow.plan.steps import SqlAction, Step
from schemaflow.spark_version import spark_version
from schemaflow.sql.code_calls import Allowed, Resolved, code_calls, described
from schemaflow.sql.views import ViewSqlError

_UNREADABLE = "holds SQL schemaflow cannot read (what it calls is not known)"


def step_code(step: Step, allowed: Allowed | None = None) -> tuple[CodeSetting, ...]:
    """The code the step's statements call, as one code setting (none when they call none); ``allowed``: what views
    call freely (None: the installed Spark's built-ins, and nothing declared)."""
    allowed = allowed or Allowed(spark_version())
    database = step.object.partition(".")[0]
    found = [(action.sql, _code(action.sql, database, allowed)) for action in step.actions
             if isinstance(action, SqlAction)]
    calling = [(sql, code) for sql, code in found if code != ()]
    if not calling:
        return ()
    resolved = [call for _, code in calling if code is not None for call in code]
    unreadable = any(code is None for _, code in calling)
    what = " and ".join(filter(None, [_UNREADABLE if unreadable else "", described(resolved) if resolved else ""]))
    return (CodeSetting(f"view {step.object}", ";\n".join(sql for sql, _ in calling),
                        f"{what} in every engine that reads it, apply's Spark first"),)


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
    """The views ``steps`` create or replace whose code the operator has not approved, each with the note its step
    carries: Spark does not check them, since checking would run that code."""
    return {step.object: ("not checked with Spark before apply: Spark would run the code its SQL calls to analyse it, "
                          "and the operator has not approved that code")
            for step in steps if step.kind in VIEW_DEFINITIONS
            and any(code.id not in approved for code in step_code(step, allowed))}


def calls_code(sql: str, database: str, allowed: Allowed) -> bool:
    """Whether a view's ``sql`` calls code (or cannot be read to tell)."""
    return _code(sql, database, allowed) != ()
