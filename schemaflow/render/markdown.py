"""The plan as a pull-request comment: a summary, a table of steps, and the statements folded away."""
from __future__ import annotations

from schemaflow.plan.plan import Plan
from schemaflow.render.summary import markers, summary


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render(plan: Plan) -> str:
    lines = ["### schemaflow plan", "", summary(plan)]
    if plan.is_empty:
        return "\n".join(lines) + "\n"
    lines += ["", "| # | object | change | notes |", "|---|---|---|---|"]
    for number, step in enumerate(plan.steps, 1):
        notes = [f"**{flag}**" for flag in markers(step)] + [f"⚠ {h}" for h in step.hazards] + list(step.notes)
        lines.append(f"| {number} | `{step.object}` | {_cell(step.summary)} | {_cell('; '.join(notes))} |")
    lines += ["", "<details><summary>Statements</summary>", "", "```sql"]
    for number, step in enumerate(plan.steps, 1):
        lines.append(f"-- {number}. {step.summary}")
        lines += [action.describe() for action in step.actions]
    lines += ["```", "", "</details>"]
    return "\n".join(lines) + "\n"
