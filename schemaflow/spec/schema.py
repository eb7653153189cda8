"""The shape of each file format, as JSON Schemas shipped with the package, and user-facing errors.

``schemas/table.json``, ``view.json``, ``source.json`` and ``settings.json`` say which keys a file may
have and what kind of value each holds (``common.json`` holds the parts they share; a source's
columns are ``table.json``'s). Every key not listed is refused, so a typo is caught rather than
ignored. jsonschema's findings are reworded for the person editing the YAML and placed at the
offending key or value. Each file is first checked by the schema compiled into a predicate
(``shape_check``); jsonschema walks only the files that predicate refuses.
"""
from __future__ import annotations

import json
from functools import cache
from importlib.resources import files
from typing import Any, cast
from collections.abc import Iterable, Mapping

from jsonschema import Draft202012Validator, ValidationError

from schemaflow.errors import Problem
from schemaflow.spec.shape_check import Check, compile_schema
from schemaflow.spec.yamlpos import Document

# JSON Schema types, and the Python types that YAML values of that type have.
_KINDS: dict[str, tuple[str, type | tuple[type, ...]]] = {
    "boolean": ("a boolean (true or false)", bool),  # before "number": a bool is an int to Python
    "number": ("a number", (int, float)),
    "integer": ("a whole number", int),
    "string": ("a string", str),
    "array": ("a list", list),
    "object": ("a mapping", dict),
}
# Mappings whose keys the user chooses: an entry is named by what it is.
_ENTRIES = {"properties": "property", "conf": "Spark setting"}


def check_shape(doc: Document, data: Any, schema: str) -> list[Problem]:
    """The problems of ``data`` (the document's data, or a stand-in for it) against ``<schema>.json``."""
    if _predicate(schema)(data):
        return []
    return _worded(doc, _validator(schema).iter_errors(data))


def check_against(doc: Document, data: Any, schema: Mapping[str, Any]) -> list[Problem]:
    """The problems of ``data`` (the document's data) against ``schema``, a JSON Schema that code gives (a catalog
    backend's for its settings, ``catalog.backends``), worded and placed as the files' own are."""
    return _worded(doc, Draft202012Validator(schema).iter_errors(data))


def _worded(doc: Document, errors: Iterable[ValidationError]) -> list[Problem]:
    problems = [problem for error in errors for problem in _problems(doc, error)]
    return sorted(problems, key=lambda p: (p.source.line, p.source.col, p.message))


@cache
def _predicate(schema: str) -> Check:
    return compile_schema(inlined_schema(schema))


@cache
def _validator(schema: str) -> Draft202012Validator:
    return Draft202012Validator(inlined_schema(schema))


@cache
def inlined_schema(schema: str) -> dict[str, Any]:
    """``<schema>.json`` with every ``$ref`` replaced by what it names.

    The schemas hold no cycle, so each reference is inlined once here rather than resolved for
    every value validated: in a warehouse of thousands of files, resolving the column's and the
    identifier's references was most of the validator's time.
    """
    return cast(dict[str, Any], _inlined(_load(schema), schema, {name: _load(name) for name in ("common", "table")}))


def _inlined(value: Any, document: str, documents: Mapping[str, Any]) -> Any:
    """``value`` (part of ``<document>.json``) with each ``{"$ref": "[file.json]#/path", ...}`` replaced by
    the schema it names, its other keys kept alongside."""
    if isinstance(value, list):
        return [_inlined(item, document, documents) for item in value]
    if not isinstance(value, dict):
        return value
    if "$ref" not in value:
        return {key: _inlined(item, document, documents) for key, item in value.items()}
    target, _, pointer = value["$ref"].partition("#")
    name = target.removesuffix(".json") or document
    referred: Any = documents[name] if name in documents else _load(name)
    for part in filter(None, pointer.split("/")):
        referred = referred[part]
    rest = {key: item for key, item in value.items() if key != "$ref"}
    return {**_inlined(referred, name, documents), **_inlined(rest, document, documents)}


