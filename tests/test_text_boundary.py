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
from tests.inprocess import schemaflow as inprocess
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
    commit(repo, "a hook that runs a folder of scripts")
    (project / "hooks.d").mkdir()
    (project / "hooks.d" / "\x1b[31mred\n::error::x\u202e.sh").write_text("echo hi\n")
    commit(repo, "a script in it")
    text = schemaflow(project, "plan", "--base", "HEAD~1", "--head", "HEAD")
    comment = schemaflow(project, "plan", "--base", "HEAD~1", "--head", "HEAD", "--format", "markdown")
    escaped = "hooks.d/\\x1b[31mred\\x0a::error::x\\u202e.sh"
    assert text.returncode == comment.returncode == 2
    assert f"add {escaped}, a file of the project that code in schemaflow.yaml can run" in text.stdout
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


# C. Keys: compared after NFKC, no default-ignorable character, no whole-script look-alike of ASCII.

def with_property(root: Path, key: str) -> Path:
    """A project whose table ``shop.t`` declares the property ``key`` (written raw, in double quotes) on line 5."""
    return shop(root, {"t.yaml": f'table: shop.t\ncolumns: [{{name: id, type: int}}]\ncomment: c\nproperties:\n'
                                 f'  "{key}": "1"\n'})


def validated(root: Path) -> tuple[int, list[str]]:
    ran = inprocess("--project", str(root), "validate")
    return ran.code, lines_of(ran.err)


def invisible(escape: str, name: str, col: int = 3) -> str:
    return (f"schemas/shop/t.yaml:5:{col}: {escape} ({name}) may not be in a key, which is one line of plain text: "
            "it could change what a terminal, a CI log or a review shows; remove it")


def not_nfkc(key: str, names: str) -> str:
    return (f"schemas/shop/t.yaml:5:3: the key '{key}' is not in its normal form (NFKC): {names} read as 'sales', "
            "the key it is compared as, where the metastore would get another; write 'sales'")


MEASURED = {
    "ѕаӏеѕ": "schemas/shop/t.yaml:5:3: the key 'ѕаӏеѕ' passes for an ASCII key ('saies', as Unicode's confusables data "
             "reads it): U+0455 CYRILLIC SMALL LETTER DZE, U+0430 CYRILLIC SMALL LETTER A, U+04CF CYRILLIC SMALL "
             "LETTER PALOCHKA, ... look like ASCII characters, so a reviewer reads one key where the metastore gets "
             "another; write the key in ASCII letters, or in letters that pass for none",
    "ｓａｌｅｓ": not_nfkc("ｓａｌｅｓ", "U+FF53 FULLWIDTH LATIN SMALL LETTER S, U+FF41 FULLWIDTH LATIN SMALL LETTER A, "
                                    "U+FF4C FULLWIDTH LATIN SMALL LETTER L, ..."),
    "𝐬𝐚𝐥𝐞𝐬": not_nfkc("𝐬𝐚𝐥𝐞𝐬", "U+1D42C MATHEMATICAL BOLD SMALL S, U+1D41A MATHEMATICAL BOLD SMALL A, "
                                "U+1D425 MATHEMATICAL BOLD SMALL L, ..."),
    "sal\u00ades": invisible("\\xad", "SOFT HYPHEN", 7),
    "sales\ufe0f": invisible("\\ufe0f", "VARIATION SELECTOR-16", 9),
    "sales\U000e0100": invisible("\\U000e0100", "VARIATION SELECTOR-17", 9),
    "\u3164sales": invisible("\\u3164", "HANGUL FILLER", 4),
    "sales\U000e0041\U000e007f": invisible("\\U000e0041", "TAG LATIN CAPITAL LETTER A", 9),
}


@pytest.mark.parametrize("key, said", MEASURED.items(), ids=["cyrillic", "fullwidth", "mathematical", "soft-hyphen",
                                                              "variation-selector", "variation-selector-17",
                                                              "hangul-filler", "tags"])
def test_each_measured_key_is_refused_where_it_is_written_saying_what_to_write(tmp_path, key, said):
    assert validated(with_property(tmp_path, key)) == (1, [said, "1 problem found; nothing was planned or applied."])


