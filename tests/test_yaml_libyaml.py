"""libyaml composes schema files; PyYAML's pure-Python composer must read them no differently.

Every YAML file of the test corpus and of the example warehouse is read both ways: the same data,
positions, texts as written and problems (at the same places, with the same words).
"""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from schemaflow.errors import SpecError
from schemaflow.spec import yamlpos

ROOT = Path(__file__).resolve().parent.parent
FILES = sorted(p for p in [*(ROOT / "tests" / "cases").rglob("*"), *(ROOT / "schemas").rglob("*"),
                           *(ROOT / "migrations").rglob("*"), ROOT / "schemaflow.yaml"]
               if p.is_file() and p.suffix.lower() in (".yaml", ".yml"))


def read(path: Path, compose) -> object:
    saved = yamlpos.compose
    yamlpos.compose = compose
    try:
        doc = yamlpos.load_yaml(path, path.name)
        return tuple(doc.read)  # data, values, keys, texts, plain
    except SpecError as error:
        return [str(p) for p in error.problems]
    finally:
        yamlpos.compose = saved


def test_libyaml_is_what_schemaflow_reads_with() -> None:
    assert yaml.__with_libyaml__
    for path in sorted((ROOT / "schemas").rglob("*.yaml")):
        node = yamlpos.compose(path.read_text())
        assert node is not None and not isinstance(node.start_mark, yaml.Mark)  # libyaml's mark, not PyYAML's


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(ROOT)) for p in FILES])
def test_both_parsers_read_every_file_alike(path: Path) -> None:
    assert read(path, yamlpos.compose) == read(path, yamlpos.compose_pure)


def test_a_file_the_same_in_two_trees_is_read_once(tmp_path: Path) -> None:
    import shutil

    from schemaflow.spec import load_catalog
    from schemaflow.spec.loader import _declared

    for tree in ("base", "head"):
        shutil.copytree(ROOT / "schemas", tmp_path / tree / "schemas")
    changed = tmp_path / "head" / "schemas" / "retail" / "orders.yaml"
    changed.write_text(changed.read_text() + "# changed\n")
    files = len(list((ROOT / "schemas").rglob("*.yaml")))
    load_catalog(tmp_path / "base")
    before = _declared.cache_info()
    load_catalog(tmp_path / "head")
    after = _declared.cache_info()
    assert (after.hits - before.hits, after.misses - before.misses) == (files - 1, 1)


def test_a_document_nested_past_what_libyaml_survives_is_refused_by_the_bounded_composer(tmp_path: Path) -> None:
    deep = tmp_path / "deep.yaml"
    deep.write_text("[" * 200_000 + "]" * 200_000)  # crashes libyaml's composer, recursing in C
    with pytest.raises(SpecError) as refused:
        yamlpos.load_yaml(deep, "deep.yaml")
    assert str(refused.value.problems[0]).startswith("deep.yaml:1:65: YAML nested more than 64 levels deep here")


def test_a_tree_libyaml_composed_is_held_to_the_same_bounds() -> None:
    nested = "a:\n" + "".join("  " * i + "- \n" for i in range(1, 70))
    root = yaml.compose(nested, Loader=yaml.CSafeLoader)
    assert yamlpos._aliased_within_bounds(root) is None
    laughs = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(6))
    assert yamlpos._aliased_within_bounds(yaml.compose(laughs, Loader=yaml.CSafeLoader)) is None
    assert yamlpos._aliased_within_bounds(yaml.compose((ROOT / "schemas" / "retail" / "orders.yaml").read_text(),
                                                       Loader=yaml.CSafeLoader)) == 0
    shared = "a: &a [x, y]\nb: *a\nc: *a\n"  # each alias adds what it names: 3 values
    assert yamlpos._aliased_within_bounds(yaml.compose(shared, Loader=yaml.CSafeLoader)) == 6


