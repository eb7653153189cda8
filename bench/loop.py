"""The loop a newcomer runs most, timed as a user runs it: change a schema, ``apply``, ``plan``.

    .venv/bin/python -m bench.loop [--rounds 3]

The README's example warehouse is applied to two projects side by side: one on the embedded Derby metastore as
schemaflow serves it by default (its local metastore server, ``catalog.hive.local_server``, which apply writes through)
and one on a standalone Thrift metastore server (``tests/metastore_server.py``, Derby behind it). Each round changes
the comment of ``retail.orders`` in both, then runs ``apply --auto-approve``, the ``plan`` right after it, and a
second ``plan`` (a warm one: nothing started since the last). Reported: the median of each, and the plan after an
apply against the warm plan (the goal: within 1.5x).
"""
from __future__ import annotations

import argparse
import os
import statistics
import tempfile
from contextlib import ExitStack
from pathlib import Path

import pyspark

from bench.commands import Setups, example_projects, timed
from bench.common import positive, progress
from schemaflow.project import ENV_LOCAL_SERVER

SETUPS: Setups = {"embedded, served (default)": ({ENV_LOCAL_SERVER: "15"}, False), "Thrift server": ({}, True)}
STEPS = ("apply", "plan after apply", "warm plan")
COMMENT = "comment: One row per order line"


def _change(project: Path, round: int) -> None:
    """A change the next apply makes: the comment of ``retail.orders``, another each round."""
    orders = project / "schemas" / "retail" / "orders.yaml"
    lines = [f"{COMMENT} (round {round})" if line.startswith(COMMENT) else line
             for line in orders.read_text().splitlines()]
    orders.write_text("\n".join(lines) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=positive, default=3, help="rounds of change, apply, plan, plan (3)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="schemaflow-loop-") as work, ExitStack() as stack:
        projects = example_projects(Path(work), stack, SETUPS)
        for name, (project, env) in projects.items():
            progress(f"applying the example to the {name} metastore")
            timed(project, env, "apply", "--auto-approve")
        times: dict[tuple[str, str], list[float]] = {}
        for round in range(1, args.rounds + 1):
            for name, (project, env) in projects.items():
                _change(project, round)
                taken = [timed(project, env, "apply", "--auto-approve"), timed(project, env, "plan"),
                         timed(project, env, "plan")]
                for step, seconds in zip(STEPS, taken, strict=True):
                    times.setdefault((step, name), []).append(seconds)
                progress(f"round {round} on {name}: " + ", ".join(f"{step} {t:.2f} s" for step, t in zip(STEPS, taken, strict=True)))
    medians = {key: statistics.median(values) for key, values in times.items()}
    print(f"The apply-then-plan loop on the example warehouse, new process each, median of {args.rounds} rounds "
          f"({os.cpu_count()} cores, pyspark {pyspark.__version__}):\n")
    print("| command | " + " | ".join(SETUPS) + " |")
    print("|---|" + "---|" * len(SETUPS))
    for step in STEPS:
        print(f"| {step} | " + " | ".join(f"{medians[step, name]:.2f} s" for name in SETUPS) + " |")
    print("| plan after apply / warm plan | " + " | ".join(
        f"{medians['plan after apply', name] / medians['warm plan', name]:.2f}x" for name in SETUPS) + " |")


if __name__ == "__main__":
    main()
