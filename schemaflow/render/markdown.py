"""The plan as a pull-request comment that a reviewer reads at a glance.

From the top: a hidden marker (the CI workflow finds its previous comment by it and edits that
comment instead of adding one), the summary line and what was compared, a table of the steps with
their flags, hazards and notes, for each table a reader reads otherwise or cannot read a table of every
reader's verdicts (``plan.readers``), a Mermaid graph of the tables and views the plan touches with what
each view among them reads, and the statements folded away in ``<details>``. Text from the plan is
escaped, so a ``|`` in a comment or an ``array<string>`` type cannot break the table, a line break
cannot end a row, and nothing a user wrote becomes a link, a mention or HTML; graph nodes
are numbered in name order, so names need no quoting rules and the same plan draws the same graph.
A comment longer than GitHub accepts leaves the statements out and says where they are; if it is
still too long, it also leaves out the graph and the table's last rows, and says how many it shows.
"""
from __future__ import annotations

import re
from collections.abc import Mapping

from schemaflow.output_safety import one_line
from schemaflow.plan.kinds import Effect, ObjectType, StepKind
from schemaflow.plan.plan import Plan
from schemaflow.plan.readers import ReaderVerdict, describe
from schemaflow.plan.steps import Step
from schemaflow.render.review import Review
from schemaflow.render.shown import statements_of
from schemaflow.render.summary import markers, summary
from schemaflow.wording import plural

MARKER = "<!-- schemaflow-plan -->"
MAX_CHARACTERS = 65_536  # the longest comment body GitHub accepts
_CUT_NOTE_ROOM = 300      # what the line that says steps were left out takes, at most

# How the graph colours an object by what happens to it (the word is also in its label).
_STATES = {
    "created": "fill:#dafbe1,stroke:#1a7f37,color:#1f2328",
    "re-created": "fill:#fff8c5,stroke:#9a6700,color:#1f2328",
    "changed": "fill:#ddf4ff,stroke:#0969da,color:#1f2328",
    "dropped": "fill:#ffebe9,stroke:#cf222e,color:#1f2328",
    "blocked": "fill:#eaeef2,stroke:#cf222e,stroke-width:3px,stroke-dasharray:5 5,color:#1f2328",
}
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]<>|~&])")
# What a key may hold to be shown in a code span, and a graph's label as itself: a catalog other than Hive's may hold
# a name of any characters (a backtick ends a span, a quote a label), and the rest are written otherwise.
_PLAIN = re.compile(r"[A-Za-z0-9_.$ ,()-]*")
_AUTOLINK = re.compile(r"(?i:\b(?:https?|ftp)):(?=//)|\b(?i:www)\.")  # what GitHub links by itself
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def render(review: Review) -> str:
    """The pull-request comment for ``review``."""
    plan = review.plan
    basis = f"Planned: {review.head} against {review.base}"
    if review.counts_from is None:
        article = "an" if review.catalog[:1].lower() in "aeiou" else "a"
        basis += f", without {article} {review.catalog}: partition counts are unknown"
    elif review.counts_from != "the metastore":
        basis += f", with partition counts from {review.counts_from}"
    top = [MARKER, "### schemaflow plan", "", f"**{_escape(summary(plan, review.base))}**", "", _escape(basis) + "."]
    if plan.warnings:
        top += [""] + [f"- ⚠ {_escape(warning)}" for warning in plan.warnings]
    if plan.is_empty:
        return _lines(top)
    table = _table(plan)
    body = top + table + _readers(plan) + _graph(plan, review.reads)
    comment = _lines(body + _statements(plan))
    if len(comment) <= MAX_CHARACTERS:
        return comment
    comment = _lines(body + ["", "The statements are left out: with them this comment would be longer than GitHub "
                                 "accepts. `schemaflow plan --format json` (the workflow's plan.json) has them all."])
    if len(comment) <= MAX_CHARACTERS:
        return comment
    return _lines(_cut(top, table, len(plan.steps)))


def _cut(top: list[str], table: list[str], steps: int) -> list[str]:
    """The comment with as many of the table's rows as GitHub accepts, and a line saying where the rest are;
    the graph and the statements are left out."""
    lines, length = list(top), len(_lines(top))
    room = MAX_CHARACTERS - length - _CUT_NOTE_ROOM
    for row in table:
        if len(row) + 1 > room:
            break
        lines.append(row)
        room -= len(row) + 1
    shown = len(lines) - len(top) - 3  # the table's blank line, header and rule are not steps
    return lines + ["", f"Only the first {shown} of {steps} steps fit in a comment GitHub accepts: the workflow's "
                        "artifact `schemaflow-plan` (plan.json) has the whole plan, and `schemaflow show plan.json` "
                        "prints it."]


def _table(plan: Plan) -> list[str]:
    rows = ["", "| # | object | change | notes |", "|---|---|---|---|"]
    for number, step in enumerate(plan.steps, 1):
        # The comment is a pull request's: what allows a drop there is the label.
        notes = ([f"**{_escape(flag)}**" for flag in markers(step, review=True)] + [f"⚠ {_escape(h)}" for h in step.hazards]
                 + [_escape(note) for note in step.notes] + [_escape(value) for value in step.values])
        rows.append(f"| {number} | {_key(step.object)} | {_escape(step.summary)} | {'<br>'.join(notes)} |")
    return rows


