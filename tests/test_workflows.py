"""The GitHub workflows users copy: valid YAML, and their git and schemaflow commands run as written.

The plan workflow's own commands are run here, in the order the workflow runs them, in a shallow
clone of a temporary repository (as ``actions/checkout`` leaves one): fetch the base branch, then
plan. The apply workflow needs a metastore; its commands are checked against the CLI's parser.
"""
from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import git
import yaml

from schemaflow.cli import _parser, main
from schemaflow.render.markdown import MARKER
from tests.gitrepos import commit, init_repo

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "schemaflow" / "starter" / "files" / "workflows"  # what schemaflow init writes
PLAN = EXAMPLES / "schemaflow-plan-on-pull-request.yml"
APPLY = EXAMPLES / "schemaflow-apply-on-merge.yml"


def load(path: Path) -> dict[str, Any]:
    workflow = yaml.safe_load(path.read_text())
    workflow["on"] = workflow.pop(True)  # YAML 1.1 reads the key `on` as true
    return workflow


def steps(workflow: dict[str, Any]) -> list[dict[str, Any]]:
    (job,) = workflow["jobs"].values()
    return job["steps"]


def command(step: dict[str, Any], env: dict[str, str]) -> list[str]:
    """The words of a step's first command, with its variables set and no redirection after it; a word
    ``${NAME:+word}`` is the word when NAME is set and not empty, else no word at all, as in bash."""
    run = re.sub(r"\$\{(\w+):\+([^}]*)\}", lambda m: m.group(2) if env.get(m.group(1)) else "", step["run"])
    words = []
    for word in shlex.shlex(run, posix=True, punctuation_chars=True):
        if word in (">", "||", "&&", ";"):
            break
        words.append(re.sub(r"\$\{?(\w+)\}?", lambda m: env[m.group(1)], word))
    return words


def named(workflow: dict[str, Any], name: str) -> dict[str, Any]:
    return next(step for step in steps(workflow) if step.get("name") == name)


def test_both_workflows_set_up_python_java_where_a_jvm_starts_and_run_on_their_events():
    plan, apply = load(PLAN), load(APPLY)
    assert list(plan["on"]) == ["pull_request"]
    assert apply["on"]["push"]["branches"] == ["main"]
    for workflow, artifact in ((plan, "plan.json"), (apply, "reviewed.json")):
        uses = {step["uses"].split("@")[0]: step.get("with") for step in steps(workflow) if "uses" in step}
        assert uses["actions/setup-python"]["python-version"] == "3.11"
        assert uses["actions/upload-artifact"]["path"] == artifact
    # plan --base starts no JVM: the plan job sets up no Java, and caches pip's downloads by the file that pins them.
    uses = {step["uses"].split("@")[0]: step.get("with") for step in steps(plan) if "uses" in step}
    assert "actions/setup-java" not in uses
    assert uses["actions/setup-python"] == {"python-version": "3.11", "cache": "pip",
                                            "cache-dependency-path": f".github/workflows/{PLAN.name}"}
    uses = {step["uses"].split("@")[0]: step.get("with") for step in steps(apply) if "uses" in step}
    assert uses["actions/setup-java"] == {"distribution": "temurin", "java-version": "17"}


