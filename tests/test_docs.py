"""The documentation site: it builds strictly, its reference is generated from the code, and every
``sh`` and ``yaml`` example in it runs in a test or is a file schemaflow accepts, as written there."""
from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

from schemaflow.cli import COMMANDS, main
from tests.metastore_server import RELEASE_VARIABLE, RELEASES
from tests.pages import walkthrough_blocks

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
SCHEMAS = ROOT / "schemaflow" / "spec" / "schemas"


def fenced(page: str) -> list[tuple[str, str]]:
    """The fenced blocks of a page of docs/ that name a language, as (language, text), in order; a block
    indented in a list is given without its indent."""
    text = (DOCS / page).read_text()
    found = re.findall(r"^( *)```(\w+)\n(.*?)^\1```$", text, flags=re.M | re.S)
    return [(language, re.sub(rf"^{indent}", "", body, flags=re.M)) for indent, language, body in found]


def hooks() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_hooks", DOCS / "hooks.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_site_builds_strictly_with_the_schemas_at_their_url(tmp_path: Path) -> None:
    site = tmp_path / "site"
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "-d", str(site)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stderr
    for schema in SCHEMAS.glob("*.json"):
        assert (site / "schemas" / schema.name).read_bytes() == schema.read_bytes()
    commands = (site / "reference" / "commands" / "index.html").read_text()
    assert all(f'id="{command.name}"' in commands for command in COMMANDS)
    assert "--allow-destructive" in commands
    yaml_page = (site / "reference" / "yaml" / "index.html").read_text()
    # Placeholders render as written, not as tags the browser drops ("schemas//.yaml").
    assert "A schemaflow table: schemas/&lt;database&gt;/&lt;name&gt;.yaml" in yaml_page
    assert "<database>" not in yaml_page and "schemas//.yaml" not in yaml_page
    assert (site / "reference" / "exit-codes" / "index.html").is_file()
    # Code boxes wrap (the quickstart is one line of 181 characters): the stylesheet is served, and every page links it.
    assert "white-space: pre-wrap" in (site / "stylesheets" / "code.css").read_text()
    assert 'href="../stylesheets/code.css"' in (site / "getting-started" / "index.html").read_text()
    # Nested list items stay nested (Python-Markdown nests by four spaces), tables in them too.
    ci = (site / "guides" / "ci" / "index.html").read_text()
    apply_item = ci[ci.index("<code>schemaflow-apply-on-merge.yml</code>"):ci.index("It applies exactly what was reviewed")]
    assert "<ul>" in apply_item
    assert "<table>" in ci[ci.index("It writes the reviewed plan"):ci.index("The runner must reach the metastore")]


# A markdown link's target: inline, [text](target "title"), or a reference's definition, [name]: target.
LINK = re.compile(r"\]\(<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\)|^\s*\[[^\]]+\]:\s+<?(\S+?)>?(?:\s|$)", re.MULTILINE)


def test_every_link_between_the_docs_pages_names_a_file_of_the_repository() -> None:
    """As read on GitHub (every page a file of the repository), not only on the built site: a link to a page the site
    generates alone would be dead there."""
    dead = []
    for page in sorted(DOCS.rglob("*.md")):
        text = re.sub(r"```.*?```|`[^`\n]*`", "", page.read_text(), flags=re.DOTALL)  # code is not a link
        for match in LINK.finditer(text):
            target = (match[1] or match[2]).split("#", 1)[0]
            if target and not re.match(r"[a-z][a-z0-9+.-]*:", target) and not (page.parent / target).exists():
                dead.append(f"{page.relative_to(ROOT)}: {target}")
    assert dead == []


def test_the_generated_pages_in_docs_are_as_the_hook_writes_them() -> None:
    for name, content in hooks().generated().items():
        assert (DOCS / name).read_text() == content, f"docs/{name} is stale: write it again with python docs/hooks.py"


def _property_names(node: object) -> set[str]:
    """Every key any ``properties`` of a JSON Schema names, however deep."""
    if isinstance(node, list):
        return set().union(*map(_property_names, node))
    if not isinstance(node, dict):
        return set()
    properties = node.get("properties")
    names = set(properties) if isinstance(properties, dict) else set()
    children = [*(properties.values() if isinstance(properties, dict) else ()),
                *(value for key, value in node.items() if key != "properties")]
    return names.union(*map(_property_names, children))


