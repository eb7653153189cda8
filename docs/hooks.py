"""The MkDocs hook that keeps the reference generated from the code, so that it is never stale.

Registered in mkdocs.yml (``hooks:``); every build runs it. The generated pages are kept in docs/ too, so that
their links work where the pages are read as files (on GitHub): ``python docs/hooks.py`` writes them, and a build
refuses them stale:

- reference/yaml.md, every key of every file format, from the JSON Schemas in ``schemaflow/spec/schemas/``;
- reference/exit-codes.md, from each command's declared exit codes (``schemaflow.cli.COMMANDS``);
- reference/readers.md, the reader-compatibility matrix: each rule of ``schemaflow.plan.reader_rules``, its source, and
  its verdict on its examples for each reader it speaks of;
- reference/spark-settings.md, the Spark settings a project sets without the operator's approval, from
  ``schemaflow.safe_spark_settings``;
- reference/commands.md is written by hand around the commands (one ``## name`` section each, with what
  the command does at length); the hook puts under each heading what the parser declares: the one-line
  help, the usage, every argument, the exit codes and the example;
- the JSON Schemas themselves, under ``schemas/`` at the site's root: a stable URL for editors. A page links to
  them where they are in the repository (``schemaflow/spec/schemas/``); the site's links go to its own copies.

The schemaflow it describes is the one in this checkout, whatever else is installed.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from mkdocs.config.defaults import MkDocsConfig  # noqa: E402
from mkdocs.exceptions import PluginError  # noqa: E402
from mkdocs.structure.files import File, Files  # noqa: E402
from mkdocs.structure.pages import Page  # noqa: E402

from schemaflow.cli import COMMANDS, _parser  # noqa: E402
from schemaflow.plan import reader_rules  # noqa: E402 (registers the rules)
from schemaflow.plan.readers import MATRIX_READERS, Event, Reader, Rule, headline, rules  # noqa: E402
from schemaflow.safe_spark_settings import SAFE  # noqa: E402

SCHEMAS = ROOT / "schemaflow" / "spec" / "schemas"
COMMANDS_PAGE = "reference/commands.md"
# The file each JSON Schema describes, in the order the reference lists them; the others are shared parts.
FILE_FORMATS = {"settings.json": "Settings: `schemaflow.yaml`", "table.json": "A table: `schemas/<database>/<name>.yaml`",
                "view.json": "A view: `schemas/<database>/<name>.yaml`",
                "source.json": "A source: `schemas/<database>/<name>.yaml`",
                "migration.json": "A migration: `migrations/NNNN_<slug>.yaml`"}
# A page's link to a JSON Schema where it is in the repository, one folder further up than the site's copy.
SCHEMA_LINK = re.compile(r"\]\(\.\./((?:\.\./)*)schemaflow/spec/schemas/([\w-]+\.json)\)")
# Options every command takes, described once at the top of the commands page.
COMMON_OPTIONS = {"-h", "--project", "--target", "--approve-code"}


def generated() -> dict[str, str]:
    """Each generated page (its path under docs/) and what it holds."""
    return {"reference/yaml.md": yaml_reference(), "reference/exit-codes.md": exit_codes_reference(),
            "reference/spark-settings.md": spark_settings_reference(), "reference/readers.md": readers_reference()}


def on_files(files: Files, config: MkDocsConfig) -> Files:
    """Refuse a generated page that is stale; add the JSON Schemas to the site."""
    for page, content in generated().items():
        if (ROOT / "docs" / page).read_text() != content:
            raise PluginError(f"docs/{page} is stale: write it again with python docs/hooks.py")
    for schema in sorted(SCHEMAS.glob("*.json")):
        files.append(File.generated(config, f"schemas/{schema.name}", abs_src_path=str(schema)))
    return files


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    """Links to the JSON Schemas in the repository go to the site's copies; under each command's heading on the
    commands page, what its parser declares."""
    markdown = SCHEMA_LINK.sub(r"](\1schemas/\2)", markdown)
    if page.file.src_uri != COMMANDS_PAGE:
        return markdown
    try:
        return commands_reference(markdown)
    except ValueError as error:
        raise PluginError(f"{COMMANDS_PAGE}: {error}") from error


def commands_reference(page: str) -> str:
    """``page`` with each ``## name`` section of a command given its declared reference; a ValueError
    unless the page has exactly the commands, in the order ``--help`` lists them."""
    headings = re.findall(r"^## (\S+)$", page, flags=re.M)
    names = [command.name for command in COMMANDS]
    if headings != names:
        raise ValueError(f"its sections {headings} are not the commands {names}, in that order")
    parsers = _commands()
    for command in COMMANDS:
        parser = parsers[command.name]
        declared = (f"{command.help[:1].upper()}{command.help[1:]}.\n\n"
                    f"```text\n{_usage(parser)}\n```\n\n{_arguments(parser)}"
                    f"**Exit codes:** {command.exits}.\n\n**Example:**\n\n```sh\n{command.example}\n```\n")
        page = page.replace(f"\n## {command.name}\n", f"\n## {command.name}\n\n{declared}", 1)
    return page


def _commands() -> dict[str, argparse.ArgumentParser]:
    """Each command's parser, by name."""
    subparsers = next(action for action in _parser()._actions if isinstance(action, argparse._SubParsersAction))
    return dict(subparsers.choices)