def test_the_plan_workflow_fetches_the_base_of_a_private_repository_with_the_jobs_token(tmp_path):
    from tests.git_http import PrivateRepositories

    origin = init_repo(tmp_path / "served" / "origin.git")
    (tmp_path / "served" / "origin.git" / "README").write_text("base\n")
    base = commit(origin, "base")
    fetch = named(load(PLAN), "Fetch the base branch")
    assert fetch["env"]["TOKEN"] == "${{ github.token }}" and fetch["env"]["SERVER"] == "${{ github.server_url }}"
    with PrivateRepositories(tmp_path / "served", token="s3cret-job-token") as server:
        checkout = init_repo(tmp_path / "checkout")
        checkout.git.remote("add", "origin", server.url("origin.git/.git"))
        quiet = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "BASE": "main", "SERVER": server.server_url}
        # Without the token (what the step did before), the private repository answers 401 and the fetch fails.
        refused = subprocess.run(["git", "fetch", "--depth=1", "origin", "main"], cwd=checkout.working_tree_dir,
                                 env=quiet, capture_output=True, text=True)
        assert refused.returncode != 0 and "could not read Username" in refused.stderr
        assert server.requests and not any(authenticated for _, authenticated in server.requests)
        ran = subprocess.run(["bash", "-e", "-c", fetch["run"]], cwd=checkout.working_tree_dir, capture_output=True,
                             text=True, env={**quiet, "TOKEN": "s3cret-job-token"})
        assert ran.returncode == 0, ran.stderr
        assert checkout.git.rev_parse("refs/remotes/origin/main") == base
        assert any(authenticated for _, authenticated in server.requests)
    # The token went into the one command: nothing of it is left in the checkout's configuration.
    assert "s3cret" not in (Path(checkout.git_dir) / "config").read_text()
    assert "extraheader" not in (Path(checkout.git_dir) / "config").read_text()


def test_the_plan_workflow_finds_its_comment_by_the_marker_the_comment_starts_with():
    script = next(step["with"]["script"] for step in steps(load(PLAN)) if "github-script" in step.get("uses", ""))
    assert f"const marker = '{MARKER}';" in script
    assert "c.body?.startsWith(marker)" in script


def test_the_plan_workflow_commands_plan_a_shallow_clone(tmp_path, monkeypatch, capsys):
    origin = init_repo(tmp_path / "origin")
    shutil.copytree(ROOT / "schemas", tmp_path / "origin" / "schemas")
    shutil.copy(ROOT / "schemaflow.yaml", tmp_path / "origin")
    commit(origin, "base")
    origin.git.checkout("--quiet", "-b", "feature")
    (tmp_path / "origin/schemas/analytics/marketing_spend.yaml").unlink()
    commit(origin, "drop marketing_spend")
    checkout = tmp_path / "checkout"
    git.Repo.clone_from(f"file://{tmp_path / 'origin'}", checkout, depth=1, branch="feature")
    workflow = load(PLAN)
    env = {**workflow["env"], "BASE": "main", "ALLOW_DESTRUCTIVE": ""}
    monkeypatch.chdir(checkout)

    fetch = named(workflow, "Fetch the base branch")["run"]
    subprocess.run(["bash", "-e", "-c", fetch], check=True, capture_output=True,
                   env={**os.environ, **env, "SERVER": "https://github.com", "TOKEN": "unused-by-file-urls"})
    args = command(named(workflow, "Plan"), env)
    assert args[:2] == ["schemaflow", "--project"]
    assert main(args[1:]) == 1  # blocked: the shell writes plan.md, the comment is posted, then the job fails

    assert capsys.readouterr().out.startswith(f"{MARKER}\n### schemaflow plan\n\n**1 step on 1 object, 1 destructive, "
                                              "1 blocked: apply will refuse this plan.**\n")
    saved = json.loads((checkout / "plan.json").read_text())
    assert [(s["kind"], s["object"], s["blocked"] is not None) for s in saved["steps"]] == [
        ("drop_table", "analytics.marketing_spend", True)]

    # With the label "schemaflow-allow-destructive" on the pull request, the drop is planned for review.
    labelled = named(workflow, "Plan")["env"]["ALLOW_DESTRUCTIVE"]
    assert "contains(github.event.pull_request.labels.*.name, 'schemaflow-allow-destructive')" in labelled
    assert load(PLAN)["on"]["pull_request"]["types"] == ["opened", "synchronize", "reopened", "labeled", "unlabeled"]
    assert main(command(named(workflow, "Plan"), {**env, "ALLOW_DESTRUCTIVE": "true"})[1:]) == 2
    assert capsys.readouterr().out.startswith(f"{MARKER}\n### schemaflow plan\n\n**1 step on 1 object, 1 destructive.**")
    saved = json.loads((checkout / "plan.json").read_text())
    assert saved["allow_destructive"] is True and saved["steps"][0]["blocked"] is None

    layout = command(named(workflow, "Check the layout of the YAML files"), env)
    assert main(layout[1:]) == 0  # the example's files are in the canonical layout
    assert capsys.readouterr().out == "10 files already formatted.\n"
    (checkout / "schemas/retail/orders.yaml").write_text("format: parquet\ntable: retail.orders\ncolumns: []\n")
    assert main(layout[1:]) == 2  # a file out of layout fails the check, its diff in the log
    assert capsys.readouterr().out.startswith("--- a/schemas/retail/orders.yaml\n")