def test_the_yaml_reference_has_every_key_of_every_schema() -> None:
    reference = hooks().yaml_reference()
    for schema in ("settings.json", "table.json", "view.json", "source.json", "migration.json"):
        for name in _property_names(json.loads((SCHEMAS / schema).read_text())):
            assert re.search(rf"^\| `([^`]*\.)?{re.escape(name)}` \|", reference, re.M), (schema, name)
    assert ("| `format` | one of `parquet`, `orc`, `avro`, `textfile`, `sequencefile`, `rcfile`, `iceberg`, `delta` |"
            in reference)
    assert "| `partitioned_by` | list of text or mappings |" in reference
    assert "| `changes[].partitions.mode` | one of `cascade`, `restrict` | yes |" in reference


def test_every_yaml_key_says_what_it_means_and_the_examples_are_valid_yaml_of_its_type() -> None:
    """Each key's row says more than its bounds (a description, from the schema or the one its reference names);
    a default and an example are shown as they are written in YAML."""
    module = hooks()
    for schema in module.FILE_FORMATS:
        for key, _, _, rule in module._keys(module._load(schema), schema, ""):
            assert rule and not rule.startswith(("not empty", "at least", "at most", "no repeats", "default", "e.g.")), (
                schema, key, rule)
    reference = module.yaml_reference()
    assert "| `spark.master` | text |  | any Spark master URL: local[N], spark://host:port, yarn, k8s://...; default: " \
           "`local[2]`; not empty; e.g. `local[*]` |" in reference
    assert 'e.g. `"\\n"`' in reference  # lines_terminated_by: a newline, escaped, not a line break in the table
    assert "e.g. `{header: 'true', sep: ;}`" in reference


def test_the_commands_reference_has_each_commands_parser_and_exit_codes() -> None:
    page = hooks().commands_reference((DOCS / "reference" / "commands.md").read_text())
    for command in COMMANDS:
        section = page[page.index(f"\n## {command.name}\n"):]
        section = section[:section.find("\n## ", 1) % len(section) or len(section)]
        assert f"**Exit codes:** {command.exits}." in section
        assert f"```sh\n{command.example}\n```" in section
    assert "| `--reviewed PLAN` | a plan made for review" in page
    assert "schemaflow plan [--format {text,markdown,json}]" in page


def test_the_commands_page_must_have_exactly_the_commands() -> None:
    page = (DOCS / "reference" / "commands.md").read_text()
    with pytest.raises(ValueError, match="are not the commands"):
        hooks().commands_reference(page.replace("\n## drift\n", "\n## drfit\n"))


def test_the_exit_codes_page_lists_every_command() -> None:
    page = hooks().exit_codes_reference()
    assert all(f"[`schemaflow {c.name}`](commands.md#{c.name}) | {c.exits} |" in page for c in COMMANDS)


def test_each_commands_example_parses() -> None:
    from schemaflow.cli import _parser

    for command in COMMANDS:
        words = command.example.split(">")[0].split()
        assert words[0] == "schemaflow"
        _parser().parse_args([w.strip("'") for w in words[1:]])


# Every sh and yaml block of docs/, by page and position, and how it is tested.
README_BLOCK = "byte for byte one of the README's two commands, which CI and the team run verbatim"
WALKTHROUGH = "run by tests/test_readme_walkthrough.py (a Spark test), its extraction checked here"
STORAGE = "accepted as a table's storage by tests/test_readme_storage.py"
VALIDATED = "written into a copy of the example project, which schemaflow validate then accepts"
TARGETS = "validated and read as what it says by tests/test_target.py"
RELEASE_RUN = "names a Hive line the remote tests start, checked below"
GLUE_OPTIONS = "read as the options of the glue backend, which opens the catalog they name, by tests/test_backend_glue.py"
COVERED = {
    ("getting-started.md", 0): README_BLOCK,
    ("getting-started.md", 1): WALKTHROUGH,
    ("getting-started.md", 2): WALKTHROUGH,  # and by test_the_walkthroughs_column_is_valid below
    ("getting-started.md", 3): WALKTHROUGH,
    ("contributing.md", 0): README_BLOCK,
    ("concepts/project.md", 0): VALIDATED,
    ("concepts/project.md", 1): VALIDATED,
    ("guides/targets.md", 0): TARGETS,
    ("concepts/objects.md", 0): VALIDATED,
    ("concepts/objects.md", 1): STORAGE,
    ("concepts/objects.md", 2): STORAGE,
    ("concepts/objects.md", 3): STORAGE,
    ("concepts/objects.md", 4): VALIDATED,
    ("concepts/objects.md", 5): VALIDATED,
    ("concepts/objects.md", 6): VALIDATED,
    ("concepts/objects.md", 7): VALIDATED,
    ("concepts/objects.md", 8): VALIDATED,
    ("concepts/objects.md", 9): VALIDATED,  # a Delta table
    ("concepts/view-partitions.md", 0): VALIDATED,
    ("concepts/view-partitions.md", 1): VALIDATED,
    ("guides/adopting.md", 0): VALIDATED,
    ("concepts/cascade.md", 0): VALIDATED,
    ("guides/cluster.md", 0): VALIDATED,
    ("concepts/rewrites.md", 0): VALIDATED,
    ("concepts/rewrites.md", 1): VALIDATED,
    ("reference/metastore-versions.md", 0): VALIDATED,
    ("reference/metastore-versions.md", 1): VALIDATED,
    ("reference/metastore-versions.md", 2): RELEASE_RUN,
    ("backends/glue.md", 0): GLUE_OPTIONS,
    ("backends/hive.md", 0): VALIDATED,
    ("formats/delta.md", 0): VALIDATED,  # delta-spark's settings, plain ones (tests/test_delta_apply.py)
}