def _usage(parser: argparse.ArgumentParser) -> str:
    """The command's usage on one line, without the options every command takes."""
    actions = [action for action in parser._actions if not set(action.option_strings) & COMMON_OPTIONS]
    formatter = argparse.HelpFormatter(parser.prog, width=10_000)
    formatter.add_usage(None, actions, [], prefix="")
    return formatter.format_help().strip()


def _arguments(parser: argparse.ArgumentParser) -> str:
    """A table of the command's own arguments, or "" when it has none."""
    rows = []
    for action in parser._actions:
        if set(action.option_strings) & COMMON_OPTIONS:
            continue
        metavar = action.metavar or (action.dest.upper() if action.nargs != 0 else None)
        if action.choices:
            metavar = "{" + ",".join(map(str, action.choices)) + "}"
        name = ", ".join(action.option_strings) or str(action.metavar or action.dest)
        if action.option_strings and action.nargs != 0:
            name += f" {metavar}"
        meaning = action.help or ""
        if action.default not in (None, False, [], argparse.SUPPRESS):
            meaning += f" (default: {action.default})" if "default" not in meaning else ""
        if action.required:
            meaning += " (required)"
        rows.append(f"| `{name}` | {_cell(meaning.strip())} |")
    if not rows:
        return ""
    return "| argument | meaning |\n|---|---|\n" + "\n".join(rows) + "\n\n"


def exit_codes_reference() -> str:
    """reference/exit-codes.md: every command's exit codes."""
    rows = "\n".join(f"| [`schemaflow {command.name}`](commands.md#{command.name}) | {_cell(command.exits)} |"
                     for command in COMMANDS)
    return ("# Exit codes\n\n"
            "Generated from the exit codes each command declares (its `--help` shows them too). A usage "
            "error (a misspelt command, option or choice) exits 1 for every command: 2 means changes, and "
            "CI must tell the two apart.\n\n"
            f"| command | exit codes |\n|---|---|\n{rows}\n")


def spark_settings_reference() -> str:
    """reference/spark-settings.md: the allow-list of Spark settings, each with what it takes."""
    rows = "\n".join(f"| `{key}` | {_cell(shape.words)} |" for key, shape in sorted(SAFE.items()))
    return ("# Spark settings a project sets without approval\n\n"
            "Generated from `schemaflow/safe_spark_settings.py`. A `spark.conf` setting of this list, with a value of "
            "the shape it takes, is a plain setting: a plan shows its change as any other. Every other setting, and "
            "one of these with a value of another shape, needs the operator's approval by its id, as a hook does "
            "(see [The project and its settings](../concepts/project.md#settings-that-run-code) and "
            "[Security model](../guides/security.md)); the settings that choose the metastore, the warehouse or the "
            "master are refused wherever they are written. Each key is one every supported Spark release (3.5, 4.0 "
            "to 4.3) defines, and each shape admits Spark's default and holds values Spark accepts "
            "(`tests/test_code_approval_spark.py` asks the installed Spark), but for delta-spark's own: its session "
            "extension and catalog, each by its one class, and `spark.databricks.delta.snapshotPartitions` (see "
            "[Delta Lake tables](../formats/delta.md#apply)). Values are written without spaces; an "
            "enumeration is read in any case.\n\n"
            f"| setting | takes |\n|---|---|\n{rows}\n")