def test_the_apply_workflow_rebuilds_the_reviewed_plan_and_applies_only_that():
    workflow = load(APPLY)
    rebuild = named(workflow, "Rebuild the reviewed plan")
    assert rebuild["env"] == {"ALLOW_DESTRUCTIVE": "${{ steps.merged.outputs.result }}"}
    for allowed in ("", "true"):
        parsed = _parser().parse_args(command(rebuild, {**workflow["env"], "ALLOW_DESTRUCTIVE": allowed})[1:])
        assert (parsed.project, parsed.command, parsed.base, parsed.head, parsed.out, parsed.allow_destructive) == (
            ".", "plan", "HEAD~1", "HEAD", Path("reviewed.json"), allowed == "true")
    apply = _parser().parse_args(
        command(named(workflow, "Apply what was reviewed, or refuse it as stale"), workflow["env"])[1:])
    assert (apply.command, apply.plan_file, apply.reviewed, apply.auto_approve) == (
        "apply", None, Path("reviewed.json"), True)
    checkout = next(step for step in steps(workflow) if step.get("uses", "").startswith("actions/checkout"))
    assert checkout["with"] == {"fetch-depth": 2, "persist-credentials": False}


def test_the_apply_workflow_reads_the_metastore_from_a_secret():
    workflow = load(APPLY)
    (job,) = workflow["jobs"].values()
    assert "env" not in job  # no step sees a secret it does not need
    secret = "${{ secrets.SCHEMAFLOW_METASTORE_URI }}"
    holding = [step["name"] for step in steps(workflow) if secret in (step.get("env") or {}).values()]
    assert holding == ["Check that a metastore is configured", "Apply what was reviewed, or refuse it as stale"]
    assert "secrets." not in json.dumps([workflow["env"]] + [s for s in steps(workflow) if s.get("name") not in holding])
    apply = named(workflow, "Apply what was reviewed, or refuse it as stale")
    assert apply["env"]["SCHEMAFLOW_APPROVED_CODE"] == "${{ vars.SCHEMAFLOW_APPROVED_CODE }}"
    assert workflow["concurrency"] == {"group": "schemaflow-apply", "cancel-in-progress": False}
    assert job["if"] == "github.ref == 'refs/heads/main'" and job["environment"] == "production"


def test_every_action_is_pinned_to_a_commit_and_no_checkout_keeps_its_token():
    for path in (PLAN, APPLY, ROOT / ".github/workflows/tests.yml"):
        workflow = load(path)
        for step in steps(workflow):
            if "uses" in step:
                assert re.fullmatch(r"actions/[\w-]+@[0-9a-f]{40}", step["uses"]), (path.name, step["uses"])
            if step.get("uses", "").startswith("actions/checkout"):
                assert step["with"]["persist-credentials"] is False, path.name
        assert workflow["permissions"]["contents"] == "read"


