"""The one-line summary every rendering of a plan starts with, and the marker of each step.

A step's marker says what it does to its object, by its kind's ``Effect``: ``+`` creates, ``~``
changes, ``-`` drops; ``!`` marks a blocked step, whatever it would do.
"""
from __future__ import annotations

from schemaflow.plan.kinds import Effect, StepKind
from schemaflow.plan.plan import DESTRUCTIVE_BLOCK, Plan
from schemaflow.plan.steps import Step
from schemaflow.wording import plural


def summary(plan: Plan, base: str = "the metastore") -> str:
    """Steps, objects, destructive and hazardous steps, re-created views and blocked steps; ``base`` is what was
    planned against."""
    if plan.is_empty:
        return f"No changes: {base} matches the schemas (databases: {', '.join(plan.databases) or 'none'})."
    destructive = sum(s.destructive for s in plan.steps)
    recreated = sum(s.kind == StepKind.REPLACE_VIEW for s in plan.steps)
    settings = sum(s.kind == StepKind.CHANGE_SETTINGS for s in plan.steps)
    changed = [plural(len(plan.objects), 'object')] if plan.objects or not settings else []
    changed += [plural(settings, 'setting')] if settings else []
    line = f"{plural(len(plan.steps), 'step')} on {' and '.join(changed)}, {destructive} destructive"
    hazardous = change_counts(plan)["hazardous"]
    if hazardous:  # data kept but put at risk (a Parquet column retyped to string): not "0 destructive" alone
        line += f", {hazardous} hazardous"
    if recreated:
        line += f", {plural(recreated, 'view')} re-created"
    if plan.blocked:
        line += f", {len(plan.blocked)} blocked: apply will refuse this plan"
    return line + "."


# What allows a drop where the plan is a pull request's comment: the label the workflows read.
ALLOW_DESTRUCTIVE_LABEL = "schemaflow-allow-destructive"


def markers(step: Step, review: bool = False) -> list[str]:
    """Short flags shown beside a step; in a pull request's ``review``, a drop is allowed by its label."""
    flags = []
    if step.destructive:
        flags.append("destructive")
    if step.blocked == DESTRUCTIVE_BLOCK and review:
        flags.append(f"BLOCKED: destructive: to allow it, add the label {ALLOW_DESTRUCTIVE_LABEL} to the pull request "
                     "before its approving review")
    elif step.blocked:
        flags.append("BLOCKED: " + step.blocked)
    return flags


MARKERS = {Effect.CREATE: "+", Effect.CHANGE: "~", Effect.DROP: "-"}
BLOCKED = "!"


def step_marker(step: Step) -> str:
    """The marker of what ``step`` does, or ``BLOCKED``: what a reader scans for."""
    return BLOCKED if step.blocked else MARKERS[step.effect]


def change_counts(plan: Plan) -> dict[str, int]:
    """How many steps of the plan create (``+``), change (``~``) and drop (``-``) something (blocked ones by what
    they would do), and how many put data at risk (``hazardous``)."""
    counts = dict.fromkeys([*MARKERS.values(), "hazardous"], 0)
    for step in plan.steps:
        counts[MARKERS[step.effect]] += 1
        counts["hazardous"] += bool(step.hazards)
    return counts
