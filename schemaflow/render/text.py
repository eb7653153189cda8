"""The plan for a terminal: numbered steps, their notes, and the statements each runs."""
from __future__ import annotations

from schemaflow.render.review import Review
from schemaflow.render.summary import markers, summary


def render(review: Review) -> str:
    plan = review.plan
    lines = [summary(plan, review.base)] + [f"warning: {warning}" for warning in plan.warnings]
    width = len(str(len(plan.steps)))
    for number, step in enumerate(plan.steps, 1):
        flags = markers(step)
        lines.append("")
        lines.append(f"{number:>{width}}. {step.summary}" + (f"  [{'; '.join(flags)}]" if flags else ""))
        pad = " " * (width + 2)
        lines += [f"{pad}hazard: {hazard}" for hazard in step.hazards]
        lines += [f"{pad}note: {note}" for note in step.notes]
        for action in step.actions:
            lines += [pad + "  " + line for line in action.describe().splitlines()]
    return "\n".join(lines) + "\n"
