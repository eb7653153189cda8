"""Views that call Java by name: code in the apply job, approved by the operator as a setting is.

A view's file may let its SQL call a Java method by name (``java_functions: [reflect]``), and that call
runs wherever the view is read: in apply's own Spark first, which reads the view as it creates it.
The switch is the view author's own, so it approves nothing. Each step that creates or replaces such
a view carries a hazard with the id of its statements (``code_settings.CodeSetting``), shown in the
plan and the comment, and apply refuses the plan until the operator approves that id, as it refuses
an unapproved hook. The id covers every statement of the step that calls Java, so an approval never
carries over to another query.
"""
from __future__ import annotations

from dataclasses import replace
from collections.abc import Iterable

from schemaflow.code_settings import APPROVAL_VARIABLE, CodeSetting
from schemaflow.plan.steps import SqlAction, Step
from schemaflow.sql.views import JAVA_FUNCTIONS, function_calls


def step_code(step: Step) -> tuple[CodeSetting, ...]:
    """The Java the step's statements call by name, as one code setting (none when they call none)."""
    calling = [a.sql for a in step.actions if isinstance(a, SqlAction) and function_calls(a.sql, JAVA_FUNCTIONS)]
    if not calling:
        return ()
    names = sorted({name for sql in calling for name, _, _ in function_calls(sql, JAVA_FUNCTIONS)})
    return (CodeSetting(f"view {step.object}", ";\n".join(calling),
                        f"calls Java by name ({', '.join(names)}) in every engine that reads it, apply's Spark first"),)


def with_code_hazard(step: Step) -> Step:
    """The step with a hazard for the Java its statements call, naming the id the operator approves."""
    hazards = tuple(f"runs code in the apply job: {code.setting} {code.reason}; apply refuses it until the "
                    f"operator approves id {code.id} ({APPROVAL_VARIABLE} or --approve-code)"
                    for code in step_code(step))
    return replace(step, hazards=step.hazards + hazards) if hazards else step


def plan_code(steps: Iterable[Step]) -> tuple[CodeSetting, ...]:
    """Every view of a plan's ``steps`` that calls Java by name, in the plan's order."""
    return tuple(code for step in steps for code in step_code(step))