def readers_reference() -> str:
    """reference/readers.md: change x reader -> verdict, with the source of each rule, from the registry."""
    parts = ["# Which engines still read a changed table\n",
             "Generated from the rules of `schemaflow/plan/reader_rules.py`. A project declares the engines that read "
             "its tables (`readers:` in `schemaflow.yaml`, see [YAML keys](yaml.md)), and the Spark release the plan "
             "is made for (`spark.release`, else the installed pyspark's) reads every table whether declared or not "
             "(without `readers:`, it is the only reader); each step of a plan then carries every reader's verdict "
             "on what it does, from these rules: **same** (reads it as before), **differs** (reads it, with the "
             "difference named), **cannot** (cannot read it, and why). A step with a verdict other than same is "
             "blocked unless destructive steps are allowed (`--allow-destructive`; in a pull request, the "
             "`schemaflow-allow-destructive` label): for the plan's own Spark, these are the breaks the step's "
             "hazards state. A blank cell: the rule says nothing of that reader, and a plan gives it no verdict.\n\n"
             "No rule speaks of column defaults (Iceberg's `initial-default` and `write-default`; Iceberg's Java "
             "library refuses a non-null one on a table before format version 3): schemaflow's model has none, so "
             "no step makes or changes one, and there is nothing to judge. A default another engine gave a field is "
             "read past and kept on its field by every commit schemaflow makes: who reads the table reads it as "
             "that engine left it.\n",
             "No rule judges the types some engines lack: "
             f"{', '.join(f'`{name}`' for name in reader_rules.UNDECLARABLE)} cannot be declared (`validate` refuses "
             "them as unknown types), so no plan brings one into a table. Iceberg's `variant` and nanosecond "
             "timestamps need format version 3, which schemaflow does not write (`format-version: 3` is refused). A "
             "Delta table's reader feature for them (`delta.feature.timestampNtz`, `delta.feature.variantType`) "
             "raises its protocol: rule `delta-protocol` below.\n"]
    for rule in rules():
        readers = [r for r in MATRIX_READERS if any(rule.judge(e, r) is not None for e in rule.examples)]
        header = " | ".join(_cell(r.label) for r in readers)
        rows = "\n".join(f"| {_cell(e.what)} ({e.format}) | "
                         + " | ".join(_verdict(e, r, rule) for r in readers) + " |" for e in rule.examples)
        parts.append(f"## {rule.title}\n\nRule `{rule.name}`. Source: {_cell(rule.source)}.\n\n"
                     f"| change | {header} |\n|---|{'---|' * len(readers)}\n{rows}\n")
    return "\n".join(parts)


def _verdict(event: Event, reader: Reader, rule: Rule) -> str:
    """A cell of the matrix: the rule's verdict in a word and its difference or barrier; blank where it has none."""
    verdict = rule.judge(event, reader)
    return "" if verdict is None else _cell(headline(verdict))


def yaml_reference() -> str:
    """reference/yaml.md: every key of every file format, from the JSON Schemas."""
    parts = ["# YAML keys\n",
             "Generated from the JSON Schemas that `validate` checks every file with; they are served with this "
             "site, under `schemas/`, for editors (see [Completion in your editor](../guides/editors.md)). "
             "`validate` checks more than a JSON Schema can (types, SQL, names, limits: see "
             "[What input is refused](limits.md)).\n"]
    for name, described in FILE_FORMATS.items():
        schema = _load(name)
        rows = "\n".join(f"| `{key}` | {_cell(kind)} | {'yes' if required else ''} | {_cell(rule)} |"
                         for key, kind, required, rule in _keys(schema, name, ""))
        parts.append(f"## {described}\n\n{_text(schema['title'])}. JSON Schema: [{name}](../../schemaflow/spec/schemas/{name}).\n\n"
                     f"| key | type | required | what it takes |\n|---|---|---|---|\n{rows}\n")
    return "\n".join(parts)