@pytest.mark.parametrize("key", ["ѕаӏеѕ", "ｓａｌｅｓ", "sal\u00ades", "\u3164sales"])
def test_a_key_is_held_to_the_rule_wherever_it_names_something(tmp_path, key):
    """A view's properties, a data-source table's options, a SerDe's properties, a database's properties."""
    files = {
        "schemas/shop/v.yaml": f'view: shop.v\nsql: SELECT 1 AS id\nproperties:\n  "{key}": "1"\n',
        "schemas/shop/o.yaml": f'table: shop.o\nusing: csv\ncolumns: [{{name: id, type: int}}]\noptions:\n  "{key}": x\n',
        "schemas/shop/s.yaml": (f'table: shop.s\nformat: textfile\ncolumns: [{{name: id, type: int}}]\n'
                                f'serde_properties:\n  "{key}": x\n'),
        "schemaflow.yaml": f'databases:\n  shop:\n    properties:\n      "{key}": x\n',
    }
    where = {"schemas/shop/v.yaml": "4:3", "schemas/shop/o.yaml": "5:3", "schemas/shop/s.yaml": "5:3",
             "schemaflow.yaml": "4:7"}
    for path, text in files.items():
        root = tmp_path / path.replace("/", "_")
        shop(root, {})
        (root / path).write_text(text, encoding="utf-8")
        code, said = validated(root)
        assert code == 1 and len(said) == 2, said
        # The position of the key, or of the character in it that is refused.
        line, col = where[path].split(":")
        assert re.match(rf"{re.escape(path)}:{line}:(\d+): ", said[0]), said
        assert int(said[0].split(":")[2]) >= int(col)


def test_two_keys_equal_after_nfkc_are_one_key_written_twice_and_a_reserved_key_is_reserved_in_any_form(tmp_path):
    root = shop(tmp_path / "twice", {"t.yaml": 'table: shop.t\ncolumns: [{name: id, type: int}]\nproperties:\n'
                                               '  sales: "1"\n  𝐬𝐚𝐥𝐞𝐬: "2"\n'})
    assert validated(root) == (1, [
        "schemas/shop/t.yaml:5:3: the key '𝐬𝐚𝐥𝐞𝐬' is 'sales' in its normal form (NFKC), the key 'sales' on line 4 is "
        "too: keys are compared so, and these two are one key written twice; keep one",
        "1 problem found; nothing was planned or applied."])
    from schemaflow.sql.table_parameters import why_reserved

    # The table parameters Hive, Spark and schemaflow write are compared after NFKC too.
    assert why_reserved("ｃｏｍｍｅｎｔ") == why_reserved("comment") is not None
    assert why_reserved("ｓｐａｒｋ.sql.sources.provider") == why_reserved("spark.sql.sources.provider") is not None
    assert why_reserved("𝐭𝐫𝐚𝐧𝐬𝐢𝐞𝐧𝐭_lastDdlTime") is not None
    code, said = validated(with_property(tmp_path / "reserved", "ｃｏｍｍｅｎｔ"))
    assert code == 1 and said[0].endswith("write 'comment'")


@pytest.mark.parametrize("key", ["цена", "данные", "отдел_продаж", "名前", "データ", "정보", "τιμή", "café", "Größe",
                                 "owner_team", "ключ 2024", "€_rate"])
def test_keys_of_a_script_of_their_own_stay_accepted(tmp_path, key):
    code, said = validated(with_property(tmp_path, key))
    assert (code, said) == (0, []), said


def test_a_key_of_a_character_that_is_not_on_the_allow_list_is_refused_at_that_character(tmp_path):
    for key, col, escape, name in (("sales\ue000", 9, "\\ue000", "a private-use character"),
                                   ("nb\u00a0sp", 6, "\\xa0", "NO-BREAK SPACE"),
                                   ("a\u1680b", 5, "\\u1680", "OGHAM SPACE MARK"),
                                   ("a\u0600b", 5, "\\u0600", "ARABIC NUMBER SIGN"),
                                   ("a\ufff9b", 5, "\\ufff9", "INTERLINEAR ANNOTATION ANCHOR")):
        code, said = validated(with_property(tmp_path / escape[1:], key))
        assert (code, said[0]) == (1, f"schemas/shop/t.yaml:5:{col}: {escape} ({name}) may not be in a key, which "
                                      "holds letters, marks, digits, punctuation, symbols and plain spaces: a reader "
                                      "may not see it as it is stored; remove it")


