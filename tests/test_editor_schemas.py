"""The JSON Schemas shipped with the package, as an editor reads them (yaml-language-server): from
their files, each ``$ref`` resolved against the file it is in, one schema for every file of schemas/."""
from __future__ import annotations

import json
from importlib.resources import files
from pathlib import Path
from urllib.parse import urlparse
from urllib.request import url2pathname

import pytest
import yaml
from jsonschema import Draft202012Validator
from referencing import Registry, Resource

ROOT = Path(__file__).resolve().parent.parent
FOLDER = Path(str(files("schemaflow.spec") / "schemas"))


def validator(name: str) -> Draft202012Validator:
    """A validator of ``<name>.json`` that reaches the other files only by their URIs, as an editor does."""
    def retrieve(uri: str) -> Resource:
        return Resource.from_contents(json.loads(Path(url2pathname(urlparse(uri).path)).read_text()))

    schema = {**json.loads((FOLDER / f"{name}.json").read_text()), "$id": (FOLDER / f"{name}.json").as_uri()}
    return Draft202012Validator(schema, registry=Registry(retrieve=retrieve))


def problems(name: str, data: object) -> list[str]:
    return sorted(error.message for error in validator(name).iter_errors(data))


@pytest.mark.parametrize("path", sorted((ROOT / "schemas").rglob("*.yaml")), ids=lambda p: p.stem)
def test_every_example_schema_file_is_valid_under_the_one_editor_schema(path):
    assert problems("schema-file", yaml.safe_load(path.read_text())) == []


def test_the_editor_schema_tells_tables_views_and_sources_apart_and_finds_typos():
    assert problems("schema-file", {"table": "a.t", "colums": []}) == [
        "'columns' is a required property", "Additional properties are not allowed ('colums' was unexpected)"]
    assert problems("schema-file", {"view": "a.v", "sql": "SELECT 1 AS x", "format": "orc"}) == [
        "Additional properties are not allowed ('format' was unexpected)"]
    assert problems("schema-file", {"source": "a.s", "columns": [{"name": "x", "type": "int"}]}) == []
    assert problems("schema-file", {"source": "a.s", "columns": [{"name": "x", "type": "int"}], "sql": "x"}) == [
        "Additional properties are not allowed ('sql' was unexpected)"]


def test_migrations_and_settings_are_valid_under_their_editor_schemas():
    for path in sorted((ROOT / "migrations").glob("*.yaml")):
        assert problems("migration", yaml.safe_load(path.read_text())) == []
    assert problems("settings", yaml.safe_load((ROOT / "schemaflow.yaml").read_text())) == []
    assert problems("settings", {"targets": {"dev": {"database_names": {"retail": "dev retail"}}}}) != []
