"""A small deterministic dependency graph: an order in which every node follows what it depends on.

Nodes are names; ``deps`` maps each node to the nodes that must come before it. When several
nodes are ready at once the smallest goes first, so the same graph always gives the same order.
A cycle is reported by naming one of its paths, the same one every time ("a -> b -> a").
"""
from __future__ import annotations

import heapq
from typing import Any
from collections.abc import Callable, Collection, Mapping


class CycleError(Exception):
    """The graph has a cycle; ``cycle`` lists it, first node repeated at the end."""

    def __init__(self, cycle: list[str]) -> None:
        self.cycle = cycle
        super().__init__(" -> ".join(cycle))


def topological_order(deps: Mapping[str, Collection[str]], key: Callable[[str], Any] | None = None) -> list[str]:
    """Every node of ``deps`` after the nodes it depends on, smallest ``key`` first among ready nodes.

    Dependencies that are not themselves keys of ``deps`` are ignored. Raises ``CycleError``.
    """
    rank = _ranking(key)
    waiting = {node: {d for d in needs if d in deps} for node, needs in deps.items()}
    dependents: dict[str, list[str]] = {node: [] for node in deps}
    for node, needs in waiting.items():
        for dep in needs:
            dependents[dep].append(node)
    ready = [rank(node) for node, needs in waiting.items() if not needs]
    heapq.heapify(ready)
    order: list[str] = []
    while ready:
        node = heapq.heappop(ready)[-1]
        order.append(node)
        for dependent in dependents[node]:
            waiting[dependent].discard(node)
            if not waiting[dependent]:
                heapq.heappush(ready, rank(dependent))
    if len(order) < len(waiting):
        raise CycleError(_find_cycle({n: needs for n, needs in waiting.items() if needs}, rank))
    return order


def _ranking(key: Callable[[str], Any] | None) -> Callable[[str], tuple]:
    """The sort key of a node: ``key(node)``, ties broken by name; the node itself comes last."""
    if key is None:
        return lambda node: (node,)
    return lambda node: (key(node), node)


def _find_cycle(blocked: Mapping[str, set[str]], rank: Callable[[str], tuple]) -> list[str]:
    """One cycle among nodes that all still wait on another blocked node.

    Walk from the smallest blocked node, always to its smallest dependency, until a node repeats:
    the loop found is then started at its own smallest node.
    """
    node = min(blocked, key=rank)
    seen: list[str] = []
    while node not in seen:
        seen.append(node)
        node = min(blocked[node], key=rank)
    loop = seen[seen.index(node):]
    start = loop.index(min(loop, key=rank))
    loop = loop[start:] + loop[:start]
    return loop + [loop[0]]