def _load(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((SCHEMAS / name).read_text())
    return loaded


def _resolve(node: dict[str, Any], within: str) -> tuple[dict[str, Any], str]:
    """``node`` with its ``$ref`` followed (its own keys win), and the file it was found in."""
    while "$ref" in node:
        target, _, pointer = node["$ref"].partition("#")
        within = target or within
        found: Any = _load(within)
        for part in filter(None, pointer.split("/")):
            found = found[part]
        node = {**found, **{k: v for k, v in node.items() if k != "$ref"}}
    return node, within


def _keys(node: dict[str, Any], within: str, prefix: str) -> Iterator[tuple[str, str, bool, str]]:
    """(key path, type, required, what it takes) for every key under ``node``, depth first."""
    node, within = _resolve(node, within)
    required = set(node.get("required", ()))
    for key, child in node.get("properties", {}).items():
        path = f"{prefix}{key}"
        resolved, where = _resolve(child, within)
        yield path, _type(resolved, where), key in required, _rule(resolved)
        yield from _keys(resolved, where, path + ".")
        for item in _item_kinds(resolved):
            yield from _keys(item, where, path + "[].")
        extra = resolved.get("additionalProperties")
        if isinstance(extra, dict) and "properties" in _resolve(extra, where)[0]:
            yield from _keys(extra, where, path + ".<name>.")


def _item_kinds(node: dict[str, Any]) -> list[dict[str, Any]]:
    """The schemas of a list's items: its ``items``, or both branches of an ``if`` on them (``partitioned_by``
    holds texts for an Iceberg table, mappings for a Hive one)."""
    items = node.get("items")
    if not isinstance(items, dict):
        return []
    return [items["then"], items["else"]] if "if" in items else [items]


def _type(node: dict[str, Any], within: str) -> str:
    """The kind of value ``node`` takes, in words."""
    if "enum" in node:
        return "one of " + ", ".join(f"`{value}`" for value in node["enum"])
    kinds = node.get("type", "")
    kinds = [kinds] if isinstance(kinds, str) else kinds
    shown = []
    for kind in kinds:
        if kind == "array" and isinstance(node.get("items"), dict):
            inner = []
            for item in _item_kinds(node):
                resolved, where = _resolve(item, within)
                inner.append("mappings" if resolved.get("type") == "object" else _type(resolved, where))
            shown.append(f"list of {' or '.join(inner)}")
        elif kind == "object" and isinstance(node.get("additionalProperties"), dict):
            shown.append("mapping of names to values")
        else:
            shown.append({"object": "mapping", "string": "text", "integer": "whole number",
                          "boolean": "true or false", "number": "number", "null": "nothing"}.get(kind, kind))
    return " or ".join(shown)


def _rule(node: dict[str, Any]) -> str:
    """What the schema says of a value: its description, its default, the bounds it sets and an example, as YAML."""
    said = [node["description"]] if "description" in node else []
    if "default" in node:
        said.append(f"default: `{_yaml(node['default'])}`")
    for keyword, words in (("minLength", "at least {} characters"), ("minimum", "at least {}"),
                           ("minItems", "at least {} items"), ("maxProperties", "at most {} keys")):
        if node.get(keyword) == 1 and keyword != "minimum":
            said.append("not empty" if keyword == "minLength" else words.format(1).rstrip("s"))
        elif keyword in node:
            said.append(words.format(node[keyword]))
    if node.get("uniqueItems"):
        said.append("no repeats")
    said += [f"e.g. `{_yaml(example)}`" for example in node.get("examples", ())[:1]]
    return "; ".join(said)


def _yaml(value: Any) -> str:
    """``value`` as it is written in a YAML file, on one line (a control character escaped, in double quotes)."""
    if isinstance(value, str) and any(character < " " for character in value):
        return json.dumps(value)
    return yaml.safe_dump(value, default_flow_style=True, width=1000).strip().removesuffix("\n...").strip()


def _text(text: str) -> str:
    """``text`` shown as written in Markdown: ``<database>`` is a placeholder, not an HTML tag."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _cell(text: str) -> str:
    """``text`` as one cell of a Markdown table."""
    return _text(text).replace("|", "\\|").replace("\n", " ")


if __name__ == "__main__":
    for name, text in generated().items():
        (ROOT / "docs" / name).write_text(text)
