"""The plan as stable JSON: the same document ``plan --out`` saves and ``apply`` loads."""
from __future__ import annotations

from schemaflow.render.review import Review


def render(review: Review) -> str:
    return review.plan.to_json()