def test_the_plan_workflow_posts_a_blocked_plan_then_fails(tmp_path):
    workflow = load(PLAN)
    plan = named(workflow, "Plan")
    assert plan["id"] == "plan" and plan["run"].endswith('|| echo "status=$?" >> "$GITHUB_OUTPUT"; wait $!')
    names = [step.get("name") or step["uses"] for step in steps(workflow)]
    failing = named(workflow, "Fail when the plan cannot be applied")
    assert names.index("Post the plan, or update the comment that has it") < names.index(failing["name"])
    assert failing["if"] == "steps.plan.outputs.status != '' && steps.plan.outputs.status != '2'"
    # The step's shell as the runner runs it (bash -e), schemaflow standing in: it writes its errors slowly (the
    # tee is waited for), then ends with the code (137: killed, as bash reports a process killed by SIGKILL).
    output = tmp_path / "output"
    schemaflow = ('schemaflow() { echo "# plan"; for i in $(seq 200); do echo "error line $i" >&2; done; sleep 0.2; '
                  'echo last >&2; return "$CODE"; }; ')
    for code, recorded in ((0, ""), (2, "status=2\n"), (1, "status=1\n"), (137, "status=137\n")):
        output.write_text("")
        ran = subprocess.run(["bash", "-e", "-c", schemaflow + plan["run"]], cwd=tmp_path, check=True, text=True,
                             capture_output=True, env={"GITHUB_OUTPUT": str(output), "CODE": str(code), "PATH": os.defpath})
        assert output.read_text() == recorded
        errors = (tmp_path / "plan.err").read_text()
        assert errors.endswith("error line 200\nlast\n") and ran.stderr == errors, code
        assert (tmp_path / "plan.md").read_text() == "# plan\n"


def test_both_workflows_install_only_schemaflow_pinned_never_a_name_from_the_index(tmp_path):
    sha = "0123456789abcdef0123456789abcdef01234567"
    accepted = [f"git+https://git.example.com/data/schemaflow@{sha}",
                "https://artifacts.example.com/schemaflow-0.1.0-py3-none-any.whl", "schemaflow-hive==0.2.0"]
    refused = ["", "schemaflow", "schemaflow==0.1.0", "schemaflow-hive", "schemaflow-hive>=0.2",
               "schemaflow-hive==0.2.0 pyspark", "git+https://git.example.com/data/schemaflow",
               "git+https://git.example.com/data/schemaflow@main", f"git+https://x/schemaflow@{sha} ; rm -rf /",
               "http://artifacts.example.com/schemaflow-0.1.0-py3-none-any.whl"]
    # The plan job installs schemaflow alone; apply's adds the pyspark of the team's Spark (the extra "spark").
    for workflow, spark in ((load(PLAN), {}), (load(APPLY), {"PYSPARK_VERSION": "4.0.1"})):
        assert workflow["env"]["SCHEMAFLOW_PACKAGE"] == ""  # set by whoever copies it
        assert {k: workflow["env"][k] for k in spark} == {k: "" for k in spark}
        script = named(workflow, "Install schemaflow")["run"]
        for package in accepted + refused:
            # pip stands in as a function that says what it was asked to install.
            ran = subprocess.run(["bash", "-e", "-c", 'pip() { echo "pip $*"; }\n' + script], cwd=tmp_path,
                                 env={"SCHEMAFLOW_PACKAGE": package, **spark}, capture_output=True, text=True)
            if package in accepted:
                wanted = f"pip install {package}" + "".join(f" pyspark=={v}" for v in spark.values())
                assert (ran.returncode, ran.stdout) == (0, wanted + "\n"), package
            else:
                assert ran.returncode == 1 and "the name schemaflow on the package index" in ran.stdout, package


def test_the_apply_workflow_installs_only_a_pinned_pyspark(tmp_path):
    script = named(load(APPLY), "Install schemaflow")["run"]
    package = "schemaflow-hive==0.2.0"
    for version in ("", "4.0", "4", "pyspark==4.0.1", "4.0.1 ; rm -rf /", "4.0.1rc1", "4.0.*"):
        ran = subprocess.run(["bash", "-e", "-c", 'pip() { echo "pip $*"; }\n' + script], cwd=tmp_path,
                             env={"SCHEMAFLOW_PACKAGE": package, "PYSPARK_VERSION": version}, capture_output=True,
                             text=True)
        assert ran.returncode == 1 and "Set PYSPARK_VERSION" in ran.stdout and "pip install" not in ran.stdout, version


