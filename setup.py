"""The package's links (Project-URL: its documentation, repository and issues), from where it is released.

pyproject.toml declares everything else. The addresses are not written there because they are not this
checkout's to know: a fork, a mirror or a private host each publishes its own. The release workflow gives
them from the repository it runs in (``.github/workflows/release.yml``); a build without them (a clone, a
git pin) carries no links rather than wrong ones.
"""
from __future__ import annotations

import os
from collections.abc import Mapping

REPOSITORY = "SCHEMAFLOW_REPOSITORY_URL"  # https://github.com/<owner>/<repository>
DOCUMENTATION = "SCHEMAFLOW_DOCS_URL"  # where .github/workflows/docs.yml publishes the site


def project_urls(env: Mapping[str, str]) -> dict[str, str]:
    """The links a build given ``env`` carries: the documentation's, the repository's and its issues'."""
    repository = env.get(REPOSITORY, "")
    urls = {"Documentation": env.get(DOCUMENTATION, ""), "Repository": repository,
            "Issues": f"{repository}/issues" if repository else ""}
    return {label: url for label, url in urls.items() if url}


if __name__ == "__main__":  # as setuptools' build backend runs it (where setuptools is to be had)
    from setuptools import setup

    setup(project_urls=project_urls(os.environ))
