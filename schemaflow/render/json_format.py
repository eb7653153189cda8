"""The plan as stable JSON: the same document ``plan --out`` saves and ``apply`` loads."""
from __future__ import annotations

from schemaflow.plan.plan import Plan


def render(plan: Plan) -> str:
    return plan.to_json()
