"""The compiled shape check agrees with jsonschema: it never accepts what jsonschema refuses."""
from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from schemaflow.errors import SpecError
from schemaflow.spec.schema import inlined_schema
from schemaflow.spec.shape_check import compile_schema
from schemaflow.spec.yamlpos import load_yaml

ROOT = Path(__file__).resolve().parent.parent
SCHEMAS = ("table", "view", "source", "migration", "settings", "schema-file")


@cache
def corpus() -> list[tuple[str, Any]]:
    """Every YAML document in the tests' cases and the example project that schemaflow reads."""
    found = []
    for path in sorted([*(ROOT / "tests" / "cases").rglob("*.yaml"), *(ROOT / "schemas").rglob("*.yaml"),
                        *(ROOT / "migrations").rglob("*.yaml"), ROOT / "schemaflow.yaml"]):
        try:
            found.append((str(path.relative_to(ROOT)), load_yaml(path, str(path)).data))
        except SpecError:
            continue
    return found


@pytest.mark.parametrize("name", SCHEMAS)
def test_on_every_file_the_tests_hold_it_decides_as_jsonschema_does(name: str) -> None:
    check, validator = compile_schema(inlined_schema(name)), Draft202012Validator(inlined_schema(name))
    files = corpus()
    assert len(files) > 300
    differ = [path for path, data in files if check(data) != validator.is_valid(data)]
    assert differ == []
    assert any(check(data) for _, data in files)  # each schema accepts some file, refuses others
    assert not all(check(data) for _, data in files)


# Values a YAML file can hold: what a mutation puts in place of a key's value or a list item.
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.floats(-2, 2, allow_nan=False) | st.sampled_from(
        ["", "x", "bigint", "orders", "shop.orders", "parquet", "cascade", "a b", "1x", "struct<a:int>"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["name", "type", "comment", "columns", "table", "view", "sql", "format", "x"]), inner,
        max_size=3),
    max_leaves=8)


def mutate(data: Any, draw: st.DrawFn) -> Any:
    """``data`` with one value somewhere replaced, removed or joined by another."""
    if isinstance(data, dict) and data:
        key = draw(st.sampled_from(sorted(data)))
        action = draw(st.sampled_from(["replace", "remove", "add", "descend"]))
        if action == "replace":
            return {**data, key: draw(VALUES)}
        if action == "remove":
            return {name: value for name, value in data.items() if name != key}
        if action == "add":
            return {**data, draw(st.sampled_from(["extra", "name", "columns", "type"])): draw(VALUES)}
        return {**data, key: mutate(data[key], draw)}
    if isinstance(data, list) and data:
        index = draw(st.integers(0, len(data) - 1))
        return [*data[:index], mutate(data[index], draw), *data[index + 1:]]
    return draw(VALUES)


@st.composite
def mutated(draw: st.DrawFn) -> tuple[str, Any]:
    name = draw(st.sampled_from(SCHEMAS))
    _, data = draw(st.sampled_from(corpus()))
    for _ in range(draw(st.integers(1, 3))):
        data = mutate(data, draw)
    return name, data


@settings(max_examples=400, deadline=None)
@given(mutated())
def test_it_never_accepts_a_mutated_file_jsonschema_refuses(case: tuple[str, Any]) -> None:
    name, data = case
    if compile_schema(inlined_schema(name))(data):
        assert Draft202012Validator(inlined_schema(name)).is_valid(data)


def test_a_keyword_it_cannot_judge_is_refused_when_compiled() -> None:
    with pytest.raises(ValueError, match="cannot compile the JSON Schema keyword.s. oneOf"):
        compile_schema({"type": "object", "oneOf": [{"required": ["a"]}, {"required": ["b"]}]})
    assert compile_schema({"type": "integer", "minimum": 1})(2)
    assert not compile_schema({"type": "integer"})(True)
    assert not compile_schema({"enum": ["a"]})(["a"])
    assert not compile_schema({"uniqueItems": True})(["a", "a"])
