"""What a team pins: the distribution's name, its licence and its version, as the package says them."""
from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import tomllib
from importlib.metadata import metadata, version
from pathlib import Path
from types import ModuleType

import yaml
from packaging.requirements import Requirement

import schemaflow

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
PROJECT, PROJECT_SCM = PYPROJECT["project"], PYPROJECT["tool"]["setuptools_scm"]


def test_the_distribution_is_not_the_unrelated_schemaflow_on_the_package_index() -> None:
    assert PROJECT["name"] == schemaflow.DISTRIBUTION != "schemaflow"
    assert PROJECT["scripts"] == {"schemaflow": "schemaflow.cli:run"}  # the command keeps its name


def test_the_version_is_the_installed_one_and_the_command_says_it() -> None:
    assert "version" in PROJECT["dynamic"] and "version" not in PROJECT  # from git tags, never by hand
    assert schemaflow.__version__ == version(schemaflow.DISTRIBUTION)
    said = subprocess.run([sys.executable, "-m", "schemaflow", "--version"], capture_output=True, text=True,
                          check=True).stdout
    assert said == f"schemaflow {schemaflow.__version__}\n"


def test_the_version_is_a_release_or_a_development_build_of_a_commit_never_unknown() -> None:
    # X.Y.Z on a tag; X.Y.Z.devN+g<commit> after it (.d<date> while the tree has uncommitted changes).
    assert re.fullmatch(r"\d+\.\d+\.\d+(\.dev\d+\+g[0-9a-f]{7,40}(\.d\d{8})?)?", schemaflow.__version__), (
        schemaflow.__version__)
    assert PROJECT_SCM["fallback_version"] == "0.0.0"  # no local part to leak into every untagged build


def test_the_licence_is_apache_2_in_the_file_and_the_metadata() -> None:
    assert (ROOT / "LICENSE").read_text().split()[:4] == ["Apache", "License", "Version", "2.0,"]
    assert PROJECT["license"] == "Apache-2.0" == metadata(schemaflow.DISTRIBUTION)["License-Expression"]


def test_the_changelog_has_a_section_for_what_is_not_released_yet() -> None:
    headings = [line for line in (ROOT / "CHANGELOG.md").read_text().splitlines() if line.startswith("## ")]
    assert headings[0] == "## Unreleased" and "## 0.1.0" in headings


