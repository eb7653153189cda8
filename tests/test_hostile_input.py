"""Hostile input: bounded work, located errors, no file left unread unsaid, errors at their cause.

A file may be written to hurt: aliases that expand to billions of values, nesting that runs
Python out of stack, SQL whose analysis grows with the square of its size, characters no file can
hold. Each is refused quickly at its position, or read in time that grows with its size. Every
file under ``schemas/`` and ``migrations/`` is read or named (symlinks followed, loops caught); a
file that cannot be read does not also make the views over its object "unknown"; a column missing
from the table it is qualified with says so. The refusals are also cases of
``tests/cases/bad_input`` (``a_*``); what is accepted, what only a temporary folder can hold (a
symlink loop, a git repository) and what must be absent is tested here.
"""
from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from schemaflow import cli
from schemaflow.errors import SpecError
from schemaflow.gitsource import desired_at
from schemaflow.project import load_project
from schemaflow.spec import load_catalog
from schemaflow.spec.yamlpos import MAX_VALUES, load_yaml
from schemaflow.sql.types import InvalidType, canonical_type
from schemaflow.sql.views import MAX_DEPTH, MAX_NESTING, ViewSqlError, analyze_view
from schemaflow.workflow import hash_migrations
from tests.gitrepos import commit, init_repo
from tests.projects import reported
from tests.work import growth, lines

TABLE = "table: bad.t\ncolumns:\n  - {name: a, type: int}\n  - {name: b, type: string}\n"
SCHEMA = {"bad.t": [("a", "int"), ("b", "string")], "bad.u": [("a", "int"), ("c", "string")]}


def project(root: Path, files: dict[str, str], links: dict[str, str] | None = None) -> Path:
    """A project at ``root`` holding ``files`` (path relative to the root -> text) and symlinks (path -> target)."""
    (root / "schemas").mkdir(parents=True, exist_ok=True)
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text, encoding="utf-8")
    for path, target in (links or {}).items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).symlink_to(target)
    return root


