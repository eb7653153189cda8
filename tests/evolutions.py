"""Evolutions of a project as teams make them, drawn from a seed: a pure generator, no I/O.

A project is one database of several tables of mixed kinds (Hive formats, Spark data sources, Iceberg), each with
an ``id`` column first, and views that select some of a table's columns. An evolution is one commit: a few edits
across the tables (columns appended, renamed, dropped, reordered or retyped; a table or a view added, a view
dropped), the schema files they change, and one migration file stating every rename, drop and reorder of the
commit, whichever tables they touch. Retypes are to a type that holds every value the column held, as its
text (``CAST(c AS STRING)``), so that a reader can check each value followed its column through renames, retypes and
rewrites; Iceberg's retypes are its promotions. Hive tables of formats that find columns by name declare
``rewrite: when_values_hide``, as a team that keeps its values does: their renames and retypes are rewrites.

``history(seed, ...)`` gives the first state and the evolutions after it, the same for the same seed.
"""
from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace

from schemaflow.spec.migrations import MIGRATIONS_DIR, SUM_FILE, sum_text

KINDS = {
    "hive_parquet": "format: parquet\nrewrite: when_values_hide\n",
    "hive_orc": "format: orc\nrewrite: when_values_hide\n",
    "hive_avro": "format: avro\nrewrite: when_values_hide\n",
    "hive_textfile": "format: textfile\n",
    "source_parquet": "using: parquet\n",
    "source_orc": "using: orc\n",
    "source_csv": "using: csv\n",
    "source_json": "using: json\n",
    "iceberg": "format: iceberg\n",
}
PRIMITIVE = ["int", "bigint", "smallint", "string", "varchar(10)", "decimal(10,2)", "date", "double", "boolean"]
NESTED = ["array<int>", "struct<a:int>", "map<string,int>"]
# Each type to the types a column of it may become, its values' text unchanged.
RETYPES = {
    "smallint": ["int", "bigint"], "int": ["bigint", "string"], "bigint": ["string"], "varchar(10)": ["string"],
    "decimal(10,2)": ["decimal(12,2)", "string"], "decimal(12,2)": ["string"], "date": ["string"],
    "array<int>": ["array<bigint>"], "struct<a:int>": ["struct<a:bigint>"], "map<string,int>": ["map<string,bigint>"],
}
# Iceberg's promotions among them: a wider integer or decimal, alone or as a nested part.
PROMOTIONS = {("smallint", "int"), ("smallint", "bigint"), ("int", "bigint"), ("decimal(10,2)", "decimal(12,2)"),
              ("array<int>", "array<bigint>"), ("struct<a:int>", "struct<a:bigint>"),
              ("map<string,int>", "map<string,bigint>")}
ROWS = (1, 2, 3)  # the ids of the rows a table is given when it is created


def holds(kind: str, type_: str) -> bool:
    """Whether a table of ``kind`` holds a column of ``type_`` (validate refuses the rest)."""
    if kind == "source_csv":
        return "<" not in type_
    if kind in ("hive_avro", "iceberg"):
        return "smallint" not in type_ and "varchar" not in type_
    return True


def retypes(kind: str, type_: str) -> list[str]:
    """The types a column of ``type_`` in a table of ``kind`` may become."""
    return [new for new in RETYPES.get(type_, []) if holds(kind, new)
            and (kind != "iceberg" or (type_, new) in PROMOTIONS)]


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    origin: str  # the type it was created with: its values' text (``value_text``) follows from it

    def value(self, row: int) -> str:
        """The SQL of its value in row ``row``, as the table is given it when created."""
        return f"CAST({literal(self.origin, row)} AS {self.type})"


def literal(type_: str, row: int) -> str:
    """The SQL of the value a column created as ``type_`` holds in row ``row``."""
    return _value(type_, row)[0]


def value_text(origin: str, row: int) -> str:
    """The text Spark gives a value of ``origin`` in row ``row`` (``CAST(c AS STRING)``), whatever it became."""
    return _value(origin, row)[1]


def _value(type_: str, row: int) -> tuple[str, str]:
    """The value a column created as ``type_`` holds in row ``row``: its SQL, and its text."""
    match type_.split("(")[0].split("<")[0]:
        case "smallint" | "int" | "bigint":
            return str(row * 7), str(row * 7)
        case "string" | "varchar":
            return f"'s{row}'", f"s{row}"
        case "decimal":
            return f"'{row}.25'", f"{row}.25"
        case "date":
            return f"DATE'2026-01-0{row}'", f"2026-01-0{row}"
        case "double":
            return f"{row}.5D", f"{row}.5"
        case "boolean":
            return ("true", "true") if row % 2 == 0 else ("false", "false")
        case "array":
            return f"array({row}, {row + 1})", f"[{row}, {row + 1}]"
        case "struct":
            return f"named_struct('a', {row})", f"{{{row}}}"
        case "map":
            return f"map('k', {row})", f"{{k -> {row}}}"
    raise ValueError(type_)


