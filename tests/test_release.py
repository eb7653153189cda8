"""What a team pins: the distribution's name, its licence and its version, as the package says them."""
from __future__ import annotations

import subprocess
import sys
import tomllib
from importlib.metadata import metadata, version
from pathlib import Path

import schemaflow

ROOT = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def test_the_distribution_is_not_the_unrelated_schemaflow_on_the_package_index() -> None:
    assert PROJECT["name"] == schemaflow.DISTRIBUTION != "schemaflow"
    assert PROJECT["scripts"] == {"schemaflow": "schemaflow.cli:run"}  # the command keeps its name


def test_the_version_is_the_installed_one_and_the_command_says_it() -> None:
    assert "version" in PROJECT["dynamic"] and "version" not in PROJECT  # from git tags, never by hand
    assert schemaflow.__version__ == version(schemaflow.DISTRIBUTION)
    said = subprocess.run([sys.executable, "-m", "schemaflow", "--version"], capture_output=True, text=True,
                          check=True).stdout
    assert said == f"schemaflow {schemaflow.__version__}\n"


def test_the_licence_is_apache_2_in_the_file_and_the_metadata() -> None:
    assert (ROOT / "LICENSE").read_text().split()[:4] == ["Apache", "License", "Version", "2.0,"]
    assert PROJECT["license"] == "Apache-2.0" == metadata(schemaflow.DISTRIBUTION)["License-Expression"]


def test_the_changelog_has_a_section_for_what_is_not_released_yet() -> None:
    headings = [line for line in (ROOT / "CHANGELOG.md").read_text().splitlines() if line.startswith("## ")]
    assert headings[0] == "## Unreleased" and "## 0.1.0" in headings