def validate(root: Path) -> tuple[int, str]:
    """``schemaflow validate`` of ``root`` in this process: exit code and stderr."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = cli.main(["--project", str(root), "validate"])
    return code, err.getvalue()


def laughs(levels: int) -> str:
    """The "billion laughs": each level a list of ten aliases to the level before; 10**levels values."""
    lines = ["l0: &l0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


# A. Bounded work.

def test_a_billion_laughs_is_refused_at_the_alias_that_crosses_the_bound_before_anything_is_built(tmp_path):
    (tmp_path / "t.yaml").write_text(laughs(9))
    (tmp_path / "small.yaml").write_text(laughs(4))
    with pytest.raises(SpecError) as caught:
        load_yaml(tmp_path / "t.yaml", "t.yaml")
    # Refusing a billion values takes less work than building ten thousand.
    assert lines(lambda: load_yaml(tmp_path / "t.yaml", "t.yaml")) < lines(
        lambda: load_yaml(tmp_path / "small.yaml", "small.yaml"))
    [problem] = caught.value.problems
    # Levels 0 to 4 make 123,460 values, each alias to level 4 adds 111,111: the eighth on line 6 crosses.
    assert (problem.source.line, problem.source.col) == (6, 45)
    assert problem.message.startswith(f"this alias takes the file past {MAX_VALUES:,} values")


def test_aliases_within_the_bound_are_expanded(tmp_path):
    (tmp_path / "t.yaml").write_text(laughs(4))  # 10**4 values: well within the bound
    doc = load_yaml(tmp_path / "t.yaml", "t.yaml")
    assert len(doc.data["l3"]) == 10 and doc.data["l3"][9][9][9] == ["x"] * 10


def test_deep_yaml_is_refused_where_it_goes_too_deep(tmp_path):
    (tmp_path / "t.yaml").write_text("table: bad.t\ncomment: " + "[" * 1000 + "]" * 1000 + "\n")
    with pytest.raises(SpecError) as caught:
        load_yaml(tmp_path / "t.yaml", "t.yaml")
    assert [str(p) for p in caught.value.problems] == [
        "t.yaml:2:73: YAML nested more than 64 levels deep here: schemaflow reads at most 64 levels; flatten the data"]


def test_an_alias_to_its_own_ancestor_is_still_refused(tmp_path):
    (tmp_path / "t.yaml").write_text("a: &a [1, *a]\n")
    with pytest.raises(SpecError, match="a YAML alias refers back to this node from inside it"):
        load_yaml(tmp_path / "t.yaml", "t.yaml")


NESTED_SQL = {
    "parentheses": ("SELECT " + "(" * 2000 + "a" + ")" * 2000 + " AS x FROM bad.t", MAX_NESTING + 8),
    "subqueries in FROM": ("SELECT a FROM " + "(SELECT a FROM " * 2000 + "bad.t" + ") s" * 2000,
                           15 * MAX_NESTING + 15),
    "subqueries in IN": ("SELECT a FROM bad.t WHERE a IN " + "(SELECT a FROM bad.t WHERE a IN " * 500 + "(1)"
                         + ")" * 500, 32 * MAX_NESTING + 32),
    "CASE": ("SELECT " + "CASE WHEN a = 1 THEN " * 100 + "a" + " END" * 100 + " AS x FROM bad.t",
             21 * MAX_NESTING + 8),
    "function calls": ("SELECT " + "abs(" * 2000 + "a" + ")" * 2000 + " AS x FROM bad.t", 4 * MAX_NESTING + 11),
}


@pytest.mark.parametrize("sql, col", NESTED_SQL.values(), ids=NESTED_SQL.keys())
def test_nesting_past_the_limit_is_refused_at_the_level_that_crosses_it(sql, col):
    with pytest.raises(ViewSqlError) as caught:
        analyze_view(sql, "bad", SCHEMA)
    assert (caught.value.line, caught.value.col) == (1, col)
    assert caught.value.message.startswith(f"parentheses, brackets and CASE nested more than {MAX_NESTING} levels")


def test_nesting_at_the_limit_is_analysed():
    sql = "SELECT " + "(" * MAX_NESTING + "a" + ")" * MAX_NESTING + " AS x FROM bad.t"
    assert analyze_view(sql, "bad", SCHEMA).output == ("x",)
    subqueries = "SELECT a FROM " + "(SELECT a FROM " * (MAX_NESTING - 1) + "bad.t" + ") s" * (MAX_NESTING - 1)
    assert analyze_view(subqueries, "bad", SCHEMA).reads == ("bad.t",)


@pytest.mark.parametrize("operator", ["+", "||", "AND", "OR"])
def test_a_chain_of_operators_past_the_depth_limit_is_refused_with_work_linear_in_its_length(operator):
    def chain(terms: int) -> None:
        operand = "a = 1" if operator in ("AND", "OR") else "a"
        analyze_view(f"SELECT {f' {operator} '.join([operand] * terms)} AS x FROM bad.t", "bad", SCHEMA)

    with pytest.raises(ViewSqlError, match=f"an expression nested more than {MAX_DEPTH} levels deep here"):
        chain(5000)
    # Unchecked, qualifying is quadratic (it walks up from each column): twice the chain, four times the work.
    assert growth(chain, MAX_DEPTH + 100) < 2.5


def test_a_chain_just_within_the_depth_limit_is_analysed():
    sql = "SELECT " + " + ".join(["a"] * (MAX_DEPTH - 10)) + " AS x FROM bad.t"
    assert analyze_view(sql, "bad", SCHEMA).uses == {"bad.t": ("a",)}


@pytest.mark.parametrize("sql", [
    "SELECT a FROM bad.t WHERE " + "NOT " * 2000 + "a = 1",
    "SELECT " + "- " * 3000 + "a AS x FROM bad.t",
    "SELECT CAST(a AS " + "array<" * 2000 + "int" + ">" * 2000 + ") AS x FROM bad.t",
])
def test_what_runs_out_of_python_stack_is_an_error_at_the_start_of_the_sql(sql):
    with pytest.raises(ViewSqlError) as caught:
        analyze_view(sql, "bad", SCHEMA)
    assert caught.value.message.startswith("the SQL nests too deep for sqlglot to analyse")
    assert (caught.value.line, caught.value.col) == (1, 1)


def test_a_long_in_list_is_analysed_with_work_linear_in_its_length():
    def in_list(values: int) -> tuple[str, ...]:
        sql = "SELECT a FROM bad.t WHERE a IN (" + ", ".join(str(i) for i in range(values)) + ")"
        return analyze_view(sql, "bad", SCHEMA).output

    assert in_list(10_000) == ("a",)  # 60 kB
    assert growth(in_list, 1000) < 2.5


def test_validate_refuses_a_megabyte_in_list_with_work_linear_in_its_length(tmp_path):
    def validate_in_list(values: int) -> tuple[int, str]:
        listed = ", ".join(str(i) for i in range(values))
        root = project(tmp_path / str(values), {
            "schemas/bad/t.yaml": TABLE,
            "schemas/bad/v.yaml": f"view: bad.v\nsql: SELECT a FROM bad.t WHERE a IN ({listed})\n"})
        return validate(root)

    code, stderr = validate_in_list(150_000)
    assert code == 1 and "schemas/bad/v.yaml:2:6: " in stderr
    assert growth(validate_in_list, 5000) < 2.5


def test_validate_accepts_an_in_list_the_metastore_can_store(tmp_path):
    values = ", ".join(str(i) for i in range(5_000))  # 29 kB of SQL
    root = project(tmp_path, {"schemas/bad/t.yaml": TABLE,
                              "schemas/bad/v.yaml": f"view: bad.v\nsql: SELECT a FROM bad.t WHERE a IN ({values})\n"})
    code, stderr = validate(root)
    assert code == 0, stderr


@pytest.mark.parametrize("text", ["array<" * 2000 + "int" + ">" * 2000, "struct<x:" * 40 + "int" + ">" * 40,
                                  "map<string," * 33 + "int" + ">" * 33])
def test_a_type_nested_past_the_limit_is_refused(text):
    with pytest.raises(InvalidType, match="type nested more than 32 levels deep"):
        canonical_type(text)


def test_a_type_nested_to_the_limit_is_read():
    assert canonical_type("array<" * 32 + "int" + ">" * 32) == "array<" * 32 + "int" + ">" * 32


def test_validate_locates_deep_sql_and_deep_types_with_work_linear_in_their_depth(tmp_path):
    def deep(levels: int) -> tuple[int, str]:
        return validate(project(tmp_path / str(levels), {
            "schemas/bad/t.yaml": TABLE + "  - {name: c, type: '" + "array<" * 2 * levels + "int" + ">" * 2 * levels
                                  + "'}\n",
            "schemas/bad/v.yaml": "view: bad.v\nsql: |\n  SELECT a\n  FROM " + "(SELECT a FROM " * levels + "bad.u"
                                  + ") s" * levels + "\n",
            "schemas/bad/u.yaml": "table: bad.u\ncolumns:\n  - {name: a, type: int}\n",
        }))

    code, stderr = deep(1000)
    assert code == 1
    assert growth(deep, 500) < 2.5
    assert "schemas/bad/t.yaml:5:21: type nested more than 32 levels deep" in stderr
    assert "schemas/bad/v.yaml:4:488: parentheses, brackets and CASE nested more than 32 levels deep here" in stderr


SURROGATE = ("is half of a UTF-16 surrogate pair, not a character, and no file or metastore can store it alone: "
             "write the character itself, or escape its code point as \\UXXXXXXXX")


@pytest.mark.parametrize("text, where, code", [
    ('table: bad.t\ncomment: "Orders \\ud800"\n', "2:18", "d800"),
    ('table: bad.t\ncolumns:\n  - {name: a, type: int, comment: "x\\uDC00y"}\n', "3:37", "dc00"),
    ('table: bad.t\ncolumns:\n  - {name: "a\\U0000d83d", type: int}\n', "3:14", "d83d"),
    ('table: bad.t\nproperties:\n  "k\\ud800": v\n', "3:5", "d800"),
    ('table: bad.t\nproperties:\n  k: "pair reversed: \\ude00\\ud83d"\n', "3:22", "de00"),
    ('view: bad.v\nsql: "SELECT \'\\ud800\' AS s"\n', "2:15", "d800"),
    ('table: bad.t\ncomment: "first line\n  then \\ud800"\n', "3:8", "d800"),
])
def test_a_lone_surrogate_is_refused_at_its_escape(tmp_path, text, where, code):
    (tmp_path / "t.yaml").write_text(text)
    with pytest.raises(SpecError) as caught:
        load_yaml(tmp_path / "t.yaml", "t.yaml")
    assert [str(p) for p in caught.value.problems] == [f"t.yaml:{where}: \\u{code} {SURROGATE}"]


def test_a_surrogate_pair_written_as_two_escapes_is_one_character(tmp_path):
    (tmp_path / "t.yaml").write_text('comment: "smile \\ud83d\\ude00"\n')
    assert load_yaml(tmp_path / "t.yaml", "t.yaml").data == {"comment": "smile \U0001F600"}


def test_a_settings_folder_is_a_located_error_not_a_traceback(tmp_path):
    project(tmp_path, {"schemas/bad/t.yaml": TABLE})
    (tmp_path / "schemaflow.yaml").mkdir()
    with pytest.raises(SpecError) as caught:
        load_project(tmp_path)
    assert str(caught.value) == "schemaflow.yaml:1:1: expected a file here, found a folder: rename or move the folder"


def test_a_settings_link_to_nothing_is_a_located_error(tmp_path):
    project(tmp_path, {"schemas/bad/t.yaml": TABLE}, {"schemaflow.yaml": "config/missing.yaml"})
    with pytest.raises(SpecError, match="schemaflow.yaml:1:1: a symlink to 'config/missing.yaml', which leads to no"):
        load_project(tmp_path)


# B. No file skipped unsaid.

def test_a_symlinked_database_folder_is_read_under_its_path(tmp_path):
    project(tmp_path, {"shared/bad/t.yaml": TABLE}, {"schemas/bad": "../shared/bad"})
    assert list(load_catalog(tmp_path).objects) == ["bad.t"]


def test_a_yaml_suffix_in_any_case_is_read(tmp_path):
    project(tmp_path, {"schemas/bad/t.YAML": TABLE, "schemas/bad/u.Yml": TABLE.replace("bad.t", "bad.u")})
    assert list(load_catalog(tmp_path).objects) == ["bad.t", "bad.u"]


def test_symlink_loops_and_links_to_nothing_are_named(tmp_path):
    project(tmp_path, {"schemas/bad/t.yaml": TABLE, "shared/u.yaml": TABLE.replace("bad.t", "bad.u")}, {
        "schemas/bad/up": "..", "schemas/bad/self.yaml": "self.yaml", "schemas/bad/gone.yaml": "nowhere.yaml",
        "schemas/one": "../shared", "schemas/two": "../shared"})
    assert reported(tmp_path) == [
        "schemas/bad/gone.yaml:1:1: a symlink to 'nowhere.yaml', which leads to no file or folder: fix or remove the "
        "link",
        "schemas/bad/self.yaml:1:1: a symlink to 'self.yaml', which leads to no file or folder: fix or remove the link",
        "schemas/bad/up:1:1: a symlink to '..' leads back to schemas, a folder that contains it: a loop; remove the "
        "link",
        "schemas/one/u.yaml:1:8: bad.u must be declared in schemas/bad/u.yaml: rename or move this file",
        "schemas/two:1:1: a symlink to '../shared' leads to the folder already read as schemas/one: each folder is "
        "read once, or its files would be declared twice; remove one of the two ways to it",
    ]


def test_stray_and_hidden_files_are_named_and_an_empty_gitkeep_passes(tmp_path):
    project(tmp_path, {"schemas/bad/t.yaml": TABLE, "schemas/bad/notes.md": "# notes", "schemas/.gitkeep": "",
                       "schemas/bad/.t.yaml.swp": "swap", "schemas/.drafts/u.yaml": TABLE, "schemas/.drafts/v.yaml": "",
                       "migrations/0002_x.txt": "text", "migrations/.gitkeep": "keep"})
    hidden = ("schemaflow does not read hidden files, and one could hide a declaration; if it holds one, rename it "
              "without the leading dot, else move it out of")
    assert reported(tmp_path) == [
        f"migrations/.gitkeep:1:1: a hidden file in migrations/: {hidden} migrations/",
        "migrations/0002_x.txt:1:1: not a migration: a migration is a .yaml file named NNNN_<slug>.yaml; move it "
        "out of migrations/ (or, if it is one, rename it)",
        f"schemas/.drafts:1:1: a hidden folder in schemas/: {hidden} schemas/",
        f"schemas/bad/.t.yaml.swp:1:1: a hidden file in schemas/: {hidden} schemas/",
        "schemas/bad/notes.md:1:1: not a schema file: schemas/ holds only .yaml files, one table or view each; move it "
        "out of schemas/ (or, if it declares one, rename it to .yaml)",
    ]


def test_hash_migrations_refuses_what_is_not_a_migration(tmp_path):
    project(tmp_path, {"schemas/bad/t.yaml": TABLE, "migrations/0001_x.yaml": "description: x\nchanges: []\n",
                       "migrations/0002_x.txt": "text"})
    with pytest.raises(SpecError, match="migrations/0002_x.txt:1:1: not a migration"):
        hash_migrations(load_project(tmp_path, env={}))


@pytest.fixture
def linked_repo(tmp_path: Path) -> Path:
    """A repository whose commit has a symlinked database folder, a loop, and links out of it and to nothing."""
    root = tmp_path / "repo"
    repo = init_repo(root)
    project(root, {"shared/bad/t.yaml": TABLE, "schemas/bad/u.yaml": TABLE.replace("bad.t", "bad.u")}, {
        "schemas/bad/v.yaml": "../../shared/bad/t.yaml", "schemas/good": "../shared/bad", "schemas/bad/loop": "..",
        "schemas/bad/hosts.yaml": "/etc/hosts", "schemas/bad/up": "../../../elsewhere",
        "schemas/bad/gone.yaml": "nowhere.yaml", "schemas/bad/a.yaml": "b.yaml", "schemas/bad/b.yaml": "a.yaml"})
    commit(repo, "links")
    return root


def test_symlinks_in_a_commit_are_followed_within_it_or_named(linked_repo):
    with pytest.raises(SpecError) as caught:
        desired_at(linked_repo, "HEAD")
    outside = "which leads out of the repository: a commit holds the link, not what it points at; commit the files"
    loop = "which is one of a loop of symlinks: fix or remove the link"
    assert [str(p) for p in caught.value.problems] == [
        f"HEAD:schemas/bad/a.yaml:1:1: a symlink to 'a.yaml', {loop}",
        f"HEAD:schemas/bad/b.yaml:1:1: a symlink to 'b.yaml', {loop}",
        "HEAD:schemas/bad/gone.yaml:1:1: a symlink to 'nowhere.yaml', which leads to no file or folder in this commit: "
        "fix or remove the link",
        f"HEAD:schemas/bad/hosts.yaml:1:1: a symlink to '/etc/hosts', {outside} themselves",
        "HEAD:schemas/bad/loop:1:1: a symlink to '..' leads back to schemas, a folder that contains it: a loop; "
        "remove the link",
        f"HEAD:schemas/bad/up:1:1: a symlink to '../../../elsewhere', {outside} themselves",
        "HEAD:schemas/bad/v.yaml:1:8: bad.t is declared more than once: also in schemas/good/t.yaml",
        "HEAD:schemas/bad/v.yaml:1:8: bad.t must be declared in schemas/bad/t.yaml: rename or move this file",
        "HEAD:schemas/good/t.yaml:1:8: bad.t is declared more than once: also in schemas/bad/v.yaml",
        "HEAD:schemas/good/t.yaml:1:8: bad.t must be declared in schemas/bad/t.yaml: rename or move this file",
    ]


def test_a_symlinked_database_folder_in_a_commit_is_read(tmp_path):
    root = tmp_path / "repo"
    repo = init_repo(root)
    project(root, {"shared/bad/t.yaml": TABLE}, {"schemas/bad": "../shared/bad"})
    commit(repo, "linked")
    assert list(desired_at(root, "HEAD").objects) == ["bad.t"]


@pytest.mark.parametrize("files, links, message", [
    ({"schemaflow.yaml/x.yaml": "databases: [bad]\n"}, {}, "expected a file here, found a folder"),
    ({}, {"schemaflow.yaml": "config/x.yaml"}, "a symlink to 'config/x.yaml', which leads to no file or folder"),
    ({"config/x.yaml": "databases: [good]\n"}, {"schemaflow.yaml": "config/x.yaml"}, "database 'bad' is not managed"),
])
def test_settings_in_a_commit_are_read_through_links_or_named(tmp_path, files, links, message):
    root = tmp_path / "repo"
    repo = init_repo(root)
    project(root, {"schemas/bad/t.yaml": TABLE, **files}, links)
    commit(repo, "settings")
    with pytest.raises(SpecError, match=f"HEAD:[^:]*:1:[0-9]+: {message}"):
        desired_at(root, "HEAD")


# C. Errors at their cause.

@pytest.mark.parametrize("broken", ["table: bad.t\ncolumns: [{name: a, type: int}\n", "- just\n- a list\n",
                                    "table: [bad, t]\ncolumns: []\n", "\t"])
def test_a_table_file_that_cannot_be_read_is_not_also_an_unknown_table_of_its_views(tmp_path, broken):
    root = project(tmp_path, {"schemas/bad/t.yaml": broken,
                              "schemas/bad/v.yaml": "view: bad.v\nsql: SELECT a FROM t\n"})
    lines = reported(root)
    assert lines and all(line.startswith("schemas/bad/t.yaml:") for line in lines), lines


def test_a_view_over_a_table_that_no_file_declares_is_still_reported(tmp_path):
    root = project(tmp_path, {"schemas/bad/v.yaml": "view: bad.v\nsql: SELECT a FROM t\n"})
    assert reported(root) == ["schemas/bad/v.yaml:2:20: unknown table or view 'bad.t': declare it in schemas/, as a "
                              "source if schemaflow is not to manage it ('source: db.name' with its columns)"]


@pytest.mark.parametrize("sql, message", [
    ("SELECT o.nosuch FROM bad.t o", "bad.t as o has no column 'nosuch' (its columns: a, b)"),
    ("SELECT o.bb FROM bad.t o", "bad.t as o has no column 'bb'; did you mean 'b'?"),
    ("SELECT t.c FROM bad.t JOIN bad.u ON t.a = u.a", "bad.t has no column 'c' (its columns: a, b)"),
    ("SELECT s.b FROM (SELECT a FROM bad.t) s", "the subquery s has no column 'b' (its columns: a)"),
    ("SELECT a FROM bad.t JOIN bad.u ON t.a = u.a",
     "ambiguous column 'a': bad.t and bad.u both have it; qualify it with the alias of the one you mean"),
    ("SELECT x.a FROM bad.t", "unknown table or alias 'x' (this query reads: t)"),
    ("SELECT d FROM bad.t",
     "unknown column 'd': no table or subquery this query reads has it (columns of bad.t: a, b)"),
])
def test_a_column_error_says_what_is_really_wrong(sql, message):
    with pytest.raises(ViewSqlError) as caught:
        analyze_view(sql, "bad", SCHEMA)
    assert (caught.value.message, caught.value.line, caught.value.col) == (message, 1, 8)


def test_no_listing_follows_a_link_twice(tmp_path):
    """Links that fan out (each folder linking twice to the next) are read once each, not 2**n times."""
    fan = {f"fan/{level}/{name}": f"../{level + 1}" for level in range(20) for name in "ab"}
    project(tmp_path, {"schemas/bad/t.yaml": TABLE, "fan/20/.keep": ""}, {**fan, "schemas/fan": "../fan/0"})
    lines = reported(tmp_path)
    assert len(lines) == 20 and all("leads to the folder already read as" in line for line in lines)


def test_spark_settings_are_kept_as_written_not_as_yaml_reads_them(tmp_path):
    from schemaflow.project import load_project

    (tmp_path / "schemas").mkdir()
    (tmp_path / "schemaflow.yaml").write_text(
        "spark:\n  conf: {spark.sql.shuffle.partitions: 030, spark.a: NO, spark.b: 1.10, spark.c: 1_000, spark.d: '7'}\n")
    assert load_project(tmp_path, env={}).settings.spark_conf == {
        "spark.a": "NO", "spark.b": "1.10", "spark.c": "1_000", "spark.d": "7", "spark.sql.shuffle.partitions": "030"}
