"""Views checked against everything declared: what each reads, in which order, and what it outputs.

Each view's SQL is parsed for the objects it reads; views are then analysed in dependency order,
so a view over another view sees that view's output columns. Tables and sources (tables that
schemaflow does not manage, declared with their columns) are read alike; an object no file declares
is unknown, and the message says how to declare one that schemaflow is not to manage. A view that
reads an object which is itself broken (or in a cycle) is skipped rather than reported again: the
root cause already is.
A view that derives its partitions from a base table must read it, and the table must be a managed
one, partitioned on the view's partition columns and on those ``complete_when`` names.
A view may not name what it reads by a value (``IDENTIFIER(...)``: it could not be reviewed, ordered
or invalidated), nor call a Java method by name (``reflect``: it runs in every engine that reads
the view) unless its file says it may, with ``java_functions``.
Errors inside SQL are placed at their line and column in the YAML file.
"""
from __future__ import annotations

from dataclasses import replace
from collections.abc import Collection, Mapping, Sequence

from schemaflow.errors import Problem
from schemaflow.graph import CycleError, topological_order
from schemaflow.model import Column, Table, View, column_type
from schemaflow.spec.yamlpos import Document
from schemaflow.sql.function_calls import function_calls
from schemaflow.sql.spark_functions import JAVA_FUNCTIONS
from schemaflow.sql.views import (DYNAMIC_NAME, ViewAnalysis, ViewSqlError, analysis_key, analyze_view, known_analysis,
                                  learn_analysis, tables_read)
from schemaflow.wording import plural
from schemaflow.workers import halves

# Views read no column types from the metastore here; any type lets downstream SQL resolve.
_VIEW_COLUMN_TYPE = "string"
# From this many views that read tables alone, half of them are checked in a fork of this process (about 1 ms
# each, against some tens of milliseconds for the fork to start and send its views back).
VIEWS_SHARED_FROM = 200
# Added to the error for an object no file declares: another team's table is declared as a source.
_UNDECLARED = (": declare it in schemas/, as a source if schemaflow is not to manage it "
               "('source: db.name' with its columns)")


def analyze_views(
    objects: Mapping[str, Table | View], sources: Mapping[str, Table], docs: Mapping[str, Document],
    broken: Collection[str],
) -> tuple[dict[str, View], list[Problem]]:
    """The declared views with their ``reads``, ``uses``, ``lineage`` and output ``columns`` filled in, and the problems.

    ``objects`` are the valid declarations of tables and views by ``db.name``, ``sources`` those of
    sources, ``docs`` the file of each declaration, ``broken`` the names of declarations that have
    problems of their own.
    """
    problems: list[Problem] = []
    skipped = set(broken)
    views = {key: obj for key, obj in objects.items() if isinstance(obj, View)}
    reads: dict[str, tuple[str, ...]] = {}
    for key, view in sorted(views.items()):
        try:
            reads[key] = tables_read(view.sql, view.database)
        except ViewSqlError as error:
            problems.append(_sql_problem(docs[key], error))
            skipped.add(key)
            continue
        reaching = _reaching_problems(view, docs[key])
        if reaching:
            problems.extend(reaching)
            skipped.add(key)
    tables = {key: obj for key, obj in objects.items() if isinstance(obj, Table)}
    schema = {key: [(c.name, column_type(c)) for c in table.all_columns]
              for key, table in {**tables, **sources}.items()}
    order = _dependency_order(reads, docs, problems, skipped)

    def checked(key: str) -> tuple[View, list[Problem]]:
        view, view_problems = _analyze(views[key], docs[key], schema, reads[key])
        return view, view_problems or _derivation_problems(view, docs[key], tables, sources)

    # The views that read no view need the tables' columns alone: they are checked in any order, so a large
    # project's in two processes (``workers.halves``); the others after what they read, as their columns come.
    not_tables = skipped | views.keys()
    over_tables = [key for key in order if not not_tables.intersection(reads[key])]
    analyses = {key: analysis_key(views[key].sql, views[key].database, schema) for key in over_tables}

    def checked_here(keys: Sequence[str]) -> list[tuple[tuple[View, list[Problem]], ViewAnalysis | None]]:
        return [(checked(key), known_analysis(analyses[key])) for key in keys]  # the analysis made, to be known here
    # A second tree's views (``plan --base``) are mostly analysed already: a fork pays only for those that are not.
    new = sum(1 for key in over_tables if known_analysis(analyses[key]) is None)
    shared = halves(checked_here, over_tables, VIEWS_SHARED_FROM) if new >= VIEWS_SHARED_FROM else [
        checked_here(over_tables)]
    for key, (_, analysis) in zip(over_tables[len(shared[0]):], shared[-1] if len(shared) > 1 else [], strict=True):
        if analysis is not None:
            learn_analysis(analyses[key], analysis)
    early = dict(zip(over_tables, [found for half in shared for found, _ in half], strict=True))
    analysed: dict[str, View] = {}
    for key in order:
        if skipped.intersection(reads[key]):
            skipped.add(key)
            continue
        view, view_problems = early[key] if key in early else checked(key)
        problems.extend(view_problems)
        if view_problems:
            skipped.add(key)
            continue
        schema[key] = [(c.name, _VIEW_COLUMN_TYPE) for c in view.columns]
        analysed[key] = view
    return analysed, problems


