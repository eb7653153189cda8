"""``schemaflow`` with a pause injected, for tests of crashes and races: ``python paused_apply.py POINT
MARKER ARGS...`` runs the command line on ARGS, and an apply that reaches POINT (``planned``,
``claimed``, ``<step>.<action>``, or ``~TEXT``: a progress report holding TEXT) creates the file MARKER and
waits until it is removed, so that a test can kill it or race another apply there."""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from schemaflow.applying import Pause
from schemaflow.cli import main


def pause_at(point: str, marker: Path) -> Pause:
    def pause(reached: str) -> None:
        if reached != point and not (point.startswith("~") and point[1:] in reached):
            return
        marker.write_text(str(os.getpid()))
        while marker.exists():
            time.sleep(0.05)
    return pause


if __name__ == "__main__":
    point, marker, *arguments = sys.argv[1:]
    sys.exit(main(arguments, pause=pause_at(point, Path(marker))))
