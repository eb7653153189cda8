"""What hostile input costs ``schemaflow validate``: bounded per project, against bounded per file only.

A pull request's files are read by the pull-request job and by the apply job. Bounds that hold per
file let many files, each just within them, take minutes and gigabytes together. This benchmark
writes two projects and runs ``schemaflow validate`` on each, as a user would, in a process of its
own, twice: with schemaflow's bounds as they are, and with the project-wide bounds lifted (the
per-file bounds kept), which is how schemaflow read projects before they were bounded as a whole.

  aliases   20 files of 260 bytes each, whose aliases expand to about 672,000 values each (within the
            1,000,000 of one file): refused at the alias that takes the project past 100,000 values
            added by aliases, before anything is built
  large     one table file of 300,000 properties (5.5 MB): refused before it is read, as larger than
            2 MiB (lifted: read, composed and refused later for its list of property keys)

Both must end in a located error (exit code 1). Reported: wall seconds, CPU seconds and the peak
memory of the process, and the ratio of the lifted run to the bounded one.

    .venv/bin/python bench/hostile_input.py
"""
from __future__ import annotations

import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Runs the command in a process of its own; with "lifted", the project-wide bounds are as good as gone.
RUN = """
import resource, sys
from schemaflow.spec import yamlpos
if sys.argv[1] == "lifted":
    yamlpos.MAX_PROJECT_ALIASED = yamlpos.MAX_PROJECT_BYTES = yamlpos.MAX_FILE_BYTES = 10 ** 15
from schemaflow.cli import main
code = main(["--project", sys.argv[2], "validate"])
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.__stdout__)
sys.exit(code)
"""


def aliases(root: Path) -> None:
    for number in range(20):
        levels = ["a: &a [x, x, x, x, x, x, x, x, x]"]
        levels += [f"{b}: &{b} [{', '.join(['*' + a] * 9)}]" for a, b in zip("abcde", "bcdef", strict=True)]
        (root / "schemas/bad").mkdir(parents=True, exist_ok=True)
        (root / f"schemas/bad/t{number}.yaml").write_text(f"table: bad.t{number}\n" + "\n".join(levels) + "\n")


def large(root: Path) -> None:
    (root / "schemas/shop").mkdir(parents=True, exist_ok=True)
    with (root / "schemas/shop/t.yaml").open("w") as file:
        file.write("table: shop.t\ncolumns: [{name: id, type: int}]\nproperties:\n")
        file.writelines(f"  k{i}: v{i}\n" for i in range(300_000))


def measure(mode: str, project: Path) -> tuple[float, float, float, str]:
    """Wall seconds, CPU seconds and peak MB of one ``validate`` in a new process, and its first error line."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", RUN, mode, str(project)], cwd=ROOT, capture_output=True, text=True)
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert done.returncode == 1, (mode, done.stderr[-500:])
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    peak_kb = int(done.stdout.split()[-1])  # the process's own, as it reported it
    return wall, cpu, peak_kb / 1024, done.stderr.splitlines()[0][:110]


def main() -> None:
    print(f"python {sys.version.split()[0]} on {sys.platform}; each row one run of schemaflow validate")
    print(f"{'project':<9} {'bounds':<8} {'wall s':>8} {'cpu s':>8} {'peak MB':>8}  first line said")
    for name, make in (("aliases", aliases), ("large", large)):
        with tempfile.TemporaryDirectory() as folder:
            make(Path(folder))
            rows = {}
            for mode in ("bounded", "lifted"):
                print(f"{name}: {mode} ...", file=sys.stderr, flush=True)
                rows[mode] = measure(mode, Path(folder))
                wall, cpu, peak, said = rows[mode]
                print(f"{name:<9} {mode:<8} {wall:8.2f} {cpu:8.2f} {peak:8.0f}  {said}", flush=True)
            ratio = rows["lifted"][1] / max(rows["bounded"][1], 1e-3)
            print(f"{name:<9} {'ratio':<8} {'':>8} {ratio:7.0f}x")


if __name__ == "__main__":
    main()