def test_aliases_that_nest_a_value_too_deep_are_refused_where_it_is_written(tmp_path: Path) -> None:
    # Each line is 50 levels deep as written; each alias puts the line before inside it.
    deep = tmp_path / "deep.yaml"
    deep.write_text("".join(f"a{i}: &a{i} " + "[" * 50 + (f"*a{i - 1}" if i else "x") + "]" * 50 + "\n"
                            for i in range(20)))
    with pytest.raises(SpecError) as refused:
        yamlpos.load_yaml(deep, "deep.yaml")
    assert [str(p) for p in refused.value.problems] == [
        "deep.yaml:1:22: YAML aliases nest this value more than 64 levels deep: schemaflow reads at most 64 levels; "
        "use fewer aliases"]


def test_a_file_without_anchors_is_held_to_the_bounds_as_it_is_built(tmp_path: Path) -> None:
    nested = tmp_path / "nested.yaml"
    nested.write_text("a:\n" + "".join("  " * i + "- \n" for i in range(1, 70)))
    refused = read(nested, yamlpos.compose)
    assert refused == read(nested, yamlpos.compose_pure)
    assert isinstance(refused, list) and refused[0].startswith("nested.yaml:65:") and "nested more than 64" in refused[0]


# Every first character PyYAML's implicit resolvers look at, and plain scalars that read as each type or as text.
SCALARS = ["~", "null", "Null", "NULL", "", "true", "True", "NO", "yes", "off", "On", "y", "n", "1.10", "030", "0x1F",
           "0o17", "0b101", "1_000", "+1", "-2", ".5", "1e3", "6.8523015e+5", "190:20:30", ".inf", "-.Inf", ".NaN",
           "2024-01-01", "2001-12-14t21:59:43.10-05:00", "<<", "=", "text", "-text", "+text", ".text", "1a", "ñ", "€"]


def test_libyaml_reads_each_scalar_as_the_same_type_as_pyyaml_s_own_resolver() -> None:
    """schemaflow's libyaml loader resolves tags without PyYAML's path-resolver bookkeeping (yamlpos._CLoader)."""
    text = "\n".join(f"k{i}: {value}" for i, value in enumerate(SCALARS)) + "\nq: '1'\nlist: [1, a, ~]\nm: {x: 2}\n"
    ours, theirs = yaml.compose(text, Loader=yamlpos._CLoader), yaml.compose(text, Loader=yaml.CSafeLoader)

    def tags(node: yaml.Node) -> list[tuple[str, object]]:
        if isinstance(node, yaml.ScalarNode):
            return [(node.tag, node.value)]
        children = node.value if isinstance(node, yaml.SequenceNode) else [c for pair in node.value for c in pair]
        return [(node.tag, None), *(t for child in children for t in tags(child))]

    assert tags(ours) == tags(theirs)
    assert {tag for tag, _ in tags(ours)} >= {f"tag:yaml.org,2002:{t}" for t in (
        "null", "bool", "int", "float", "timestamp", "merge", "value", "str", "seq", "map")}


@pytest.mark.parametrize("path", [ROOT / "schemas/retail/daily_revenue.yaml", ROOT / "schemas/retail/orders.yaml"],
                         ids=["view", "table"])
def test_a_document_pickled_is_its_path_and_text_and_reads_the_same_again(path: Path) -> None:
    """As a fork sends one back (``spec.loader``): its data and positions are read again when first asked for."""
    import pickle

    doc = yamlpos.load_yaml(path, path.name)
    sent = pickle.dumps(doc, protocol=pickle.HIGHEST_PROTOCOL)
    assert len(sent) < len(doc.text.encode()) + 200  # nothing read from the text goes with it
    back = pickle.loads(sent)
    assert (back.path, back.text) == (doc.path, doc.text)
    assert tuple(back.read) == tuple(doc.read) and back.data == doc.data
    assert back.within(("sql",), 2, 3) == doc.within(("sql",), 2, 3) and back.key("columns") == doc.key("columns")
