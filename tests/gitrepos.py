"""Temporary git repositories holding a schemaflow project, for the tests that plan between refs."""
from __future__ import annotations

import shutil
from pathlib import Path

import git


def init_repo(path: Path) -> git.Repo:
    """A new repository at ``path`` on branch ``main``, with an author and no commit signing."""
    repo = git.Repo.init(path, initial_branch="main")
    with repo.config_writer() as config:
        config.set_value("user", "name", "schemaflow tests")
        config.set_value("user", "email", "tests@schemaflow.invalid")
        config.set_value("commit", "gpgsign", "false")
    return repo


# A fixed moment, so the same files and messages always make the same commit hashes.
FIXED_DATE = "2026-01-01T00:00:00+00:00"


def commit(repo: git.Repo, message: str) -> str:
    """Commit everything in the work tree (an empty commit when nothing changed); its hash."""
    repo.git.add(all=True)
    repo.git.commit("--allow-empty", "--quiet", "-m", message,
                    env={"GIT_AUTHOR_DATE": FIXED_DATE, "GIT_COMMITTER_DATE": FIXED_DATE})
    return repo.head.commit.hexsha


def example_repo(path: Path) -> git.Repo:
    """A new repository at ``path`` whose one commit, on main, is this repository's example project."""
    repo = init_repo(path)
    root = Path(__file__).resolve().parent.parent
    shutil.copytree(root / "schemas", path / "schemas")
    shutil.copy(root / "schemaflow.yaml", path)
    commit(repo, "the example project")
    return repo


def put_project(source: Path | None, project: Path) -> None:
    """Make ``project``'s schemas/ and schemaflow.yaml those of ``source`` (nothing when None)."""
    shutil.rmtree(project / "schemas", ignore_errors=True)
    (project / "schemaflow.yaml").unlink(missing_ok=True)
    if source is not None:
        shutil.copytree(source, project, dirs_exist_ok=True)


def edit(file: Path, old: str, new: str) -> None:
    """Replace the one occurrence of ``old`` in ``file`` with ``new``."""
    text = file.read_text()
    assert text.count(old) == 1, f"{old!r} is not in {file} exactly once"
    file.write_text(text.replace(old, new))


def put_files(root: Path, files: dict[str, str | None]) -> None:
    """Write each file of ``files`` (a path under ``root`` -> its text) or delete it (None)."""
    for name, text in files.items():
        path = root / name
        if text is None:
            path.unlink()
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
