"""Every plan converges: random desired states and evolutions, applied to the real metastore.

Hypothesis draws a table (column names, every kind of type, hostile comments, properties written
the way YAML 1.1 would coerce, partition columns, and its storage: a named format, text with Hive's
delimiters, a SerDe the model knows with its properties, Avro by its classes, or a Spark data source
with its options) and an evolution of it (columns appended, comments, properties and the storage's
settings changed), writes them as schema files, and plans and applies each
against the shared metastore. After each apply the plan must be empty and the metastore must hold
what the files say, read back from it. A second test draws a chain of views over a table (each
reading the one before, by ``*`` or by a list) and renames or drops a column of the table under
each invalidation mode: nothing fails half-way, and at most two plans later nothing is left to do.
Inputs that ``validate`` refuses are discarded: the bad-input
corpus covers those. In CI it runs a fixed, bounded set of examples; set
``SCHEMAFLOW_CONVERGENCE_EXAMPLES`` to run more (and ``SCHEMAFLOW_CONVERGENCE_SEED`` for other ones).
"""
from __future__ import annotations

import itertools
import os
from dataclasses import dataclass, replace
from pathlib import Path
from collections.abc import Callable

import pytest
import yaml
from hypothesis import HealthCheck, assume, given, seed, settings
from hypothesis import strategies as st

from schemaflow.apply.executor import apply_plan
from schemaflow.errors import SpecError
from schemaflow.model import Table
from schemaflow.output_safety import HOSTILE_IN_VALUES
from schemaflow.project import load_project
from schemaflow.sql.types import nests_char_or_varchar
from schemaflow.workflow import desired_state, hash_migrations
from tests.projects import plan, plan_and_apply, write_project

pytestmark = pytest.mark.spark

EXAMPLES = int(os.environ.get("SCHEMAFLOW_CONVERGENCE_EXAMPLES", "12"))
SEED = int(os.environ.get("SCHEMAFLOW_CONVERGENCE_SEED", "20261123"))
_examples = itertools.count(1)

PRIMITIVES = ["tinyint", "smallint", "int", "bigint", "float", "double", "boolean", "string", "binary", "date",
              "timestamp", "decimal(10,2)", "decimal(38,38)", "decimal(1,0)", "varchar(1)", "varchar(65535)",
              "char(1)", "char(255)"]
FORMATS = ["parquet", "orc", "avro", "textfile", "sequencefile", "rcfile"]
# Types every storage below holds, for those that hold fewer than Hive's formats.
FLAT = ["int", "bigint", "double", "boolean", "string", "date", "timestamp", "decimal(10,2)"]
AVRO_CLASSES = {"serde": "org.apache.hadoop.hive.serde2.avro.AvroSerDe",
                "input_format": "org.apache.hadoop.hive.ql.io.avro.AvroContainerInputFormat",
                "output_format": "org.apache.hadoop.hive.ql.io.avro.AvroContainerOutputFormat"}
OPEN_CSV = "org.apache.hadoop.hive.serde2.OpenCSVSerde"
REGEX = "org.apache.hadoop.hive.serde2.RegexSerDe"
DELIMITERS = [",", "|", ";", "\t", "\x01", "\x02", "#"]
# Each data source's options, with values that change how rows read and values that do not.
OPTIONS = {
    "csv": {"sep": [",", "|", ";"], "header": ["true", "false"], "quote": ["\"", "'"], "escape": ["\\"],
            "nullValue": ["NA", ""], "dateFormat": ["yyyy-MM-dd", "dd/MM/yyyy"]},
    "json": {"multiLine": ["true", "false"], "allowComments": ["true"], "dateFormat": ["yyyy-MM-dd"]},
    "parquet": {"mergeSchema": ["true", "false"], "compression": ["snappy", "zstd", "gzip"]},
    "orc": {"mergeSchema": ["true"], "compression": ["zlib", "snappy"]},
    "text": {"lineSep": [";", "\n"], "wholetext": ["false"]},
}
# Property values as YAML 1.1 would read them unquoted (a bool, an octal, a float...): stored as written.
COERCIBLE = ["NO", "yes", "on", "1.10", "030", "1_000", "0x1F", "1e3", "2024-01-01", "~x", "12:30", ".inf"]
HOSTILE = ["${env:HOME}", "${claim}", "${applied_at}", "${live_state}", "'; DROP TABLE x; --", "*/", "`",
           "\\", "\"", "line\nbreak", "emoji \U0001F600", "tab\there", "ünïcödé", "nul\x00byte", "cr\rlf", " padded "]

