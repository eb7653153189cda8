"""Without git on the PATH, the commands that read no repository work, and those that need git say so in one line.

GitPython refuses to load where no git runs (an ImportError, with a page of advice), so schemaflow imports it only
where a repository is read (``gitsource.require_git``). Each command runs with a PATH of the venv's folder alone.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.projects import schemaflow

NO_GIT = {"PATH": str(Path(sys.executable).parent)}
MISSING = "error: git is not on the PATH, and "
TO_DO = ": install git (e.g. apt-get install git), or add the folder that holds it to PATH"


def _committed(project: Path) -> None:
    for args in (("init", "-q"), ("add", "-A"), ("-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "x")):
        subprocess.run(["git", "-C", str(project), *args], check=True, capture_output=True)


def test_commands_that_read_no_repository_work_without_git(example: Path):
    _committed(example)
    for args, out in ((("validate",), "valid: "), (("--help",), "usage: "), (("fmt", "--check"), ""),
                      (("metastore", "status"), "metastore.local_server is 0: ")):
        ran = schemaflow(example, *args, env=NO_GIT)
        assert ran.returncode == 0, (args, ran.stderr)
        assert ran.stdout.startswith(out), (args, ran.stdout)
        assert "Traceback" not in ran.stderr and "git" not in ran.stderr, (args, ran.stderr)


def test_a_review_between_commits_without_git_says_what_is_missing_in_one_line(example: Path):
    _committed(example)
    ran = schemaflow(example, "plan", "--base", "HEAD", env=NO_GIT)
    assert ran.returncode == 1
    assert ran.stdout == ""
    assert ran.stderr == f"{MISSING}schemaflow reads the project's files at 'HEAD' from the repository with it{TO_DO}\n"


def test_the_commit_of_a_project_needs_git_only_in_a_repository(example: Path, tmp_path: Path):
    recorded = ("from schemaflow.errors import SchemaflowError\nfrom schemaflow.gitsource import commit_of\n"
                "try:\n    print(commit_of(sys.argv[1]))\nexcept SchemaflowError as error:\n    print(error)\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    for folder, said in ((outside, "None"), (example, MISSING.removeprefix("error: ") + "the project is in a git "
                                                      "repository: schemaflow records the commit its files come from on "
                                                      f"each object it writes, and reads it with git{TO_DO}")):
        if folder == example:
            _committed(example)
        ran = subprocess.run([sys.executable, "-c", f"import sys\n{recorded}", str(folder)], capture_output=True,
                             text=True, env={**NO_GIT, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)})
        assert ran.returncode == 0, ran.stderr
        assert ran.stdout == said + "\n"