def test_the_plan_workflow_replaces_the_comment_with_the_error_when_nothing_could_be_planned(tmp_path):
    script = next(step["with"]["script"] for step in steps(load(PLAN)) if "github-script" in step.get("uses", ""))
    node = shutil.which("node")
    (tmp_path / "plan.md").write_text("")
    (tmp_path / "plan.err").write_text("schemas/retail/orders.yaml:6:31: unknown type 'bigitn'\n```\n# ✅ No changes\n")
    posted = tmp_path / "posted.json"
    # GitHub's client stands in as an object that records what it was asked to post.
    harness = ("const github = {paginate: async () => [], rest: {issues: {listComments: null, "
               f"createComment: async (c) => require('fs').writeFileSync({json.dumps(str(posted))}, JSON.stringify(c))}}}}}};"
               "const context = {repo: {owner: 'o', repo: 'r'}, issue: {number: 7}};"
               f"(async () => {{ {script} }})();")
    assert node is not None, "node runs the workflow's script here as the runner would"
    subprocess.run([node, "-e", harness], cwd=tmp_path, check=True)
    body = json.loads(posted.read_text())["body"]
    assert body.startswith(f"{MARKER}\n### schemaflow plan\n\n**This pull request could not be planned**")
    assert "````text\nschemas/retail/orders.yaml:6:31: unknown type 'bigitn'\n```\n# ✅ No changes\n\n````\n" in body


LABEL = {"name": "schemaflow-allow-destructive"}
MERGED = {"number": 7, "merge_commit_sha": "merge", "merged_at": "2026-11-20T12:00:00Z", "head": {"sha": "head"},
          "labels": [LABEL]}


def label_step(tmp_path: Path, pulls: list[dict[str, Any]], events: list[dict[str, Any]] = (),  # type: ignore[assignment]
               reviews: list[dict[str, Any]] = ()) -> tuple[str, str]:  # type: ignore[assignment]
    """What the apply workflow's step that reads the merged pull request's label returns, and what it warned, run
    by node as the runner would, with GitHub's client standing in as an object that answers with these pull
    requests, and the events and reviews of pull request 7."""
    step = named(load(APPLY), "Read the merged pull request's label")
    node = shutil.which("node")
    assert node is not None, "node runs the workflow's script here as the runner would"
    harness = (f"const answers = {{listEvents: {json.dumps(list(events))}, listReviews: {json.dumps(list(reviews))}}};"
               "const github = {paginate: async (method, options) => { if (options.issue_number !== 7 && "
               "options.pull_number !== 7) throw new Error('another pull request'); return answers[method]; },"
               " rest: {issues: {listEvents: 'listEvents'}, pulls: {listReviews: 'listReviews'}, repos: {"
               f"listPullRequestsAssociatedWithCommit: async () => ({{data: {json.dumps(pulls)}}})}}}}}};"
               "const core = {warning: (m) => process.stderr.write(m)};"
               "const context = {repo: {owner: 'o', repo: 'r'}, sha: 'merge'};"
               f"(async () => {{ process.stdout.write(await (async () => {{ {step['with']['script']} }})()); }})();")
    ran = subprocess.run([node, "-e", harness], cwd=tmp_path, check=True, capture_output=True, text=True)
    return ran.stdout, ran.stderr


def labeled(at: str, event: str = "labeled") -> dict[str, Any]:
    return {"event": event, "label": LABEL, "created_at": f"2026-11-20T{at}:00Z"}