names = st.from_regex(r"[a-z][a-z0-9_]{0,11}", fullmatch=True)
texts = st.one_of(st.sampled_from(HOSTILE),
                  # What validate accepts: no character that could forge a review (output_safety).
                  st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=30)
                  .filter(lambda text: not HOSTILE_IN_VALUES.search(text)),
                  st.lists(st.sampled_from(HOSTILE), min_size=2, max_size=4).map(" ".join))


def types(depth: int = 2) -> st.SearchStrategy[str]:
    primitive = st.sampled_from(PRIMITIVES)
    if depth == 0:
        return primitive
    inner = types(depth - 1)
    fields = st.lists(st.tuples(names, inner), min_size=1, max_size=3, unique_by=lambda f: f[0])
    return st.one_of(primitive, inner.map(lambda t: f"array<{t}>"),
                     inner.map(lambda t: f"map<string,{t}>"),
                     fields.map(lambda fs: "struct<" + ",".join(f"{n}:{t}" for n, t in fs) + ">"))


@dataclass(frozen=True)
class Shape:
    """A table as drawn: what its schema file says."""

    columns: tuple[tuple[str, str, str | None], ...]   # name, type, comment
    partitions: tuple[tuple[str, str], ...]             # name, primitive type
    comment: str | None
    format: str
    properties: tuple[tuple[str, str], ...]             # key, value written plain (unquoted) if coercible
    # How the storage is declared beyond a named format: "format" (none), "row_format", "open_csv",
    # "regex", "avro_classes", or a data source's name; and its settings, key and value.
    storage: str = "format"
    settings: tuple[tuple[str, str], ...] = ()

    def yaml(self, key: str) -> str:
        data: dict = {"table": key, **self._stored(),
                      "columns": [{"name": n, "type": t, **({"comment": c} if c is not None else {})}
                                  for n, t, c in self.columns]}
        if self.comment is not None:
            data["comment"] = self.comment
        if self.partitions:
            data["partitioned_by"] = [{"name": n, "type": t} for n, t in self.partitions]
        text = yaml.safe_dump(data, allow_unicode=True, sort_keys=False)
        if self.properties:  # written by hand: YAML would quote the coercible values, which is the point
            text += "properties:\n" + "".join(f"  {k}: {v if v in COERCIBLE else json_quoted(v)}\n"
                                              for k, v in self.properties)
        return text

    def _stored(self) -> dict:
        """The file's storage keys."""
        settings = dict(self.settings)
        match self.storage:
            case "format":
                return {"format": self.format}
            case "row_format":
                return {"format": "textfile", "row_format": settings}
            case "open_csv":
                return {"format": "textfile", "serde": OPEN_CSV, "serde_properties": settings}
            case "regex":  # a capturing group per column, as RegexSerDe reads a row
                separator = settings.pop("separator")
                regex = separator.join(["([^" + separator + "]*)"] * len(self.columns))
                return {"format": "textfile", "serde": REGEX, "serde_properties": {"input.regex": regex, **settings}}
            case "avro_classes":
                return {**AVRO_CLASSES, **({"serde_properties": settings} if settings else {})}
            case provider:
                return {"using": provider, **({"options": settings} if settings else {})}


def json_quoted(value: str) -> str:
    import json

    return json.dumps(value, ensure_ascii=False)


STORAGES = ["format", "row_format", "open_csv", "regex", "avro_classes", *OPTIONS]


