"""The storage examples of docs/concepts/objects.md are files schemaflow accepts, as written there."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from schemaflow.spec.declaration import read_object
from schemaflow.spec.yamlpos import load_yaml

PAGE = (Path(__file__).resolve().parent.parent / "docs" / "concepts" / "objects.md").read_text()
SECTION = PAGE[PAGE.index("How its files are stored"):PAGE.index("What a change to storage does")]
BLOCKS = re.findall(r"```yaml\n(.*?)```", SECTION, re.DOTALL)
COLUMNS = "columns:\n  - {name: customer_id, type: bigint}\n  - {name: order_id, type: bigint}\n"


def test_the_section_has_its_examples():
    assert len(BLOCKS) == 4


@pytest.mark.parametrize("block", BLOCKS)
def test_each_storage_example_is_accepted(tmp_path: Path, block: str) -> None:
    text = block if block.startswith("table:") else "table: shop.t\n" + block + COLUMNS
    path = tmp_path / "t.yaml"
    path.write_text(text)
    declaration = read_object(load_yaml(path, "t.yaml"))
    assert declaration.problems == () and declaration.obj is not None