# The definition of Default_Ignorable_Code_Point (DerivedCoreProperties.txt, Unicode 15.0.0, as in 14.0.0) and the
# properties of PropList.txt it is made of, which Python's unicodedata does not have:
#   Other_Default_Ignorable_Code_Point + Cf + Variation_Selector - White_Space - FFF9..FFFB
#   - 13430..13440 (Egyptian hieroglyph format controls) - Prepended_Concatenation_Mark
OTHER_DEFAULT_IGNORABLE = [(0x034F, 0x034F), (0x115F, 0x1160), (0x17B4, 0x17B5), (0x2065, 0x2065), (0x3164, 0x3164),
                           (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8), (0xE0000, 0xE0000), (0xE0002, 0xE001F),
                           (0xE0080, 0xE00FF), (0xE01F0, 0xE0FFF)]
VARIATION_SELECTOR = [(0x180B, 0x180D), (0x180F, 0x180F), (0xFE00, 0xFE0F), (0xE0100, 0xE01EF)]
EXCLUDED = [(0xFFF9, 0xFFFB), (0x13430, 0x13440), (0x0600, 0x0605), (0x06DD, 0x06DD), (0x070F, 0x070F),
            (0x0890, 0x0891), (0x08E2, 0x08E2), (0x110BD, 0x110BD), (0x110CD, 0x110CD)]


def test_the_default_ignorable_ranges_are_the_property_as_its_definition_and_this_python_make_it():
    import unicodedata

    from schemaflow.output_safety import DEFAULT_IGNORABLE, HOSTILE_IN_KEYS

    def within(ranges: list[tuple[int, int]], code: int) -> bool:
        return any(low <= code <= high for low, high in ranges)

    written = re.compile(f"[{DEFAULT_IGNORABLE}]")
    defined = {code for code in range(0x110000) if (
        within(OTHER_DEFAULT_IGNORABLE, code) or within(VARIATION_SELECTOR, code)
        or unicodedata.category(chr(code)) == "Cf" and not chr(code).isspace() and not within(EXCLUDED, code))}
    assert {code for code in range(0x110000) if written.match(chr(code))} == defined
    assert len(defined) == 4174  # "Total code points: 4174" in DerivedCoreProperties.txt
    # A sample, by name: each is a key's hostile character, and one line of output shows it as its escape.
    for character in "\u00ad\u034f\u061c\u115f\u180e\u200b\u2064\u3164\ufe0f\ufeff\uffa0\U0001bca0\U0001d173" \
                     "\U000e0001\U000e0041\U000e0100\U000e0fff":
        assert HOSTILE_IN_KEYS.fullmatch(character), hex(ord(character))
    assert not any(written.match(c) for c in "\u0600\ufff9\U00013430 \u00a0sales")


def test_the_look_alike_table_is_confusables_lines_each_of_a_character_that_passes_for_ascii():
    from importlib import resources
    import unicodedata

    from schemaflow.spec.keys import passes_for_ascii

    text = resources.files("schemaflow.spec").joinpath("ascii_lookalikes.txt").read_text("utf-8")
    assert "Version" not in text and "confusables.txt" in text.splitlines()[1]
    lines = [line for line in text.split("\n") if line and not line.startswith("#")]
    assert len(lines) == 657
    for line in lines:
        assert re.fullmatch(r"[0-9A-F]{4,5} ;\t[0-9A-F]{4,5}( [0-9A-F]{4,5})* ;\tMA\t# [A-Z0-9 ,()-]+ → [A-Z0-9 ,()-]+",
                            line), line
        source = chr(int(line.split(" ")[0], 16))
        if not source.isascii():
            assert unicodedata.normalize("NFKC", source) == source and passes_for_ascii(source) is not None, line
    assert [passes_for_ascii(key) for key in ("ᏚᎪᏞᎬᏚ", "ꓢꓮꓡꓰꓢ", "ΑΝΝΑ", "сор", "ѕа́ӏеѕ", "sales", "цена")] == [
        "SALES", "SALES", "ANNA", "cop", "sáies", None, None]


def test_one_line_of_output_shows_a_default_ignorable_character_of_the_metastore_as_its_escape():
    from schemaflow.output_safety import one_line

    assert one_line("sal\u00ades\ufe0f \U000e0041") == "sal\\xades\\ufe0f \\U000e0041"