def settings_of(draw: Callable, storage: str) -> tuple[tuple[str, str], ...]:
    """Settings a storage of this kind may have, drawn anew for each commit."""
    match storage:
        case "format":
            return ()
        case "row_format":
            keys = ["fields_terminated_by", "collection_items_terminated_by", "map_keys_terminated_by"]
            chosen = draw(st.lists(st.sampled_from(keys), unique=True))
            picked = draw(st.lists(st.sampled_from(DELIMITERS), min_size=len(chosen), max_size=len(chosen),
                                   unique=True))
            extra = draw(st.sampled_from([{}, {"null_defined_as": "NULL"}, {"escaped_by": "\\"}]))
            return tuple(sorted({**dict(zip(chosen, picked, strict=False)), **extra}.items()))
        case "open_csv":
            return tuple(sorted(draw(st.dictionaries(st.sampled_from(["separatorChar", "quoteChar", "escapeChar"]),
                                                     st.sampled_from([",", ";", "|", "'"]))).items()))
        case "regex":
            return (("separator", draw(st.sampled_from([" ", ",", ";"]))),
                    *(draw(st.sampled_from([(), (("input.regex.case.insensitive", "true"),)]))))
        case "avro_classes":
            return ()
        case provider:
            options = OPTIONS[provider]
            keys = draw(st.lists(st.sampled_from(sorted(options)), unique=True))
            return tuple((key, draw(st.sampled_from(options[key]))) for key in sorted(keys))


def column_types(storage: str) -> st.SearchStrategy[str]:
    """The types a storage holds: Hive's formats all, others fewer (validate refuses the rest)."""
    match storage:
        case "open_csv" | "regex" | "text":
            return st.just("string")
        case "csv" | "avro_classes":
            return st.sampled_from(FLAT)
        case _:
            return types()


@st.composite
def shapes(draw: Callable) -> Shape:
    storage = draw(st.sampled_from(STORAGES))
    # Spark's text data source holds one column: validate refuses more, and the plan any appended.
    column_names = draw(st.lists(names, min_size=1, max_size=1 if storage == "text" else 5, unique=True))
    partition_names = draw(st.lists(names.filter(lambda n: n not in column_names), max_size=2, unique=True))
    return Shape(
        columns=tuple((n, draw(column_types(storage)), draw(st.none() | texts)) for n in column_names),
        partitions=tuple((n, draw(st.sampled_from(["string", "int", "date", "bigint"]))) for n in partition_names),
        comment=draw(st.none() | texts),
        format=draw(st.sampled_from(FORMATS)),
        properties=tuple(draw(st.dictionaries(names.map(lambda n: f"p_{n}"), st.sampled_from(COERCIBLE) | texts,
                                              max_size=3)).items()),
        storage=storage,
        settings=settings_of(draw, storage),
    )


@st.composite
def evolutions(draw: Callable, before: Shape) -> Shape:
    """What a later commit says of the same table: appended columns, other comments, properties and
    storage settings."""
    taken = {n for n, _, _ in before.columns} | {n for n, _ in before.partitions}
    added = draw(st.lists(names.filter(lambda n: n not in taken), max_size=0 if before.storage == "text" else 2,
                          unique=True))
    # Spark cannot comment a data-source column whose type nests char or varchar: the plan blocks it.
    fixed = before.storage in OPTIONS
    columns = tuple((n, t, draw(st.none() | texts) if draw(st.booleans()) and not (fixed and nests_char_or_varchar(t))
                     else c) for n, t, c in before.columns)
    return replace(before,
                   columns=columns + tuple((n, draw(column_types(before.storage)), draw(st.none() | texts))
                                           for n in added),
                   comment=draw(st.none() | texts) if draw(st.booleans()) else before.comment,
                   properties=tuple(draw(st.dictionaries(names.map(lambda n: f"p_{n}"),
                                                         st.sampled_from(COERCIBLE) | texts, max_size=3)).items()),
                   settings=settings_of(draw, before.storage) if draw(st.booleans()) else before.settings)


@given(data=st.data())
@seed(SEED)
@settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=False,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.filter_too_much])
def test_random_tables_and_evolutions_converge(data, tmp_path: Path, metastore, spark):
    db = f"conv{next(_examples)}"
    root = tmp_path / db
    first = data.draw(shapes(), label="first")
    second = data.draw(evolutions(first), label="second")
    try:
        for shape in (first, second):
            project = _project(root, db, shape)
            plan_and_apply(project, metastore)
            assert plan(project, metastore).is_empty, f"not converged:\n{shape.yaml(f'{db}.t')}"
            want = desired_state(project).get(f"{db}.t")
            have = metastore.read((db,)).get(f"{db}.t")
            assert isinstance(have, Table) and have == want, f"read back differs:\n{have}\n{want}"
            assert dict(have.properties) == dict(shape.properties)  # every value as written in the file
    finally:
        spark.sql(f"DROP DATABASE IF EXISTS {db} CASCADE")


