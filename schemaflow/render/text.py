"""The plan for a terminal: what each step does to what, at a glance, then its notes and statements.

Each step starts with a marker: ``+`` creates, ``~`` changes, ``-`` drops, ``!`` is blocked. On a
terminal the markers, hazards and blocks are coloured (not when piped, nor with ``NO_COLOR`` or
``--no-color``). schemaflow's own bookkeeping (the ``schemaflow.*`` parameters every write stamps)
is left out unless ``verbose``, and a view whose SQL changes shows a unified diff of it, live
against declared, rather than the whole new statement; a changed comment or property shows its old
and new value; each reader's verdict on a step (``plan.readers``) that is not "same" follows its hazards, and beside
them those that read it as before, on one line (a step every reader reads as before says so by not being blocked, as
in the pull request's comment: the Spark the plan is made for, a reader of every step, reads most as before). A
closing line counts what the plan creates, changes and drops.

Text from the plan is shown with every character that could steer the terminal escaped
(``output_safety.terminal_text``) before schemaflow adds its own colours.
"""
from __future__ import annotations

from collections.abc import Callable

from schemaflow.output_safety import one_line, terminal_text as safe
from schemaflow.plan.plan import Plan
from schemaflow.render.review import Review
from schemaflow.render.shown import statements_of
from schemaflow.render.summary import change_counts, markers, step_marker, summary

_COLORS = {"+": "32", "~": "33", "-": "31", "!": "31;1", "hazard": "33", "blocked": "31;1"}
_DIFF_ROLES = {"+": "+", "-": "-"}  # a diff's added and removed lines, coloured as creates and drops


def render(review: Review, color: bool = False, verbose: bool = False) -> str:
    plan = review.plan
    paint = _painter(color)
    lines = [safe(summary(plan, review.base))] + [f"warning: {one_line(warning)}" for warning in plan.warnings]
    width = len(str(len(plan.steps)))
    for number, (step, statements) in enumerate(zip(plan.steps, statements_of(plan, verbose), strict=True), 1):
        flags = [safe(flag) for flag in markers(step)]
        marker = step_marker(step)
        lines.append("")
        line = f"{paint(marker, marker)} {number:>{width}}. {one_line(step.summary)}"
        lines.append(line + (paint(f"  [{'; '.join(flags)}]", "blocked" if step.blocked else "-") if flags else ""))
        pad = " " * (width + 4)
        lines += [pad + paint(f"hazard: {one_line(hazard)}", "hazard") for hazard in step.hazards]
        lines += [pad + paint(f"reader {one_line(v.describe())}", "hazard") for v in step.readers if not v.same]
        same = [v.reader for v in step.readers if v.same]
        if same and not all(v.same for v in step.readers):
            lines.append(f"{pad}readers as before: {one_line(', '.join(dict.fromkeys(same)))}")
        lines += [f"{pad}note: {one_line(note)}" for note in step.notes]
        lines += [pad + one_line(value) for value in step.values]
        diff = bool(step.sql_diff) and not verbose  # what changes in the SQL, not the whole new statement
        for line in map(safe, statements):
            role = _DIFF_ROLES.get(line[:1]) if diff and not line.startswith(("---", "+++")) else None
            lines.append(pad + "  " + (paint(line, role) if role else line))
    if not plan.is_empty:
        lines += ["", closing_line(plan)]
    return "\n".join(lines) + "\n"


def closing_line(plan: Plan) -> str:
    """``Plan: 3 to create, 1 to change, 0 to drop`` and, when there are any, how many are hazardous or blocked."""
    counts = change_counts(plan)
    line = f"Plan: {counts['+']} to create, {counts['~']} to change, {counts['-']} to drop"
    if counts["hazardous"]:
        line += f", {counts['hazardous']} hazardous"
    if plan.blocked:
        line += f", {len(plan.blocked)} blocked"
    return line + "."


def _painter(color: bool) -> Callable[[str, str], str]:
    def paint(text: str, role: str) -> str:
        return f"\033[{_COLORS[role]}m{text}\033[0m" if color else text
    return paint
