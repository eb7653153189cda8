"""The ``schemaflow`` command run in the test process (sharing its Spark session), its output captured."""
from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass

from schemaflow import cli


@dataclass(frozen=True)
class Ran:
    code: int
    out: str
    err: str

    @property
    def said(self) -> str:
        """Everything it printed: the plan on stdout, errors on stderr."""
        return self.out + self.err


def schemaflow(*args: str) -> Ran:
    """``schemaflow ARGS`` through ``cli.main``; a usage error's exit code is caught like any other."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main(list(args))
        except SystemExit as stop:  # argparse
            code = int(stop.code or 0)
    return Ran(code, out.getvalue(), err.getvalue())
