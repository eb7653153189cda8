"""A plan with what a reviewer reads beside it: what it compares, and what the views in it read.

The plan alone is what ``apply`` runs; a reviewer also wants to know what it was planned against
(the metastore, a snapshot, another git ref), whether partition counts could be known, and how the
objects it touches depend on each other. Every way of planning returns a ``Review``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from collections.abc import Mapping

from schemaflow.capabilities import Capabilities
from schemaflow.catalog.backends import backend_capabilities, backend_names
from schemaflow.errors import SchemaflowError
from schemaflow.output_safety import one_line
from schemaflow.plan.plan import Plan


@dataclass(frozen=True)
class Review:
    plan: Plan
    head: str = "the working tree"     # whose schemas it reaches, in words
    counts_from: str | None = "the metastore"  # where partition counts came from; None: they are unknown
    reads: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # "db.view" -> the objects it reads

    @property
    def base(self) -> str:
        """What the plan starts from, in words ("origin/main", "the snapshot live.json", "the Iceberg REST catalog"),
        as the plan records it."""
        return self.plan.against or f"the {self.catalog}"

    @property
    def catalog(self) -> str:
        """What the plan's catalog is called ("metastore", "Glue Data Catalog")."""
        return capabilities_of(self.plan).noun


def capabilities_of(plan: Plan) -> Capabilities:
    """The capabilities of the catalog backend ``plan`` was made for, which word it; ``SchemaflowError`` where that
    backend is not installed here."""
    if plan.catalog not in backend_names():
        raise SchemaflowError(f"the plan was made for the catalog backend '{one_line(plan.catalog)}', which is not "
                              f"installed here (the backends are {', '.join(backend_names())}): install it to show "
                              "the plan as apply would run it")
    return backend_capabilities(plan.catalog)