def _readers(plan: Plan) -> list[str]:
    """A table per changed table that some reader reads otherwise or cannot read: every reader's verdict on
    each thing its steps do (the tables every reader reads as before need none: the steps say so by not being
    blocked)."""
    verdicts: dict[str, list[ReaderVerdict]] = {}
    for step in plan.steps:
        verdicts.setdefault(step.object, []).extend(step.readers)
    lines = []
    for key, found in sorted(verdicts.items()):
        if all(v.same for v in found):
            continue
        lines += ["", f"Readers of {_key(key)}:", "", "| reader | change | verdict |", "|---|---|---|"]
        lines += [f"| {_cell(v.reader)} | {_cell(v.what)} | {'' if v.same else '⚠ '}{_cell(describe(v.verdict))} |"
                  for v in dict.fromkeys(found)]
    return lines


def _graph(plan: Plan, reads: Mapping[str, tuple[str, ...]]) -> list[str]:
    """The tables (boxes) and views (rounded) the plan touches, each view linked to what it reads."""
    steps: dict[str, list[Step]] = {}
    for step in plan.steps:
        if step.object_type not in (ObjectType.DATABASE, ObjectType.SETTINGS):
            steps.setdefault(step.object, []).append(step)
    if not steps:
        return []
    keys = sorted(steps)
    ids = {key: f"n{number}" for number, key in enumerate(keys, 1)}
    lines = ["", "```mermaid", "graph LR"]
    states: dict[str, list[str]] = {}
    for key in keys:
        state = _state(steps[key])
        blocked = any(step.blocked for step in steps[key])
        label = _mermaid_text(f"{key} ({state}, blocked)" if blocked else f"{key} ({state})")
        shape = '("{}")' if steps[key][0].object_type == ObjectType.VIEW else '["{}"]'
        lines.append(f"  {ids[key]}{shape.format(label)}")
        states.setdefault("blocked" if blocked else state, []).append(ids[key])
    lines += [f"  {ids[view]} -->|reads| {ids[read]}"
              for view in keys for read in sorted(reads.get(view, ())) if read in ids]
    for state, style in _STATES.items():
        if state in states:
            name = state.replace("-", "")
            lines += [f"  classDef {name} {style}", f"  class {','.join(states[state])} {name}"]
    return lines + ["```"]


def _state(steps: list[Step]) -> str:
    """What happens to one object, in a word: created, dropped, re-created or changed."""
    effects = {step.effect for step in steps}
    created, dropped = Effect.CREATE in effects, Effect.DROP in effects
    if (created and dropped) or any(step.kind == StepKind.REPLACE_VIEW for step in steps):
        return "re-created"
    return "created" if created else "dropped" if dropped else "changed"


def _statements(plan: Plan) -> list[str]:
    """What each step runs, as the text plan shows it: a re-created view's SQL as a diff, bookkeeping left out."""
    sql = []
    for number, (step, lines) in enumerate(zip(plan.steps, statements_of(plan), strict=True), 1):
        sql.append(f"-- {number}. {one_line(step.summary)}")
        sql += lines
    # A fence longer than any run of backticks in the statements, which quote names with them.
    fence = "`" * max([3] + [len(run) + 1 for run in re.findall(r"`+", "\n".join(sql))])
    return ["", f"<details><summary>Statements ({plural(len(plan.steps), 'step')})</summary>", "",
            fence + "sql", *sql, fence, "", "</details>"]


def _escape(text: str) -> str:
    """Text shown as itself in GitHub Markdown, inside a table cell too (one line, no active characters):
    a backslash before each character Markdown gives a meaning, and before the ``:`` of ``http://``,
    ``https://`` and ``ftp://`` and the ``.`` of ``www.`` (GitHub links those by themselves); a
    zero-width space after each ``@`` (GitHub links e-mail addresses and notifies the people it
    mentions); every line break, CR too, a ``<br>``."""
    escaped = _MARKDOWN_SPECIAL.sub(r"\\\1", text)
    escaped = _AUTOLINK.sub(lambda found: found.group()[:-1] + "\\" + found.group()[-1], escaped)
    return _LINE_BREAK.sub("<br>", escaped.replace("@", "@&#8203;"))


def _cell(text: str) -> str:
    """Text from a plan in a table cell: one line, each hostile character as its escape, nothing active."""
    return _escape(one_line(text))


def _key(key: str) -> str:
    """An object's key in a table cell: in a code span when it holds only plain characters, else escaped text."""
    return f"`{key}`" if _PLAIN.fullmatch(key) else _escape(key)


def _mermaid_text(text: str) -> str:
    """Text in a Mermaid label, each character but the plain ones as Mermaid's entity code (``#34;`` for ``"``)."""
    return "".join(c if _PLAIN.fullmatch(c) else f"#{ord(c)};" for c in text)


def _lines(lines: list[str]) -> str:
    return "\n".join(lines) + "\n"
