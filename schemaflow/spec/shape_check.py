"""A JSON Schema compiled into one Python predicate: is a file's data of the shape its schema says?

Almost every file of a project is valid, and on thousands of files jsonschema's validator, which
walks the schema afresh for every value, was a third of ``validate``'s time. The predicate is built
once per schema from the keywords the shipped schemas use, and answers only yes or no; a file it
says no to goes to jsonschema, whose findings become the errors the user reads.

It never says yes where jsonschema would say no: where the two might differ (a float such as
``1.0`` for an integer, list items that mix types under ``uniqueItems``) it says no, and jsonschema
decides. A keyword it does not know is an error when the schema is compiled, not a silent pass.
"""
from __future__ import annotations

import operator
import re
from typing import Any
from collections.abc import Callable, Mapping, Sized

Check = Callable[[Any], bool]

# Keywords that say nothing about validity.
_ANNOTATIONS = frozenset({"$schema", "$id", "$comment", "$defs", "title", "description", "default", "examples"})
_TYPES: dict[str, Check] = {
    "object": lambda value: isinstance(value, dict),
    "array": lambda value: isinstance(value, list),
    "string": lambda value: isinstance(value, str),
    "boolean": lambda value: isinstance(value, bool),
    "integer": lambda value: isinstance(value, int) and not isinstance(value, bool),
    "number": lambda value: isinstance(value, (int, float)) and not isinstance(value, bool),
    "null": lambda value: value is None,
}


def compile_schema(schema: Mapping[str, Any] | bool) -> Check:
    """The predicate of ``schema`` (its ``$ref`` already inlined): true only for data the schema accepts."""
    if isinstance(schema, bool):
        return lambda value: schema
    unknown = set(schema) - _ANNOTATIONS - set(_KEYWORDS)
    if unknown:
        raise ValueError(f"cannot compile the JSON Schema keyword(s) {', '.join(sorted(unknown))}")
    made = [_KEYWORDS[keyword](schema[keyword], schema) for keyword in sorted(schema) if keyword in _KEYWORDS]
    checks = tuple(check for check in made if check is not None)
    if len(checks) == 1:
        return checks[0]

    def every(value: Any) -> bool:  # a loop: all() over a generator is measurably slower here
        for check in checks:
            if not check(value):
                return False
        return True
    return every


def _type(expected: str | list[str], schema: Mapping[str, Any]) -> Check:
    kinds = [_TYPES[kind] for kind in ([expected] if isinstance(expected, str) else expected)]
    if len(kinds) == 1:
        return kinds[0]
    return lambda value: any(kind(value) for kind in kinds)


def _properties(properties: Mapping[str, Any], schema: Mapping[str, Any]) -> Check:
    checks = {name: compile_schema(sub) for name, sub in properties.items()}

    def each_property(value: Any) -> bool:
        if isinstance(value, dict):
            for name, item in value.items():
                check = checks.get(name)
                if check is not None and not check(item):
                    return False
        return True
    return each_property


def _additional(additional: Mapping[str, Any] | bool, schema: Mapping[str, Any]) -> Check:
    known = frozenset(schema.get("properties", ()))
    if additional is False:
        return lambda value: not isinstance(value, dict) or known.issuperset(value)
    check = compile_schema(additional)
    return lambda value: not isinstance(value, dict) or all(
        check(item) for name, item in value.items() if name not in known)


def _required(names: list[str], schema: Mapping[str, Any]) -> Check:
    return lambda value: not isinstance(value, dict) or all(name in value for name in names)


def _items(items: Mapping[str, Any] | bool, schema: Mapping[str, Any]) -> Check:
    check = compile_schema(items)

    def each_item(value: Any) -> bool:
        if isinstance(value, list):
            for item in value:
                if not check(item):
                    return False
        return True
    return each_item


def _pattern(pattern: str, schema: Mapping[str, Any]) -> Check:
    search = re.compile(pattern).search
    return lambda value: not isinstance(value, str) or search(value) is not None


def _enum(allowed: list[Any], schema: Mapping[str, Any]) -> Check:
    # Same type and equal, so that true is not 1: jsonschema tells them apart too.
    return lambda value: any(type(value) is type(option) and value == option for option in allowed)


def _unique(unique: bool, schema: Mapping[str, Any]) -> Check | None:
    if not unique:
        return None
    # Only lists of strings are judged here; jsonschema decides the rest.
    return lambda value: not isinstance(value, list) or (
        all(isinstance(item, str) for item in value) and len(set(value)) == len(value))


Keyword = Callable[[Any, Mapping[str, Any]], Check | None]  # (the keyword's value, its schema) -> a check


def _size(size: Callable[[Any], int | None], within: Callable[[int, int], bool]) -> Keyword:
    """A keyword bounding the size of values ``size`` measures (None: a value the keyword does not apply to)."""
    def make(bound: int, schema: Mapping[str, Any]) -> Check | None:
        return lambda value: (measured := size(value)) is None or within(measured, bound)
    return make


def _length_of(kind: type[Sized]) -> Callable[[Any], int | None]:
    return lambda value: len(value) if isinstance(value, kind) else None


def _minimum(bound: float, schema: Mapping[str, Any]) -> Check:
    return lambda value: not _TYPES["number"](value) or value >= bound


def _property_names(names: Mapping[str, Any] | bool, schema: Mapping[str, Any]) -> Check:
    check = compile_schema(names)
    return lambda value: not isinstance(value, dict) or all(check(name) for name in value)


def _if(condition: Mapping[str, Any] | bool, schema: Mapping[str, Any]) -> Check:
    test = compile_schema(condition)
    then, otherwise = compile_schema(schema.get("then", True)), compile_schema(schema.get("else", True))
    return lambda value: then(value) if test(value) else otherwise(value)


def _part_of_if(value: Any, schema: Mapping[str, Any]) -> None:
    """``then`` and ``else`` are checked by their ``if``; alone they mean nothing."""
    return None


_KEYWORDS: dict[str, Keyword] = {
    "type": _type,
    "properties": _properties,
    "additionalProperties": _additional,
    "required": _required,
    "items": _items,
    "pattern": _pattern,
    "enum": _enum,
    "uniqueItems": _unique,
    "minLength": _size(_length_of(str), operator.ge),
    "minItems": _size(_length_of(list), operator.ge),
    "minProperties": _size(_length_of(dict), operator.ge),
    "maxProperties": _size(_length_of(dict), operator.le),
    "minimum": _minimum,
    "propertyNames": _property_names,
    "if": _if,
    "then": _part_of_if,
    "else": _part_of_if,
}
