"""What a file's name, a link and a key can make a reader see: each shown as what it is, or refused where written.

An author chooses a file's name, where a link in the repository leads and every key of a file. Each is tried
here as an attacker would, through the real commands (a new process, as a user and CI run them):

- a file's name that holds a colour (ESC [ 31 m), a newline, a bidi override or a ``::`` workflow command
  reaches a terminal, the CI log and the comment escaped, as any user text does (``output_safety``);
- a symlink in the working tree that leads out of the repository (``/etc/passwd``, a file in the runner's
  home), directly or through a chain of links, is refused at its own path, and nothing of its target is
  read or shown; links within the repository (a database folder may be one) still work;
- a key is compared after NFKC, refused with a default-ignorable character in it, refused when it is not
  NFKC-normal (the way out: its NFKC form) and refused when all its letters pass for Latin ones
  (``ѕаӏеѕ`` in Cyrillic is read as ``sales``); keys in a script of their own stay accepted.

No JVM: every refusal comes before one would start.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import cmarkgfm
import pytest

from tests.gitrepos import commit, example_repo, init_repo
from tests.projects import schemaflow

TABLE = "table: shop.t\ncolumns: [{name: id, type: int}]\n"


def shop(root: Path, files: dict[str, str]) -> Path:
    """A project at ``root``: ``schemas/shop/`` holding ``files`` (name -> text)."""
    (root / "schemas" / "shop").mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (root / "schemas" / "shop" / name).write_text(text, encoding="utf-8")
    return root


def lines_of(text: str) -> list[str]:
    return text.splitlines()


# A. File names are escaped like any user text.

HOSTILE_NAMES = {
    "\x1b[31mred.yaml": "\\x1b[31mred.yaml",                      # SGR: colours the rest of the terminal red
    "a\n::error::forged.yaml": "a\\x0a::error::forged.yaml",      # a line of its own, a workflow command
    "t\u202elmay.yaml": "t\\u202elmay.yaml",                      # a bidi override: the rest reads reversed
    "::warning::w.yaml": "::warning::w.yaml",                     # mid-line: no command, shown as it is
}


@pytest.mark.parametrize("name, shown", HOSTILE_NAMES.items(), ids=["sgr", "newline", "bidi", "command"])
def test_a_file_name_reaches_stderr_escaped(tmp_path, name, shown):
    shop(tmp_path, {name: TABLE})
    ran = schemaflow(tmp_path, "validate")
    assert ran.returncode == 1
    assert lines_of(ran.stderr) == [
        f"schemas/shop/{shown}:1:8: shop.t must be declared in schemas/shop/t.yaml: rename or move this file",
        "1 problem found; nothing was planned or applied."]
    assert "\x1b" not in ran.stderr and "\u202e" not in ran.stderr


@pytest.mark.parametrize("name, shown", HOSTILE_NAMES.items(), ids=["sgr", "newline", "bidi", "command"])
def test_fmt_names_the_files_it_formats_escaped(tmp_path, name, shown):
    shop(tmp_path, {name: "table:   shop.u\ncolumns: [{name: id, type: int}]\n"})
    check = schemaflow(tmp_path, "fmt", "--check")
    assert check.returncode == 2
    assert lines_of(check.stdout)[:2] == [f"--- a/schemas/shop/{shown}", f"+++ b/schemas/shop/{shown}"]
    ran = schemaflow(tmp_path, "fmt")
    assert (ran.returncode, lines_of(ran.stdout)) == (0, [f"formatted schemas/shop/{shown}"])
    for said in (check.stdout + check.stderr, ran.stdout + ran.stderr):
        assert "\x1b" not in said and "\u202e" not in said


def test_a_file_a_hook_runs_is_named_escaped_in_the_plan_and_the_comment(tmp_path):
    repo = example_repo(tmp_path / "repo")
    project = Path(repo.working_tree_dir or "")
    with (project / "schemaflow.yaml").open("a") as settings:
        settings.write("after_apply:\n  - sh hooks.d\n")
    (project / "hooks.d").mkdir()
    (project / "hooks.d" / "\x1b[31mred\n::error::x\u202e.sh").write_text("echo hi\n")
    commit(repo, "a hook that runs a folder of scripts")
    text = schemaflow(project, "plan", "--base", "HEAD~1", "--head", "HEAD")
    comment = schemaflow(project, "plan", "--base", "HEAD~1", "--head", "HEAD", "--format", "markdown")
    escaped = "hooks.d/\\x1b[31mred\\x0a::error::x\\u202e.sh"
    assert text.returncode == comment.returncode == 2
    assert f"add {escaped}, which schemaflow.yaml runs as code" in text.stdout
    assert not any(line.lstrip().startswith("::") for line in lines_of(text.stdout))
    html = cmarkgfm.github_flavored_markdown_to_html(comment.stdout, options=cmarkgfm.Options.CMARK_OPT_UNSAFE)
    assert "hooks.d/\\x1b[31mred\\x0a::error::x\\u202e.sh" in html.replace("\\\\", "\\")
    for said in (text.stdout, text.stderr, comment.stdout, comment.stderr):
        assert "\x1b" not in said and "\u202e" not in said


# B. A symlink out of the repository is refused.

def outside_link_message(target: str) -> str:
    return (f"a symlink to '{target}', which leads out of the repository: schemaflow reads only the repository's own "
            "files, which a review sees; put the file itself in the repository, or remove the link")


SECRET = "runner_token: s3cr3t-from-the-runner-home\n"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A file in the runner's home, outside every repository of the test."""
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "credentials.yaml").write_text(SECRET)
    (tmp_path / "home" / "shop").mkdir()
    (tmp_path / "home" / "shop" / "u.yaml").write_text(SECRET)
    return tmp_path / "home"


