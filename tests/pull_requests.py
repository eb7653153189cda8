"""A pull request merged into a repository of the example project, as CI sees it: the plan its reviewer reads
(text, and the comment as GitHub renders it) and ``apply --reviewed`` in the apply job."""
from __future__ import annotations

from pathlib import Path

import cmarkgfm
import git
import pytest

from tests.gitrepos import commit
from tests.inprocess import schemaflow

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE_SETTINGS = (ROOT / "schemaflow.yaml").read_text()


def merge(repo: git.Repo, settings: str) -> Path:
    """A pull request that changes only ``schemaflow.yaml`` to ``settings``, merged: its project folder."""
    project = Path(repo.working_tree_dir or "")
    (project / "schemaflow.yaml").write_text(settings)
    commit(repo, "a harmless-looking pull request")
    return project


def reviewed(project: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    """What the apply job rebuilds as the reviewed plan: the text plan, and the comment as GitHub shows it."""
    monkeypatch.chdir(project)
    text = schemaflow("plan", "--base", "HEAD~1", "--head", "HEAD", "--out", "reviewed.json")
    assert text.code == 2, text.said  # changes: never "No changes"
    comment = schemaflow("plan", "--base", "HEAD~1", "--head", "HEAD", "--format", "markdown")
    assert comment.code == 2, comment.said
    return text.out, github_html(comment.out)


def github_html(markdown: str) -> str:
    """The comment as GitHub's renderer (cmark-gfm) makes it, raw HTML kept as GitHub keeps it before it
    sanitises the result: what a forged comment would need to get through."""
    return cmarkgfm.github_flavored_markdown_to_html(markdown, options=cmarkgfm.Options.CMARK_OPT_UNSAFE)


def apply_reviewed(project: Path) -> tuple[int, str]:
    """``apply --reviewed reviewed.json --auto-approve`` in the project folder: its exit code and all it said."""
    ran = schemaflow("--project", str(project), "apply", "--reviewed", str(project / "reviewed.json"),
                     "--auto-approve")
    return ran.code, ran.said