@dataclass(frozen=True)
class TableShape:
    name: str
    kind: str
    columns: tuple[Column, ...]
    filled: frozenset[str] = frozenset()  # the columns that held a value in every row when the rows were written

    def yaml(self, database: str) -> str:
        return (f"table: {database}.{self.name}\n{KINDS[self.kind]}columns:\n"
                + "".join(f"  - {{name: {c.name}, type: \"{c.type}\"}}\n" for c in self.columns))

    def expected(self, row: int) -> tuple[str | None, ...]:
        """Each column's value in row ``row`` as text (None: NULL, a column added after the rows)."""
        return tuple(value_text(c.origin, row) if c.name in self.filled else None for c in self.columns)


@dataclass(frozen=True)
class ViewShape:
    name: str
    table: str
    columns: tuple[str, ...]

    def yaml(self, database: str) -> str:
        return f"view: {database}.{self.name}\nsql: SELECT {', '.join(self.columns)} FROM {self.table}\n"


@dataclass(frozen=True)
class State:
    """A project as one commit declares it."""

    database: str
    tables: tuple[TableShape, ...]
    views: tuple[ViewShape, ...] = ()
    migrations: tuple[tuple[str, str], ...] = ()  # file name, text
    numbers: int = 0  # names drawn so far: new names are never reused

    def files(self) -> dict[str, str]:
        """Every file of the project: the settings, the schemas, the migrations and their checksums."""
        files = {"schemaflow.yaml": f"databases: [{self.database}]\n"}
        files |= {f"schemas/{self.database}/{t.name}.yaml": t.yaml(self.database) for t in self.tables}
        files |= {f"schemas/{self.database}/{v.name}.yaml": v.yaml(self.database) for v in self.views}
        files |= {f"{MIGRATIONS_DIR}/{name}": text for name, text in self.migrations}
        if self.migrations:
            files[f"{MIGRATIONS_DIR}/{SUM_FILE}"] = sum_text({n: t.encode() for n, t in self.migrations})
        return files

    def table(self, name: str) -> TableShape:
        return next(t for t in self.tables if t.name == name)


@dataclass(frozen=True)
class Evolution:
    """One commit: what it does in words, the state after it, and the migration's changes."""

    edits: tuple[str, ...]
    after: State
    changes: tuple[str, ...] = ()
    created: tuple[str, ...] = field(default=())  # the tables it adds

    def edited(self, before: State) -> dict[str, str | None]:
        """The files the commit writes (path -> text) and deletes (None)."""
        old, new = before.files(), self.after.files()
        return {path: new.get(path) for path in sorted(old.keys() | new.keys()) if old.get(path) != new.get(path)}

    def describe(self) -> str:
        return "; ".join(self.edits)


