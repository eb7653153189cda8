"""The dependency graph: dependencies first, ties by name (or key), cycles named the same way every time."""
from __future__ import annotations

import pytest

from schemaflow.graph import CycleError, topological_order


@pytest.mark.parametrize(
    "deps, expected",
    [
        ({}, []),
        ({"b": [], "a": [], "c": []}, ["a", "b", "c"]),
        ({"a": ["b"], "b": ["c"], "c": []}, ["c", "b", "a"]),
        # d and b become ready together once a is out: the smaller name goes first.
        ({"a": [], "d": ["a"], "b": ["a"], "c": ["b", "d"]}, ["a", "b", "d", "c"]),
        # Dependencies that are not nodes (tables, here) are ignored.
        ({"v2": ["v1", "db.t"], "v1": ["db.t"]}, ["v1", "v2"]),
        ({"a": ["b", "b"], "b": set()}, ["b", "a"]),
    ],
)
def test_order(deps: dict, expected: list[str]) -> None:
    assert topological_order(deps) == expected


def test_key_breaks_ties_among_ready_nodes() -> None:
    deps = {"a": [], "b": [], "c": [], "d": ["c"]}
    rank = {"a": 2, "b": 1, "c": 1, "d": 0}
    # b and c tie on key 1 and go by name; d (key 0) becomes ready only after c.
    assert topological_order(deps, key=rank.__getitem__) == ["b", "c", "d", "a"]


@pytest.mark.parametrize(
    "deps, cycle",
    [
        ({"a": ["a"]}, ["a", "a"]),
        ({"a": ["b"], "b": ["a"]}, ["a", "b", "a"]),
        # Found from any side, the cycle is told from its smallest node.
        ({"c": ["a"], "a": ["b"], "b": ["c"]}, ["a", "b", "c", "a"]),
        ({"z": ["y"], "y": ["x"], "x": ["z"], "w": []}, ["x", "z", "y", "x"]),
        # A node that only waits on a cycle is not part of it.
        ({"a": ["m"], "m": ["n"], "n": ["m"]}, ["m", "n", "m"]),
        # Two ways round: the smaller dependency is followed.
        ({"a": ["c", "b"], "b": ["a"], "c": ["a"]}, ["a", "b", "a"]),
    ],
)
def test_cycle_is_named(deps: dict, cycle: list[str]) -> None:
    with pytest.raises(CycleError) as caught:
        topological_order(deps)
    assert caught.value.cycle == cycle
    assert str(caught.value) == " -> ".join(cycle)
