"""The one-line summary every rendering of a plan starts with."""
from __future__ import annotations

from schemaflow.plan.plan import Plan


def summary(plan: Plan) -> str:
    if plan.is_empty:
        return f"No changes: the metastore matches the schemas (databases: {', '.join(plan.databases) or 'none'})."
    destructive = sum(s.destructive for s in plan.steps)
    line = (f"{len(plan.steps)} step{'s' if len(plan.steps) != 1 else ''} on "
            f"{len(plan.objects)} object{'s' if len(plan.objects) != 1 else ''}, {destructive} destructive")
    if plan.blocked:
        line += f", {len(plan.blocked)} blocked: apply will refuse this plan"
    return line + "."


def markers(step) -> list[str]:
    """Short flags shown beside a step."""
    flags = []
    if step.destructive:
        flags.append("destructive")
    if step.blocked:
        flags.append("BLOCKED: " + step.blocked)
    return flags