def _load(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((files("schemaflow.spec") / "schemas" / f"{name}.json").read_text(encoding="utf-8"))
    return loaded


def _problems(doc: Document, error: ValidationError) -> list[Problem]:
    path = tuple(error.absolute_path)
    where = _where(path)
    # iter_errors fills in both on every error it yields; the stubs also allow jsonschema's private
    # placeholder for an error made by hand, which this module never sees.
    value, validator_value = cast(Any, error.instance), cast(Any, error.validator_value)
    if error.validator == "additionalProperties":
        allowed = ", ".join(sorted(_schema(error)["properties"]))
        return [
            Problem(doc.key(*path, key), f"unknown key '{key}' (expected one of: {allowed})")
            for key in sorted(set(value) - set(_schema(error)["properties"]))
        ]
    if error.validator == "required":
        return [
            Problem(doc.at(*path), f"missing required key '{key}'")
            for key in validator_value
            if key not in value
        ]
    if error.validator == "type":
        expected = validator_value if isinstance(validator_value, list) else [validator_value]
        kinds = _alternatives([_KINDS[kind][0] for kind in expected])
        if value is None:
            message = f"{where} has no value: write {kinds}"
        else:
            message = f"{where} must be {kinds}, not {_kind(value)}" + _quote_it(value, expected)
    elif error.validator == "enum":
        message = f"{where} must be one of: {', '.join(validator_value)} (not {value!r})"
    elif error.validator == "pattern":
        message = f"{where} {value!r} is not valid: {_schema(error)['description']}"
        if "propertyNames" in error.relative_schema_path:  # a key of the mapping at path: placed at the key
            return [Problem(doc.key(*path, value), message)]
    elif error.validator in ("minLength", "minItems", "minProperties"):
        message = f"{where} must not be empty"
    elif error.validator == "minimum":
        message = f"{where} must be at least {validator_value}"
    elif error.validator == "uniqueItems":
        message = f"{where} lists the same value more than once"
    elif error.validator == "maxProperties":
        message = (f"{where} names {', '.join(sorted(value))}: it holds at most {validator_value}; "
                   "give each its own entry")
    else:
        message = f"{where}: {error.message}"
    return [Problem(doc.at(*path), message)]


def _schema(error: ValidationError) -> Mapping[str, Any]:
    """The schema holding the keyword ``error`` breaks: an object (only a ``false`` schema is not one)."""
    assert isinstance(error.schema, Mapping), error.schema
    return error.schema


def _where(path: tuple[str | int, ...]) -> str:
    """How to name a value in a message: its key, or ``list[i]`` for a list item."""
    if not path:
        return "the file"
    if isinstance(path[-1], int):
        return f"{_where(path[:-1])}[{path[-1]}]"
    if len(path) > 1 and path[-2] in _ENTRIES:
        return f"{_ENTRIES[path[-2]]} '{path[-1]}'"
    return str(path[-1])


def _quote_it(value: Any, expected: list[str]) -> str:
    """How to write a text that YAML read as a mapping (``echo "a: $X"``: a colon and a space make a key):
    quote all of it. Empty for any other value."""
    if "string" not in expected or not isinstance(value, dict) or len(value) != 1:
        return ""
    (key, item), = value.items()
    if isinstance(item, (dict, list)):
        return ""
    text = f"{key}: {'' if item is None else item}".rstrip()
    quoted = "'" + text.replace("'", "''") + "'"
    return f": YAML reads 'key: value' as a mapping; quote the whole text to keep it one: {quoted}"


def _kind(value: Any) -> str:
    """What a YAML value is, in the words of ``_KINDS`` (a date, say, otherwise)."""
    for words, python_type in _KINDS.values():
        if isinstance(value, python_type):
            return words
    return f"a {type(value).__name__}"


def _alternatives(words: list[str]) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"