def _project(root: Path, db: str, shape: Shape):
    path = root / "schemas" / db / "t.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(shape.yaml(f"{db}.t"))
    project = load_project(root, env={})
    try:
        desired_state(project)
    except SpecError:
        assume(False)  # refused at validate with a located message: the bad-input corpus's concern
    return project


# Every storage the model knows, as a file declares it in three commits: each later commit changes its
# settings (a delimiter, a SerDe property, an option) beside a column, comments and a property.
STORED = {
    **{f"format {name}": [f"format: {name}\n"] * 3 for name in FORMATS},
    "delimited text": [f"format: textfile\nrow_format: {{fields_terminated_by: '{d}', collection_items_terminated_by: "
                       f"'{c}'}}\n" for d, c in (("|", ","), (",", ";"), ("#", ";"))],
    "delimited as SERDEPROPERTIES": [f"format: textfile\nserde_properties: {{field.delim: '{d}'}}\n"
                                     for d in ("|", ",", "#")],
    "OpenCSVSerde": [f"format: textfile\nserde: {OPEN_CSV}\nserde_properties: {{{p}}}\n"
                     for p in ("separatorChar: ';'", "separatorChar: ',', quoteChar: \"'\"", "escapeChar: '|'")],
    "RegexSerDe": [f"format: textfile\nserde: {REGEX}\nserde_properties: {{input.regex: '{r}'}}\n"
                   for r in ("(\\S*) (\\S*)", "(\\S*),(\\S*)", "(\\S*);(\\S*);(\\S*)")],
    "ColumnarSerDe": [f"format: rcfile\nserde: org.apache.hadoop.hive.serde2.columnar.ColumnarSerDe\n"
                      f"serde_properties: {{{p}}}\n" for p in ("field.delim: ','", "field.delim: '|'",
                                                                 "serialization.null.format: 'N'")],
    "LazyBinarySerDe": [f"format: sequencefile\nserde: org.apache.hadoop.hive.serde2.lazybinary.LazyBinarySerDe\n{p}"
                        for p in ("", "serde_properties: {note: binary}\n", "")],
    "Avro by its classes": ["".join(f"{k}: {v}\n" for k, v in AVRO_CLASSES.items()) + p
                            for p in ("", "serde_properties: {avro.output.codec: snappy}\n", "")],
    **{f"using {provider}": [f"using: {provider}\noptions: {{{key}: '{values[i % len(values)]}'}}\n"
                             for i, (key, values) in enumerate(list(options.items())[:3] * 3)][:3]
       for provider, options in OPTIONS.items() if provider != "text"},
}
COMMITS = [
    "columns: [{name: a, type: string}, {name: b, type: string}]\n",
    "comment: Second\nproperties: {team: data}\ncolumns: [{name: a, type: string, comment: A}, {name: b, type: string}]\n",
    "comment: Third\ncolumns: [{name: a, type: string}, {name: b, type: string, comment: B}, "
    "{name: c, type: string, comment: C}]\n",
]


@pytest.mark.parametrize("kind", sorted(STORED))
def test_every_storage_converges_through_changes_of_its_settings_columns_and_comments(kind, tmp_path, metastore,
                                                                                      fresh_db):
    db = fresh_db()
    key = f"{db}.t"
    for commit, (stored, columns) in enumerate(zip(STORED[kind], COMMITS, strict=True), start=1):
        project = write_project(tmp_path, {f"schemas/{db}/t.yaml": f"table: {key}\n{stored}{columns}"})
        plan_and_apply(project, metastore)
        again = plan(project, metastore)
        assert again.is_empty, f"commit {commit} of {kind}:\n{stored}{columns}plans {[s.summary for s in again.steps]}"
        assert metastore.read((db,)).get(key) == desired_state(project).get(key), f"commit {commit} of {kind}"


# --- view chains: a column renamed or dropped under each invalidation mode -------------------------