def approval(at: str, commit: str = "head", state: str = "APPROVED", author: str = "MEMBER") -> dict[str, Any]:
    """A review as GitHub lists it: ``author`` is its author's association with the repository."""
    return {"state": state, "commit_id": commit, "submitted_at": f"2026-11-20T{at}:00Z", "author_association": author}


def test_the_apply_workflow_allows_drops_only_for_a_label_put_on_before_the_approval_of_what_was_merged(tmp_path):
    workflow = load(APPLY)
    step = named(workflow, "Read the merged pull request's label")
    assert step["id"] == "merged" and step["with"]["result-encoding"] == "string"
    assert workflow["permissions"] == {"contents": "read", "pull-requests": "read"}

    def result(*args: Any) -> tuple[str, str]:
        return label_step(tmp_path, *args)

    merged = MERGED
    other_label = {"event": "labeled", "label": {"name": "docs"}, "created_at": "2026-11-20T08:00:00Z"}
    # The label, then an approval of the merged commit, then the merge: the reviewers approved the drop.
    assert result([merged], [other_label, labeled("09:00")], [approval("10:00")]) == ("true", "")
    # The label put on after the last approval: nobody approved the plan that shows the drop.
    allowed, warned = result([merged], [labeled("11:00")], [approval("10:00")])
    assert allowed == "" and "after its last approving review of the merged commit by someone with write access" in warned
    # Put on after the merge (while the job waited for the environment's reviewers), as its labels now show.
    assert result([merged], [labeled("13:00")], [approval("10:00"), approval("14:00")])[0] == ""
    # Removed before the merge, then put on again after it.
    assert result([merged], [labeled("09:00"), labeled("11:00", "unlabeled"), labeled("12:30")],
                  [approval("10:00")])[0] == ""
    # An approval of an earlier commit, or one dismissed, or one that asked for changes, approves nothing.
    for review in (approval("10:00", commit="earlier"), approval("10:00", state="DISMISSED"),
                   approval("10:00", state="CHANGES_REQUESTED")):
        assert result([merged], [labeled("09:00")], [review])[0] == ""
    # No label at all; another pull request that contains the commit (a branch merged onward); none.
    assert result([merged], [], [approval("10:00")]) == ("", "")
    assert result([{**merged, "merge_commit_sha": "other"}], [labeled("09:00")], [approval("10:00")])[0] == ""
    assert result([]) == ("", "")


def test_the_label_counts_only_with_an_approval_by_someone_with_write_access(tmp_path):
    """Any GitHub account can approve a pull request of a public repository: only an approval by its owner, a member
    of its organisation or a collaborator (who may push) approves the drop the label allows."""
    for author in ("CONTRIBUTOR", "NONE", "FIRST_TIME_CONTRIBUTOR", "FIRST_TIMER", "MANNEQUIN", ""):
        allowed, warned = label_step(tmp_path, [MERGED], [labeled("09:00")], [approval("10:00", author=author)])
        assert allowed == "" and "by someone with write access (owner, member or collaborator)" in warned, author
    for author in ("MEMBER", "OWNER", "COLLABORATOR"):
        assert label_step(tmp_path, [MERGED], [labeled("09:00")], [approval("10:00", author=author)]) == ("true", "")
    # A review GitHub lists without an association approves nothing; an outsider's approval beside a member's
    # earlier one, which the label came after, does not make up for it.
    review = {key: value for key, value in approval("10:00").items() if key != "author_association"}
    assert label_step(tmp_path, [MERGED], [labeled("09:00")], [review])[0] == ""
    assert label_step(tmp_path, [MERGED], [labeled("09:30")],
                      [approval("09:00"), approval("10:00", author="CONTRIBUTOR")])[0] == ""


def test_the_label_the_comment_names_is_the_one_both_workflows_read():
    from schemaflow.render.summary import ALLOW_DESTRUCTIVE_LABEL

    for workflow in (PLAN, APPLY):
        assert f"'{ALLOW_DESTRUCTIVE_LABEL}'" in workflow.read_text()