class _Drawing:
    """The edits of one evolution, drawn one after another on the state each leaves."""

    def __init__(self, rng: random.Random, state: State) -> None:
        self.rng, self.state = rng, state
        self.edits: list[str] = []
        self.changes: list[str] = []
        self.created: list[str] = []
        self.touched: set[tuple[str, str]] = set()  # columns renamed or dropped in this commit

    def fresh(self, prefix: str) -> str:
        self.state = replace(self.state, numbers=self.state.numbers + 1)
        return f"{prefix}_{self.state.numbers}"

    def put(self, table: TableShape) -> None:
        self.state = replace(self.state, tables=tuple(table if t.name == table.name else t for t in self.state.tables))

    def column(self, kind: str) -> Column:
        type_ = self.rng.choice([t for t in PRIMITIVE + NESTED if holds(kind, t)])
        return Column(self.fresh("c"), type_, type_)

    def new_table(self) -> None:
        kind = self.rng.choice(sorted(KINDS))
        columns = (Column("id", "int", "int"), *(self.column(kind) for _ in range(self.rng.randint(1, 3))))
        table = TableShape(self.fresh("t"), kind, columns, frozenset(c.name for c in columns))
        self.state = replace(self.state, tables=(*self.state.tables, table))
        self.created.append(table.name)
        self.edits.append(f"create {table.name} ({kind}: {', '.join(f'{c.name} {c.type}' for c in columns)})")

    def new_view(self) -> None:
        table = self.rng.choice(self.state.tables)
        others = [c.name for c in table.columns if c.name != "id"]
        chosen = ("id", *self.rng.sample(others, self.rng.randint(0, len(others))))
        view = ViewShape(self.fresh("v"), table.name, chosen)
        self.state = replace(self.state, views=(*self.state.views, view))
        self.edits.append(f"create view {view.name} over {table.name} ({', '.join(chosen)})")

    def drop_view(self) -> None:
        view = self.rng.choice(self.state.views)
        self.state = replace(self.state, views=tuple(v for v in self.state.views if v != view))
        self.edits.append(f"drop view {view.name}")

    def add(self, table: TableShape) -> None:
        column = self.column(table.kind)
        # A table created by this commit is given its rows after the apply, a value in every column it then has.
        filled = table.filled | {column.name} if table.name in self.created else table.filled
        self.put(replace(table, columns=(*table.columns, column), filled=filled))
        self.edits.append(f"add {table.name}.{column.name} {column.type}")

    def rename(self, table: TableShape, column: Column) -> None:
        to = self.fresh("r")
        self.put(replace(table, columns=tuple(replace(c, name=to) if c == column else c for c in table.columns),
                         filled=frozenset(to if n == column.name else n for n in table.filled)))
        self._views(table.name, lambda names: tuple(to if n == column.name else n for n in names))
        self.touched.add((table.name, to))
        self.changes.append(f"rename_column: {{table: {self.state.database}.{table.name}, from: {column.name}, to: {to}}}")
        self.edits.append(f"rename {table.name}.{column.name} to {to}")

    def drop(self, table: TableShape, column: Column) -> None:
        self.put(replace(table, columns=tuple(c for c in table.columns if c != column),
                         filled=table.filled - {column.name}))
        self._views(table.name, lambda names: tuple(n for n in names if n != column.name))
        self.changes.append(f"drop_column: {{table: {self.state.database}.{table.name}, column: {column.name}}}")
        self.edits.append(f"drop {table.name}.{column.name}")

    def reorder(self, table: TableShape) -> None:
        columns = list(table.columns)
        while columns == list(table.columns):
            self.rng.shuffle(columns)
        self.put(replace(table, columns=tuple(columns)))
        order = ", ".join(c.name for c in columns)
        self.changes.append(f"reorder_columns: {{table: {self.state.database}.{table.name}, order: [{order}]}}")
        self.edits.append(f"reorder {table.name} to {order}")

    def retype(self, table: TableShape, column: Column) -> None:
        new = self.rng.choice(retypes(table.kind, column.type))
        self.put(replace(table, columns=tuple(replace(c, type=new) if c == column else c for c in table.columns)))
        self.edits.append(f"retype {table.name}.{column.name} {column.type} to {new}")

    def _views(self, table: str, change: Callable[[tuple[str, ...]], tuple[str, ...]]) -> None:
        self.state = replace(self.state, views=tuple(replace(v, columns=change(v.columns)) if v.table == table else v
                                                     for v in self.state.views))

    def one(self) -> None:
        """One edit, of a kind the state allows."""
        table = self.rng.choice(self.state.tables)
        data = [c for c in table.columns if c.name != "id" and (table.name, c.name) not in self.touched]
        choices = ["add", "new_table", "new_view"]
        if data:
            choices += ["rename", "rename", "drop"]
        choices.append("retype")
        if len(table.columns) > 2:
            choices.append("reorder")
        if self.state.views and self.rng.random() < 0.3:
            choices.append("drop_view")
        # A column renamed in this commit may be retyped too, as a team renames and widens a column at once.
        retypable = [c for c in table.columns if c.name != "id" and retypes(table.kind, c.type)]
        match self.rng.choice(choices):
            case "add":
                self.add(table)
            case "new_table":
                self.new_table()
            case "new_view":
                self.new_view()
            case "drop_view":
                self.drop_view()
            case "rename":
                self.rename(table, self.rng.choice(data))
            case "drop" if len(table.columns) > 2:
                self.drop(table, self.rng.choice(data))
            case "retype" if retypable:
                self.retype(table, self.rng.choice(retypable))
            case "reorder":
                self.reorder(table)
            case _:  # a drop of the last data column, or a retype of none that can be: an append instead
                self.add(table)


def first_state(rng: random.Random, database: str) -> tuple[State, tuple[str, ...]]:
    """A project of two to four tables and a view or two; the tables it declares."""
    drawing = _Drawing(rng, State(database, ()))
    for _ in range(rng.randint(2, 4)):
        drawing.new_table()
    for _ in range(rng.randint(1, 2)):
        drawing.new_view()
    return drawing.state, tuple(drawing.created)


def evolve(rng: random.Random, state: State, number: int) -> Evolution:
    """One commit after ``state``: one to three edits, and its migration (the ``number``-th) if they need one."""
    drawing = _Drawing(rng, state)
    for _ in range(rng.randint(1, 3)):
        drawing.one()
    after = drawing.state
    if drawing.changes:
        text = f"description: evolution {number}\nchanges:\n" + "".join(f"  - {c}\n" for c in drawing.changes)
        after = replace(after, migrations=(*after.migrations, (f"{number:04d}_evolution.yaml", text)))
    return Evolution(tuple(drawing.edits), after, tuple(drawing.changes), tuple(drawing.created))


def history(seed: int, database: str, length: int) -> tuple[State, tuple[str, ...], Iterator[Evolution]]:
    """The first state of the history ``seed`` draws, the tables it declares, and its ``length`` evolutions."""
    rng = random.Random(seed)
    state, created = first_state(rng, database)

    def evolutions() -> Iterator[Evolution]:
        current = state
        for number in range(1, length + 1):
            evolution = evolve(rng, current, number)
            yield evolution
            current = evolution.after
    return state, created, evolutions()