@dataclass(frozen=True)
class Chain:
    """A table and views over it, each reading the one before: ``*`` or a list of its columns."""

    columns: tuple[str, ...]
    views: tuple[tuple[str, ...] | None, ...]  # a view's select list; None: *

    def outputs(self) -> list[tuple[str, ...]]:
        """What each view outputs, in order."""
        found, before = [], self.columns
        for listed in self.views:
            before = before if listed is None else listed
            found.append(before)
        return found

    def files(self, db: str, mode: str) -> dict[str, str]:
        files = {"schemaflow.yaml": f"databases: [{db}]\ninvalidation: {mode}\n",
                 f"schemas/{db}/t.yaml": f"table: {db}.t\ncolumns:\n" + "".join(f"  - {{name: {c}, type: int}}\n"
                                                                         for c in self.columns)}
        for i, listed in enumerate(self.views):
            read = "t" if i == 0 else f"v{i - 1}"
            files[f"schemas/{db}/v{i}.yaml"] = (f"view: {db}.v{i}\n"
                                                f"sql: SELECT {'*' if listed is None else ', '.join(listed)} FROM {read}\n")
        return files


@st.composite
def chains(draw: Callable) -> Chain:
    columns = tuple(draw(st.lists(names.map(lambda n: f"c_{n}"), min_size=2, max_size=4, unique=True)))
    views: list[tuple[str, ...] | None] = []
    available = columns
    for _ in range(draw(st.integers(1, 3))):
        listed = draw(st.none() | st.lists(st.sampled_from(available), min_size=1, unique=True).map(tuple))
        views.append(listed)
        available = available if listed is None else listed
    return Chain(columns, tuple(views))


def changed(chain: Chain, column: str, renamed: str | None) -> Chain:
    """The chain after ``column`` is renamed (or dropped: None), each list naming it changed to match,
    as validate requires; a list left empty names the table's first other column instead."""
    columns = tuple(renamed if c == column else c for c in chain.columns if c != column or renamed)
    views: list[tuple[str, ...] | None] = []
    available = columns
    for listed in chain.views:
        if listed is not None:
            listed = tuple(renamed if c == column else c for c in listed if c != column or renamed) or available[:1]
        views.append(listed)
        available = available if listed is None else listed
    return Chain(columns, tuple(views))


@given(data=st.data())
@seed(SEED)
@settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=False,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
def test_view_chains_converge_in_every_invalidation_mode(data, tmp_path: Path, metastore, spark):
    """A rename or a drop under views: strict blocks it (nothing applied) or applies it; lenient and
    cascade apply it without failing half-way; a plan after that (lenient re-creates what it left)
    and then nothing is left to do, and every view reads its declared columns."""
    db = f"chain{next(_examples)}"
    root = tmp_path / db
    mode = data.draw(st.sampled_from(["strict", "lenient", "cascade"]), label="mode")
    before = data.draw(chains(), label="before")
    column = data.draw(st.sampled_from(before.columns), label="column")
    renamed = data.draw(st.none() | names.map(lambda n: f"r_{n}").filter(lambda n: n not in before.columns),
                        label="renamed")
    after = changed(before, column, renamed)
    change = (f"rename_column: {{table: {db}.t, from: {column}, to: {renamed}}}" if renamed
              else f"drop_column: {{table: {db}.t, column: {column}}}")
    try:
        plan_and_apply(write_project(root, before.files(db, mode)), metastore)
        head = write_project(root, {**after.files(db, mode),
                                    "migrations/0001_change.yaml": f"description: the change\nchanges:\n  - {change}\n"})
        hash_migrations(head)
        head = load_project(root, env={})
        first = plan(head, metastore, allow_destructive=True)  # a rename in Parquet files is allowed as a drop is
        if first.blocked:
            assert mode == "strict", [s.blocked for s in first.blocked]
            return
        apply_plan(first, metastore)  # never fails half-way: raises if a step fails
        for _ in range(2):  # lenient re-creates the views it left broken once nothing breaks them
            again = plan(head, metastore)
            if again.is_empty:
                break
            apply_plan(again, metastore)
        assert plan(head, metastore).is_empty
        for i, outputs in enumerate(after.outputs()):
            assert spark.sql(f"SELECT * FROM {db}.v{i}").columns == list(outputs), (mode, before, after)
    finally:
        spark.sql(f"DROP DATABASE IF EXISTS {db} CASCADE")
