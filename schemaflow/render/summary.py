"""The one-line summary every rendering of a plan starts with."""
from __future__ import annotations

from dataclasses import replace

from schemaflow.plan.plan import Plan
from schemaflow.plan.steps import SETTINGS_STEP, Step
from schemaflow.wording import plural


def summary(plan: Plan, base: str = "the metastore") -> str:
    """Steps, objects, destructive and hazardous steps, re-created views and blocked steps; ``base`` is what was
    planned against."""
    if plan.is_empty:
        return f"No changes: {base} matches the schemas (databases: {', '.join(plan.databases) or 'none'})."
    destructive = sum(s.destructive for s in plan.steps)
    recreated = sum(s.kind == "replace_view" for s in plan.steps)
    settings = sum(s.kind == SETTINGS_STEP for s in plan.steps)
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


def markers(step: Step) -> list[str]:
    """Short flags shown beside a step."""
    flags = []
    if step.destructive:
        flags.append("destructive")
    if step.blocked:
        flags.append("BLOCKED: " + step.blocked)
    return flags


def step_marker(step: Step) -> str:
    """``+`` for a step that creates, ``-`` drops, ``!`` is blocked, ``~`` changes: what a reader scans for."""
    if step.blocked:
        return "!"
    if step.kind.startswith("create_"):
        return "+"
    if step.kind.startswith("drop_"):
        return "-"
    return "~"


def change_counts(plan: Plan) -> dict[str, int]:
    """How many steps of the plan create (``+``), change (``~``) and drop (``-``) something (blocked ones by what
    they would do), and how many put data at risk (``hazardous``)."""
    counts = {"+": 0, "~": 0, "-": 0, "hazardous": 0}
    for step in plan.steps:
        counts[step_marker(replace(step, blocked=None))] += 1
        counts["hazardous"] += bool(step.hazards)
    return counts