def _spark_versions() -> ModuleType:
    spec = importlib.util.spec_from_file_location("spark_versions", ROOT / ".ci" / "spark_versions.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_the_pyspark_pin_admits_each_minor_release_ci_runs_and_the_readme_table_lists_them() -> None:
    """The pin, the releases .ci/spark_versions.py runs beside the newest, and the README's table agree:
    a release the pin admits and no run tests (or a table left from other runs) fails here."""
    ci = _spark_versions()
    (pin,) = [Requirement(d) for d in PROJECT["optional-dependencies"]["spark"] if Requirement(d).name == "pyspark"]
    minors = {f"3.5.{n}" for n in range(10)} | {f"4.{m}.{n}" for m in range(6) for n in range(10)}
    admitted = {".".join(v.split(".")[:2]) for v in minors if pin.specifier.contains(v)}
    tested = {".".join(v.split(".")[:2]) for v in ci.RELEASES}
    text = (ROOT / "README.md").read_text()
    table = text[text.index(ci.BEGIN):text.index(ci.END)]
    listed = re.findall(r"^\| (\d+\.\d+\.\d+)", table, re.MULTILINE)
    newest = ".".join(listed[0].split(".")[:2])
    assert admitted == tested | {newest}, (admitted, tested, newest)
    assert sorted(listed[1:]) == sorted(ci.RELEASES)


def test_a_tag_is_built_as_ci_builds_every_change_then_published_by_trusted_publishing_with_no_token() -> None:
    workflow = yaml.safe_load((ROOT / ".github/workflows/release.yml").read_text())
    assert workflow.pop(True) == {"push": {"tags": ["v[0-9]+.[0-9]+.[0-9]+"]}}  # YAML 1.1 reads `on` as true
    assert workflow["permissions"] == {"contents": "read"}
    build, publish = workflow["jobs"]["build"], workflow["jobs"]["publish"]
    # The build the tag gets is the one .ci/run gives every change, with the tag's version required of both files.
    assert [s["run"] for s in build["steps"] if "run" in s] == ['bash .ci/release_build "${GITHUB_REF_NAME#v}"']
    assert ".ci/release_build\n" in (ROOT / ".ci/run").read_text()
    assert build["steps"][0]["with"] == {"persist-credentials": False, "fetch-depth": 0}  # the tag, in the history
    # The package's links: the repository the workflow runs in, and the site docs.yml publishes from it.
    [built] = [s for s in build["steps"] if "run" in s]
    assert built["env"] == {
        "SCHEMAFLOW_REPOSITORY_URL": "${{ github.server_url }}/${{ github.repository }}",
        "SCHEMAFLOW_DOCS_URL": "${{ vars.DOCS_URL || format('https://{0}.github.io/{1}/', github.repository_owner, "
                               "github.event.repository.name) }}"}
    assert "permissions" not in build and "environment" not in build
    # Only the job that publishes what the build kept may ask for an identity, in the environment the index trusts.
    assert (publish["needs"], publish["environment"], publish["permissions"]) == ("build", "pypi", {"id-token": "write"})
    assert [s["uses"].split("@")[0] for s in publish["steps"]] == ["actions/download-artifact",
                                                                 "pypa/gh-action-pypi-publish"]
    assert all("with" not in s or not {"password", "user"} & s["with"].keys() for s in publish["steps"])
    for job in (build, publish):
        for step in job["steps"]:
            assert "run" in step or re.fullmatch(r"(actions|pypa)/[\w-]+@[0-9a-f]{40}", step["uses"]), step


def test_the_docs_site_is_built_strict_from_main_and_deployed_by_a_job_alone_allowed_to_write_pages() -> None:
    workflow = yaml.safe_load((ROOT / ".github/workflows/docs.yml").read_text())
    assert workflow.pop(True) == {"push": {"branches": ["main"]}}
    assert workflow["permissions"] == {"contents": "read"}
    build, deploy = workflow["jobs"]["build"], workflow["jobs"]["deploy"]
    assert [s["run"] for s in build["steps"] if "run" in s] == [
        "python3 -m venv .venv && .venv/bin/pip install -e '.[docs]'", ".venv/bin/mkdocs build --strict"]
    assert "docs" in PROJECT["optional-dependencies"] and "permissions" not in build
    assert build["steps"][0]["with"] == {"persist-credentials": False}
    assert (deploy["needs"], deploy["permissions"]) == ("build", {"pages": "write", "id-token": "write"})
    assert deploy["environment"]["name"] == "github-pages"
    for job in (build, deploy):
        for step in job["steps"]:
            assert "run" in step or re.fullmatch(r"actions/[\w-]+@[0-9a-f]{40}", step["uses"]), step


def test_a_build_links_the_repository_and_the_docs_it_is_given_and_nothing_it_is_not() -> None:
    """setup.py, as the build backend runs it, given the release workflow's addresses or none (a clone, a git pin)."""
    import runpy

    project_urls = runpy.run_path(str(ROOT / "setup.py"), run_name="links")["project_urls"]
    assert "urls" in PROJECT["dynamic"] and "urls" not in PROJECT  # never an address written for every fork
    given = {"SCHEMAFLOW_REPOSITORY_URL": "https://github.com/team/schemas-tool",
             "SCHEMAFLOW_DOCS_URL": "https://team.github.io/schemas-tool/"}
    assert project_urls(given) == {"Documentation": "https://team.github.io/schemas-tool/",
                                   "Repository": "https://github.com/team/schemas-tool",
                                   "Issues": "https://github.com/team/schemas-tool/issues"}
    assert project_urls({}) == {}
    assert project_urls({"SCHEMAFLOW_DOCS_URL": "https://docs.example.com/"}) == {
        "Documentation": "https://docs.example.com/"}


def test_a_release_build_without_its_links_is_refused_before_anything_is_built() -> None:
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("SCHEMAFLOW_")}
    result = subprocess.run(["bash", str(ROOT / ".ci/release_build"), "1.2.0"], capture_output=True, text=True,
                            env=env | {"SCHEMAFLOW_REPOSITORY_URL": "https://github.com/team/schemas-tool"}, timeout=60)
    assert result.returncode == 1
    assert result.stdout == ("a release names its repository and its documentation: set SCHEMAFLOW_REPOSITORY_URL "
                             "and SCHEMAFLOW_DOCS_URL\n")
