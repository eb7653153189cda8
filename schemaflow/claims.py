"""Claims: which run of ``schemaflow apply`` is changing an object right now, kept on the object itself.

Before an apply changes an existing object, it swaps the object's ``schemaflow.version`` for a claim
with the metastore's compare-and-swap: the swap succeeds only if the version is still the one the
plan saw, so of two appliers racing for one object exactly one gets it. Every later write to the
object is guarded by the claim, and the last one (the stamp) swaps the claim for the final version.
An object the apply creates carries the claim from its CREATE statement on.

A claim left on an object is the apply's journal, in the metastore where the next run (on any
machine) finds it: it names the run, its host and process, when it started, and the kinds of
step it had planned for the object, so a run after a crash knows the object is half-done and what
to finish. A claim whose process is gone (same host) is taken over by the next apply; one from
another host may still be running, so taking it over needs ``--take-over``.
"""
from __future__ import annotations

import json
import os
import socket
import uuid
from dataclasses import dataclass, replace
from datetime import datetime, UTC

CLAIM_PREFIX = "claim:"


@dataclass(frozen=True)
class Claim:
    run: str
    host: str
    pid: int
    since: str                          # UTC, ISO 8601
    steps: tuple[str, ...] = ()         # the kinds of step planned for the object
    cascade: bool = False               # whether a column change was to rewrite every partition

    @property
    def token(self) -> str:
        """The value of ``schemaflow.version`` while the object is claimed."""
        data = {"run": self.run, "host": self.host, "pid": self.pid, "since": self.since}
        if self.steps:
            data["steps"] = list(self.steps)
        if self.cascade:
            data["cascade"] = True
        return CLAIM_PREFIX + json.dumps(data, sort_keys=True, separators=(",", ":"))

    def for_object(self, steps: tuple[str, ...], cascade: bool) -> Claim:
        return replace(self, steps=steps, cascade=cascade)

    def describe(self) -> str:
        return f"run {self.run} on {self.host} (pid {self.pid}) since {self.since}"

    def alive(self) -> bool | None:
        """Whether the claiming process still runs: known on the same host only (None: cannot tell)."""
        if self.host != socket.gethostname():
            return None
        if self.pid == os.getpid():
            return True
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:  # someone else's live process
            return True
        return True


RUNNING, ELSEWHERE, STOPPED = "running", "elsewhere", "stopped"


def standing(claim: Claim) -> str:
    """What a claim found by a new run means: its run is ``RUNNING`` here, may run ``ELSEWHERE``
    (another host: only ``--take-over`` takes it), or ``STOPPED`` (its work is the new run's to finish)."""
    alive = claim.alive()
    return RUNNING if alive else ELSEWHERE if alive is None else STOPPED


def new_run() -> Claim:
    """The claim of a new apply run in this process."""
    return Claim(run=uuid.uuid4().hex[:12], host=socket.gethostname(), pid=os.getpid(),
                 since=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))


def parse_claim(version: str | None) -> Claim | None:
    """The claim a ``schemaflow.version`` value holds, or None when it is a version (or absent)."""
    if not version or not version.startswith(CLAIM_PREFIX):
        return None
    try:
        data = json.loads(version[len(CLAIM_PREFIX):])
        return Claim(run=str(data["run"]), host=str(data["host"]), pid=int(data["pid"]), since=str(data["since"]),
                     steps=tuple(data.get("steps", ())), cascade=bool(data.get("cascade", False)))
    except (ValueError, KeyError, TypeError):
        # Unreadable, but still a claim: nobody can tell whether its run is alive.
        return Claim(run="unknown", host="unknown", pid=0, since="unknown")


def settled(version: str | None) -> str | None:
    """``version`` where it is an object's version; None where it is absent or a claim: a stopped run's claim stands in
    for the version its object had, which is lost (kept on a backup, it would say "left half-done" of it for ever)."""
    return version if parse_claim(version) is None and version else None