def test_every_sh_and_yaml_example_is_tested() -> None:
    found = {(page.relative_to(DOCS).as_posix(), i)
             for page in DOCS.rglob("*.md")
             for i, (language, _) in enumerate(block for block in fenced(page.relative_to(DOCS).as_posix())
                                               if block[0] in ("sh", "yaml"))}
    assert found == set(COVERED)


def test_the_metastore_versions_command_names_a_line_the_tests_start() -> None:
    [command] = [body for language, body in fenced("reference/metastore-versions.md") if language == "sh"]
    setting, *run = command.split()
    variable, _, line = setting.partition("=")
    assert (variable, run) == (RELEASE_VARIABLE, [".venv/bin/pytest", "-m", "remote"])
    assert line in RELEASES and line != "2.3"  # the default needs no setting


def examples(page: str) -> list[str]:
    """The sh and yaml blocks of a page, in the numbering of ``COVERED``."""
    return [text for language, text in fenced(page) if language in ("sh", "yaml")]


def test_the_readmes_two_commands_are_those_of_the_docs() -> None:
    readme = re.findall(r"```sh\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.S)[:2]
    assert readme == [examples("getting-started.md")[0], examples("contributing.md")[0]]


def test_the_walkthrough_test_reads_the_getting_started_page() -> None:
    found = walkthrough_blocks()
    assert [language for language, _ in found] == ["sh", "yaml", "sh", "python"]
    assert [text for language, text in found if language in ("sh", "yaml")] == examples("getting-started.md")[1:]


def test_the_walkthroughs_column_is_valid(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--project", str(tmp_path), "init", "--database", "shop"]) == 0
    events = tmp_path / "schemas" / "shop" / "events.yaml"
    text = events.read_text()
    at = text.index("\n", text.index("  - {name: at,")) + 1
    events.write_text(text[:at] + examples("getting-started.md")[2] + text[at:])
    assert main(["--project", str(tmp_path), "validate"]) == 0, capsys.readouterr()


def _settings(block: str) -> dict[str, str]:
    return {"schemaflow.yaml": block}


def _migration(block: str) -> dict[str, str]:
    """The migration, over an orders table whose history it is: cust_id renamed, legacy_flag dropped."""
    return {"migrations/0003_customer_rename.yaml": block.split("\n", 1)[1],
            "schemas/retail/orders.yaml": "table: retail.orders\ncolumns:\n  - {name: order_id, type: bigint}\n"
                                          "  - {name: customer_id, type: bigint}\n"
                                          "  - {name: amount, type: \"decimal(12,2)\"}\n"
                                          "partitioned_by:\n  - {name: ds, type: string}\n"}


def _view_partitions(block: str) -> dict[str, str]:
    """The partitions, on the view the concepts page declares (retail.daily_revenue, partitioned on ds), over
    an orders table partitioned on (ds, hr) as the example says."""
    view = examples("concepts/objects.md")[5]
    return {"schemas/retail/daily_revenue.yaml": view.replace("sql: |", block + "sql: |"),
            "schemas/retail/orders.yaml": "table: retail.orders\ncolumns:\n  - {name: customer_id, type: bigint}\n"
                                          "  - {name: amount, type: \"decimal(12,2)\"}\n"
                                          "partitioned_by:\n  - {name: ds, type: string}\n"
                                          "  - {name: hr, type: string}\n"}


# The files each example makes, in a copy of the example project, or, for those that declare a table of
# their own (retail.orders as written there, or as a view partition example needs it), in an empty folder.
IN_AN_EMPTY_FOLDER = {("concepts/objects.md", 0), ("concepts/view-partitions.md", 0), ("concepts/view-partitions.md", 1),
                      ("concepts/cascade.md", 0)}
VALIDATE: dict[tuple[str, int], Callable[[str], dict[str, str]]] = {
    ("concepts/project.md", 0): lambda block: {**_settings(block.replace("databases: [retail]",
                                                                          "databases: [analytics, retail]"))},
    ("concepts/project.md", 1): _settings,
    ("concepts/objects.md", 0): lambda block: {"schemas/retail/orders.yaml": block},
    ("concepts/objects.md", 4): lambda block: {"schemas/raw/orders_csv.yaml": block,
                                               "schemaflow.yaml": "databases: [analytics, raw, retail]\n"},
    ("concepts/objects.md", 5): lambda block: {"schemas/retail/daily_revenue.yaml": block},
    ("concepts/objects.md", 6): lambda block: {"schemas/raw/events.yaml": block},
    ("concepts/objects.md", 7): lambda block: {"schemas/events/clicks.yaml": block,
                                               "schemaflow.yaml": "databases: [analytics, events, retail]\n"},
    ("concepts/objects.md", 8): lambda block: {"schemas/shop/orders.yaml": block,
                                               "schemaflow.yaml": "databases: [analytics, retail, shop]\n"},
    ("concepts/objects.md", 9): lambda block: {"schemas/sales/orders.yaml": block,
                                               "schemaflow.yaml": "databases: [analytics, retail, sales]\n"},
    ("concepts/view-partitions.md", 0): _view_partitions,
    ("concepts/view-partitions.md", 1): _view_partitions,
    ("guides/adopting.md", 0): lambda block: {"schemaflow.yaml": block.replace("[sales]", "[analytics, retail]")
                                              .replace("sales.tmp_*", "retail.tmp_*")},
    ("concepts/cascade.md", 0): _migration,
    ("guides/cluster.md", 0): _settings,
    ("reference/metastore-versions.md", 0): _settings,
    ("reference/metastore-versions.md", 1): _settings,
    ("backends/hive.md", 0): _settings,
    ("formats/delta.md", 0): lambda block: _settings(block.replace("[shop]", "[analytics, retail]")),
    ("concepts/rewrites.md", 0): lambda block: {"schemas/retail/contacts.yaml": block},
    ("concepts/rewrites.md", 1): lambda block: {"migrations/0004_numeric_amounts.yaml": block.split("\n", 1)[1]},
}


def test_each_validated_example_has_a_way_in() -> None:
    assert set(VALIDATE) == {key for key, how in COVERED.items() if how == VALIDATED}


@pytest.mark.parametrize("key", VALIDATE, ids=lambda key: f"{key[0]}#{key[1]}")
def test_each_example_is_accepted_by_validate(example: Path, key: tuple[str, int],
                                              capsys: pytest.CaptureFixture[str]) -> None:
    if key in IN_AN_EMPTY_FOLDER:
        shutil.rmtree(example / "schemas")
        (example / "schemaflow.yaml").unlink()
    for path, text in VALIDATE[key](examples(key[0])[key[1]]).items():
        (example / path).parent.mkdir(parents=True, exist_ok=True)
        (example / path).write_text(text)
    if (example / "migrations").is_dir():
        assert main(["--project", str(example), "hash-migrations"]) == 0
    code = main(["--project", str(example), "validate"])
    assert code == 0, capsys.readouterr()


def test_every_key_of_the_plan_json_has_a_row_on_its_page() -> None:
    from schemaflow.plan.plan import Plan

    page = (ROOT / "docs" / "reference" / "plan-json.md").read_text()
    documented = {key for row in re.findall(r"^\| ([^|]+) \|", page, re.MULTILINE) for key in re.findall(r"`([\w\[\].]+)`", row)}
    assert sorted(set(Plan(steps=(), databases=()).to_data()) - documented) == []