def _reaching_problems(view: View, doc: Document) -> list[Problem]:
    """Each call in the view's SQL that reaches past what it reads: a dynamic name, or an undeclared Java call."""
    problems = []
    for call in function_calls(view.sql):
        name, line, col = call.name, call.line, call.col
        if name not in JAVA_FUNCTIONS | {DYNAMIC_NAME}:
            continue  # a function Spark looks up in the metastore, or a script, is code for the plan to show
        if name == DYNAMIC_NAME:
            message = ("IDENTIFIER(...) names what the view reads by a value, known only when the view is read: "
                       "schemaflow could not show, order or invalidate it; write the name itself")
        elif name in ((doc.data or {}).get("java_functions") or ()):  # the file's data, read only for such a call
            continue
        else:
            message = (f"{name}(...) calls a Java method by name in every engine that reads this view (reflect("
                       "'java.lang.System', 'getenv', ...) returns its environment): remove it, or, if it is meant, "
                       f"declare it in the view's file with 'java_functions: [{name}]'")
        problems.append(Problem(doc.within(("sql",), line, col), message))
    return problems


def _dependency_order(
    reads: Mapping[str, tuple[str, ...]], docs: Mapping[str, Document], problems: list[Problem], skipped: set[str]
) -> list[str]:
    """Views after the views they read; each cycle found is reported and its views left out."""
    deps = dict(reads)
    while True:
        try:
            return topological_order(deps)
        except CycleError as error:
            for key in sorted(set(error.cycle)):
                problems.append(Problem(docs[key].key("sql"), f"view cycle: {error}"))
                skipped.add(key)
                del deps[key]


def _analyze(view: View, doc: Document, schema: Mapping[str, list[tuple[str, str]]],
             reads: tuple[str, ...]) -> tuple[View, list[Problem]]:
    """One view checked against the columns of what it reads, with its output columns named."""
    try:
        analysis = analyze_view(view.sql, view.database, schema)
    except ViewSqlError as error:
        # analyze_view looks up every object read first: if one is not declared, that is what it reports.
        return view, [_sql_problem(doc, error, "" if schema.keys() >= set(reads) else _UNDECLARED)]
    columns = view.columns or tuple(Column(name) for name in analysis.output)
    if len(columns) != len(analysis.output):
        output = ", ".join(analysis.output)
        message = f"columns names {plural(len(columns), 'column')} but the SQL outputs {len(analysis.output)}: {output}"
        return view, [Problem(doc.key("columns"), message)]
    problems = _partition_problems(view, tuple(c.name for c in columns), doc)
    lineage = dict(zip((c.name for c in columns), analysis.lineage.values(), strict=True))
    return replace(view, columns=columns, reads=analysis.reads, uses=analysis.uses, lineage=lineage,
                   output=analysis.output, stars=analysis.stars), problems


def _partition_problems(view: View, names: tuple[str, ...], doc: Document) -> list[Problem]:
    """Hive's rules for PARTITIONED ON: the view's last columns, in order, and not all of them."""
    unknown = [
        Problem(doc.at("partitioned_on", i), f"'{name}' is not a column of the view (columns: {', '.join(names)})")
        for i, name in enumerate(view.partitioned_on)
        if name not in names
    ]
    if unknown or not view.partitioned_on:
        return unknown
    count = len(view.partitioned_on)
    if names[-count:] != view.partitioned_on:
        last = ", ".join(names[-count:])
        message = f"partitioned_on must name the view's last {count} column(s) in order, here: {last}"
        message += " (Hive error 10093)"
    elif count >= len(names):
        message = "at least one view column must stay out of partitioned_on (Hive error 10092)"
    else:
        return []
    return [Problem(doc.key("partitioned_on"), message)]


def _derivation_problems(view: View, doc: Document, tables: Mapping[str, Table],
                         sources: Mapping[str, Table]) -> list[Problem]:
    """Whether the table a view derives its partitions from can feed them: read by the view, managed,
    partitioned on each of the view's partition columns and on each column of ``complete_when``."""
    rule = view.partitions
    if rule is None or rule.derive_from is None:
        return []
    base = rule.derive_from
    keys = [c.name for c in tables[base].partition_columns] if base in tables else []
    listed = ", ".join(keys) or "none"
    if base not in view.reads:
        message = f"derive_from names {base}, which the view does not read (it reads: {', '.join(view.reads) or 'nothing'})"
    elif base in sources:
        # The plan lists partitions of the live tables it manages only.
        message = (f"derive_from names {base}, a source: schemaflow does not read the partitions of tables it does "
                   "not manage; list the view's partitions instead")
    elif base not in tables:
        message = f"derive_from names {base}, a view: view partitions derive from a table's partitions"
    elif missing := [c for c in view.partitioned_on if c not in keys]:
        message = (f"{base} is not partitioned on {', '.join(missing)} (its partition columns: {listed}); view "
                   "partitions match base partitions by name")
    elif all(column in keys for column in rule.complete_when):
        return []
    else:  # placed at each name as the file writes it (the rule holds them in lower case)
        return [
            Problem(doc.key("partitions", "complete_when", written),
                    f"complete_when names '{written}', which is not a partition column of {base} "
                    f"(its partition columns: {listed})")
            for written in doc.data["partitions"].get("complete_when", {})
            if written.lower() not in keys
        ]
    return [Problem(doc.at("partitions", "derive_from"), message)]


def _sql_problem(doc: Document, error: ViewSqlError, advice: str = "") -> Problem:
    return Problem(doc.within(("sql",), error.line, error.col), error.message + advice)