def test_a_link_to_a_file_or_folder_outside_the_repository_is_refused_naming_nothing_of_it(tmp_path, home):
    repo = example_repo(tmp_path / "repo")
    project = Path(repo.working_tree_dir or "")
    (project / "schemas" / "retail" / "stolen.yaml").symlink_to(home / "credentials.yaml")
    (project / "schemas" / "retail" / "passwd.yaml").symlink_to("/etc/passwd")
    (project / "schemas" / "shop").symlink_to(home / "shop")
    for args in (("validate",), ("plan", "--base", "HEAD", "--format", "markdown"), ("fmt", "--check")):
        ran = schemaflow(project, *args)
        assert ran.returncode == 1, args
        assert sorted(line for line in lines_of(ran.stderr) if line.startswith("schemas/")) == [
            f"schemas/retail/passwd.yaml:1:1: {outside_link_message('/etc/passwd')}",
            f"schemas/retail/stolen.yaml:1:1: {outside_link_message(str(home / 'credentials.yaml'))}",
            f"schemas/shop:1:1: {outside_link_message(str(home / 'shop'))}"], args
        assert "s3cr3t" not in ran.stdout + ran.stderr and "root:" not in ran.stdout + ran.stderr


def test_a_link_on_the_way_counts_where_it_leads_however_many_links_lead_there(tmp_path, home):
    repo = init_repo(tmp_path / "repo")
    project = shop(tmp_path / "repo", {"t.yaml": TABLE})
    (project / "shared").mkdir()
    (project / "shared" / "u.yaml").write_text(TABLE.replace("shop.t", "shop.u"))
    # Out and back: a link to a link outside that leads to the repository's own file reads that file.
    (home / "back.yaml").symlink_to(project / "shared" / "u.yaml")
    (project / "schemas" / "shop" / "u.yaml").symlink_to(home / "back.yaml")
    # In, in, then out: refused at the first link, whose target is in the repository, as the one that leads out.
    (project / "shared" / "hop.yaml").symlink_to(home / "credentials.yaml")
    (project / "shared" / "hop2.yaml").symlink_to("hop.yaml")
    (project / "schemas" / "shop" / "v.yaml").symlink_to("../../shared/hop2.yaml")
    commit(repo, "links")
    ran = schemaflow(project, "validate")
    assert lines_of(ran.stderr) == [f"schemas/shop/v.yaml:1:1: {outside_link_message('../../shared/hop2.yaml')}",
                                    "1 problem found; nothing was planned or applied."]
    (project / "schemas" / "shop" / "v.yaml").unlink()
    ran = schemaflow(project, "validate")
    assert (ran.returncode, ran.stdout) == (0, "valid: 2 tables and 0 views in 1 database (shop)\n"), ran.stderr


def test_links_within_the_repository_work_and_the_repository_is_the_git_work_tree_or_else_the_project(tmp_path):
    top = tmp_path / "repo"
    project = top / "warehouse"
    (top / "shared" / "shop").mkdir(parents=True)
    (top / "shared" / "shop" / "t.yaml").write_text(TABLE)
    (project / "schemas").mkdir(parents=True)
    (project / "schemas" / "shop").symlink_to("../../shared/shop")  # a database folder, a link up the repository
    # Outside a git repository the project's own folder is the repository: the link leads out of it.
    ran = schemaflow(project, "validate")
    assert lines_of(ran.stderr)[0] == f"schemas/shop:1:1: {outside_link_message('../../shared/shop')}"
    # In a git work tree (the project in a folder of it), the link stays within the repository.
    init_repo(top)
    ran = schemaflow(project, "validate")
    assert (ran.returncode, ran.stdout) == (0, "valid: 1 table and 0 views in 1 database (shop)\n"), ran.stderr
    # A settings file that is a link out of the repository is refused at its path too.
    (project / "schemaflow.yaml").symlink_to(tmp_path / "elsewhere.yaml")
    (tmp_path / "elsewhere.yaml").write_text("invalidation: cascade\n")
    ran = schemaflow(project, "validate")
    assert ran.returncode == 1
    assert f"schemaflow.yaml:1:1: {outside_link_message(str(tmp_path / 'elsewhere.yaml'))}" in ran.stderr


def test_a_link_out_of_the_repository_that_leads_nowhere_says_no_more_than_one_that_leads_somewhere(tmp_path):
    """Whether a path outside exists on the runner is not told: both links get the same refusal."""
    shop(tmp_path / "repo", {"t.yaml": TABLE})
    init_repo(tmp_path / "repo")
    (tmp_path / "repo" / "schemas" / "shop" / "a.yaml").symlink_to("/etc/hostname")
    (tmp_path / "repo" / "schemas" / "shop" / "b.yaml").symlink_to("/etc/no-such-file-here")
    said = schemaflow(tmp_path / "repo", "validate").stderr
    assert [re.sub(r"^schemas/shop/[ab]|'[^']*'", "", line) for line in lines_of(said)[:2]] == [
        f".yaml:1:1: {outside_link_message('')}".replace("''", "")] * 2
    assert os.path.exists("/etc/hostname")
