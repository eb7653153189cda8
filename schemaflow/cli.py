"""The ``schemaflow`` command line: parse arguments, call the library, choose the exit code.

Exit codes: ``validate`` and ``graph`` 0 valid, 1 invalid; ``plan`` (against the metastore, a snapshot, or a git
ref) 0 no changes, 2 changes, 1 error or a blocked step (a plan ``apply`` would refuse);
``apply`` 0 done (or nothing to do), 1 error; ``drift`` 0 none, 2 drift, 1 error. Errors go to stderr as ``path:line:col: message``
for the project's files, or ``error: ...`` otherwise.
"""
from __future__ import annotations

import argparse
import difflib
import gc
import json
import os
import re
import sys
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn
from collections.abc import Sequence

from schemaflow import __version__
from schemaflow.apply.after import CHANGED_VARIABLE, cached_before, changed_objects, refresh, run_hooks
from schemaflow.apply.executor import apply_plan, check_runnable
from schemaflow.catalog.class_archive import write_at_exit
from schemaflow.code_settings import APPROVAL_VARIABLE
from schemaflow.errors import SchemaflowError, SpecError
from schemaflow.output_safety import GuardedStream
from schemaflow.plan.plan import Plan
from schemaflow.plan.review_check import differences
from schemaflow.project import ENV_TARGET, Project, load_project
from schemaflow.render import FORMATS, render
from schemaflow.render.graph import GRAPH_FORMATS, render_graph
from schemaflow.render.review import Review
from schemaflow import workflow
from schemaflow.wording import plural, short_commit

if TYPE_CHECKING:  # pyspark loads only when a command needs the live metastore
    from schemaflow.catalog.metastore import Metastore

EXIT_OK, EXIT_ERROR, EXIT_CHANGES = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error exits 1: exit 2 means "changes" to ``plan``, and CI must tell them apart."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_ERROR, f"{self.prog}: error: {message}{_did_you_mean(self, message)}\n")


def _did_you_mean(parser: argparse.ArgumentParser, message: str) -> str:
    """A suggestion for a misspelt command, choice or option in argparse's ``message``, or ""."""
    close: list[str] = []
    if choice := re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message):
        close = difflib.get_close_matches(choice[1], re.findall(r"'([^']*)'", choice[2]), n=1)
    elif unknown := re.match(r"unrecognized arguments: (.*)", message):
        options = sorted(_options(parser))
        close = [match for word in unknown[1].split() if word.startswith("--")
                 for match in difflib.get_close_matches(word.split("=")[0], options, n=1)][:1]
    return f"; did you mean '{close[0]}'?" if close else ""


def _options(parser: argparse.ArgumentParser) -> set[str]:
    """Every option of ``parser`` and of its commands."""
    options: set[str] = set()
    for action in parser._actions:  # argparse keeps them there; it has no public listing
        options.update(o for o in action.option_strings if o.startswith("--"))
        if isinstance(action, argparse._SubParsersAction):
            for command in action.choices.values():
                options |= _options(command)
    return options


class _CommandParser(_Parser):
    """A command's parser: it takes ``--project`` too, after the command, with no default that would
    hide one given before it."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(formatter_class=argparse.RawDescriptionHelpFormatter, **kwargs)
        self.add_argument("--project", default=argparse.SUPPRESS, metavar="DIR",
                          help="the project directory (also accepted before the command)")
        self.add_argument("--target", default=argparse.SUPPRESS, metavar="NAME",
                          help="the target of schemaflow.yaml to use (also accepted before the command)")
        self.add_argument("--approve-code", action="append", default=argparse.SUPPRESS, metavar="ID",
                          help="approve a setting that runs code, by the id plan shows "
                               "(also accepted before the command)")


def _add_display_options(command: argparse.ArgumentParser) -> None:
    command.add_argument("--no-color", action="store_true", help="no colour, even on a terminal (as NO_COLOR does)")
    command.add_argument("--verbose", action="store_true",
                         help="also show schemaflow's own bookkeeping (the schemaflow.* parameters each write stamps)")


def _display(args: argparse.Namespace) -> dict[str, bool]:
    """How to print a plan as text: coloured on a terminal unless NO_COLOR or --no-color, and how much."""
    color = (sys.stdout.isatty() and not os.environ.get("NO_COLOR") and not getattr(args, "no_color", False))
    return {"color": color, "verbose": getattr(args, "verbose", False)}


@cache  # built once per process (3 ms): parsing leaves it as it was, and main() may run many times in one
def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="schemaflow", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"schemaflow {__version__}")
    parser.add_argument("--project", default=".", metavar="DIR", help="the project directory (default: .)")
    parser.add_argument("--target", metavar="NAME",
                        help=f"the target of schemaflow.yaml to use (default: ${ENV_TARGET}, else its 'target:')")
    parser.add_argument("--approve-code", action="append", default=[], metavar="ID",
                        help="approve a setting of schemaflow.yaml that runs code (a hook, a Spark setting that loads "
                             f"classes), by the id plan shows; repeatable (also: ${APPROVAL_VARIABLE})")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_CommandParser)

    init = commands.add_parser("init", help="write a starter project into the project folder (default: here)")
    init.add_argument("--database", default="warehouse", type=str.lower,
                      help="the database the project manages (default: warehouse)")
    init.add_argument("--force", action="store_true", help="overwrite starter files that exist")

    fmt = commands.add_parser("fmt", help="rewrite the project's YAML files in the canonical layout (keys in the "
                                          "order of their JSON Schema, one column a line), comments and values kept")
    fmt.add_argument("--check", action="store_true",
                     help="write nothing: show what would change, and exit 2 if anything would (for CI)")

    validate = commands.add_parser("validate", help="check the project's YAML, without a metastore")
    validate.add_argument("--format", choices=("text", "json"), default="text",
                          help="json: the located problems as data, for CI annotations (exit code as for text)")

    plan = commands.add_parser("plan", help="show the steps that would make the metastore match schemas/")
    plan.add_argument("--format", choices=FORMATS, default="text")
    _add_display_options(plan)
    plan.add_argument("--out", type=Path, metavar="FILE", help="also save the plan as JSON, for apply")
    plan.add_argument("--allow-destructive", action="store_true", help="plan drops instead of blocking them")
    plan.add_argument("--check-partitions", action="store_true",
                      help="also look for stale partition column lists in every partitioned table (lists them all)")
    plan.add_argument("--against", type=Path, metavar="SNAPSHOT",
                      help="plan against a saved live state (see snapshot) instead of the metastore")
    plan.add_argument("--base", metavar="REF",
                      help="plan against the schemas at this git ref instead of the metastore (no JVM)")
    plan.add_argument("--head", metavar="REF", help="with --base: plan the schemas at this git ref "
                                                     "(default: the working tree, uncommitted edits included)")

    apply = commands.add_parser("apply", help="plan (or load a saved plan) and apply it")
    apply.add_argument("plan_file", nargs="?", type=Path, metavar="PLAN", help="a plan saved by plan --out")
    apply.add_argument("--auto-approve", action="store_true", help="do not ask for confirmation")
    apply.add_argument("--allow-destructive", action="store_true", help="allow drops (when planning here)")
    apply.add_argument("--reviewed", type=Path, metavar="PLAN",
                       help="a plan made for review (plan --base ... --out): apply only if planning now makes the "
                            "same changes, else refuse it as stale")
    apply.add_argument("--take-over", action="store_true",
                       help="finish the work of an apply that stopped on another machine (its claims name it)")
    apply.add_argument("--recompile", action="append", default=[], metavar="VIEW",
                       help="also re-create this declared view from its SQL (db.name; repeatable)")

    show = commands.add_parser("show", help="a saved plan (plan --out), for people; needs no project or metastore")
    show.add_argument("plan_file", type=Path, metavar="PLAN")
    show.add_argument("--format", choices=("text", "markdown"), default="text")
    _add_display_options(show)

    graph = commands.add_parser("graph", help="show how the declared tables and views depend on each other")
    graph.add_argument("--format", choices=GRAPH_FORMATS, default="text")
    graph.add_argument("object", nargs="?", metavar="OBJECT", help="only this object (db.name), with everything "
                                                                  "upstream and downstream of it")

    history = commands.add_parser("history", help="what schemaflow applied to and dropped from the managed "
                                                  "databases: when, from which commit")
    history.add_argument("objects", nargs="*", metavar="OBJECT",
                         help="only these objects: db.name, or globs such as 'retail.*' (default: all)")
    history.add_argument("--format", choices=("text", "json"), default="text")
    drift = commands.add_parser("drift", help="what changed in the metastore outside schemaflow since the last apply")
    drift.add_argument("--format", choices=("text", "json"), default="text")
    commands.add_parser("hash-migrations", help="write migrations/schemaflow.sum after reviewing the migrations")

    adopt = commands.add_parser("import", help="write schema files for the tables and views of a live database")
    adopt.add_argument("--database", required=True, metavar="DB")
    adopt.add_argument("--out", type=Path, metavar="DIR", help="where to write them (default: the project's schemas/)")
    adopt.add_argument("--force", action="store_true", help="overwrite files that exist")

    snapshot = commands.add_parser("snapshot", help="save the live state of the managed databases as JSON")
    snapshot.add_argument("--out", type=Path, required=True, metavar="FILE")

    view_partitions = commands.add_parser("view-partitions", help="the partitions of partitioned views")
    view_partitions.add_argument("action", choices=("sync",),
                                 help="sync: add and drop view partitions to match schemas/ and the base tables")
    view_partitions.add_argument("--auto-approve", action="store_true", help="do not ask for confirmation")
    view_partitions.add_argument("--dry-run", action="store_true",
                                 help="show what would change, change nothing (exit 2 when something would)")
    completion = commands.add_parser("completion", help="print a shell completion script (bash or zsh)")
    completion.add_argument("shell", choices=("bash", "zsh"))

    for action in commands._choices_actions:  # argparse's list of the commands with their help
        command = commands.choices[action.dest]
        codes, example = _HELP[action.dest]
        words = action.help or ""
        command.description = words[:1].upper() + words[1:] + "."
        command.epilog = f"exit codes: {codes}\nexample:\n  {example}"
    return parser


# Each command's exit codes and an example, for its --help (its description is its one-line help).
_HELP = {
    "init": ("0 written, 1 error (a file exists: nothing written)", "schemaflow init --database sales"),
    "fmt": ("0 formatted (or canonical already), 2 with --check: files would change, 1 a file cannot be formatted",
            "schemaflow fmt --check"),
    "validate": ("0 valid, 1 invalid", "schemaflow validate --format json > problems.json"),
    "plan": ("0 no changes, 2 changes, 1 error or a blocked step",
             "schemaflow plan --base origin/main --format markdown --out plan.json"),
    "apply": ("0 applied, 1 error (what was and was not applied is listed)",
              "schemaflow apply plan.json --auto-approve"),
    "show": ("as plan: 0 no changes, 2 changes, 1 error or a blocked step", "schemaflow show plan.json"),
    "graph": ("0, 1 invalid", "schemaflow graph --format mermaid retail.daily_revenue"),
    "history": ("0, 1 error", "schemaflow history 'retail.*'"),
    "drift": ("0 none, 2 drift, 1 error", "schemaflow drift"),
    "hash-migrations": ("0, 1 error", "schemaflow hash-migrations"),
    "import": ("0 written, 1 error or an object that could not be written", "schemaflow import --database sales"),
    "snapshot": ("0, 1 error", "schemaflow snapshot --out live.json"),
    "view-partitions": ("0 done, 2 changes with --dry-run, 1 error", "schemaflow view-partitions sync --dry-run"),
    "completion": ("0", "schemaflow completion bash >> ~/.bashrc"),
}


FULL_COLLECTIONS_RARER = 10


def run() -> NoReturn:
    """The ``schemaflow`` command: ``main`` on the process's arguments, then exit with its code.

    Exiting, Python collects cycles once more over every object still alive: after reading 5,500
    schema files, millions of them, 1.2 s of 6.3 (measured). They are frozen first, out of the
    collector's sight; the process is ending, so nothing is left uncollected that matters.
    While it runs, full collections come ten times rarer than Python's default: each scans every
    object alive, and the catalogs a command reads stay alive until it exits, so each scans millions
    of objects to free none (one took 1.2 s of a ``plan --base`` of 11,000 objects). The younger
    generations, where sqlglot's cyclic SQL trees die, are collected as before.
    """
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, FULL_COLLECTIONS_RARER * middle)
    write_at_exit()  # this process ends soon: its Spark session may leave the JVM's class archive behind
    code = main()
    gc.freeze()
    sys.exit(code)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; everything it prints goes through ``GuardedStream`` (no CI workflow command, no
    terminal escape that schemaflow did not write), whatever user text it holds."""
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = GuardedStream(out), GuardedStream(err)
    try:
        return _command(argv)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        sys.stdout, sys.stderr = out, err


def _command(argv: Sequence[str] | None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "show":  # a saved plan stands alone
            return _show(args)
        if args.command == "init":  # there is no project yet
            return _init(args)
        if args.command == "fmt":  # the files alone: even settings that do not validate are formatted
            return _fmt(args)
        if args.command == "completion":
            print(_completion(args.shell), end="")
            return EXIT_OK
        if args.command == "import":  # adopting schemaflow: the project may have no schemas yet
            (Path(args.project) / "schemas").mkdir(parents=True, exist_ok=True)
        project = load_project(args.project, target=args.target, approve_code=tuple(args.approve_code))
        return {"validate": _validate, "plan": _plan, "apply": _apply, "snapshot": _snapshot, "history": _history,
                "hash-migrations": _hash_migrations, "import": _import, "drift": _drift, "graph": _graph,
                "view-partitions": _view_partitions}[args.command](project, args)
    except SpecError as error:
        print(error, file=sys.stderr)
        print(f"{len(error.problems)} problem(s) found; nothing was planned or applied.", file=sys.stderr)
        return EXIT_ERROR
    except SchemaflowError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_ERROR


def _validate(project: Project, args: argparse.Namespace) -> int:
    if args.format == "json":
        return _validate_json(project)
    catalog = workflow.desired_state(project)
    tables = sum(1 for _ in catalog.tables())
    views = sum(1 for _ in catalog.views())
    databases = f"{plural(len(catalog.databases), 'database')} ({', '.join(catalog.databases)})"
    print(f"valid: {plural(tables, 'table')} and {plural(views, 'view')} in {databases}")
    return EXIT_OK


def _validate_json(project: Project) -> int:
    """``validate --format json``: ``{"valid", "problems": [{"path", "line", "col", "message"}], ...}``."""
    try:
        catalog = workflow.desired_state(project)
    except SpecError as error:
        problems = [{"path": p.source.path, "line": p.source.line, "col": p.source.col, "message": p.message}
                    for p in error.problems]
        print(json.dumps({"valid": False, "problems": problems}, indent=2, ensure_ascii=False))
        return EXIT_ERROR
    print(json.dumps({"valid": True, "problems": [], "databases": list(catalog.databases),
                      "tables": sum(1 for _ in catalog.tables()), "views": sum(1 for _ in catalog.views())}, indent=2))
    return EXIT_OK


def _graph(project: Project, args: argparse.Namespace) -> int:
    sys.stdout.write(render_graph(workflow.desired_state(project), args.format, args.object))
    return EXIT_OK


def _plan(project: Project, args: argparse.Namespace) -> int:
    review = _review(project, args)
    plan = review.plan
    sys.stdout.write(render(review, args.format, **_display(args)))
    if args.out:
        args.out.write_text(plan.to_json())
        # A plan between git refs is for review: what to apply is planned against the metastore.
        apply_hint = "" if args.base or plan.blocked else f"; apply it with: schemaflow apply {args.out}"
        print(f"Saved the plan to {args.out}{apply_hint}", file=sys.stderr)
    if plan.blocked:  # a change that cannot be applied must not pass a CI check as "changes"
        print(f"error: {plural(len(plan.blocked), 'step')} blocked: apply would refuse this plan", file=sys.stderr)
    return _exit_code(plan)


def _exit_code(plan: Plan) -> int:
    """What ``plan`` and ``show`` exit with: 1 for a plan with a blocked step, else 0 for none, 2 for changes."""
    if plan.blocked:
        return EXIT_ERROR
    return EXIT_OK if plan.is_empty else EXIT_CHANGES


def _completion(shell: str) -> str:
    """A completion script for ``shell``: the commands, and each command's options, from the parser itself."""
    parser = _parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    options = {name: sorted(_options(command)) for name, command in sorted(commands.choices.items())}
    cases = "\n".join(f"        {name}) words=\"{' '.join(flags)}\" ;;" for name, flags in options.items())
    script = f"""# schemaflow {shell} completion: eval "$(schemaflow completion {shell})"
_schemaflow() {{
    local current="${{COMP_WORDS[COMP_CWORD]}}" command="" word words skip=""
    for word in "${{COMP_WORDS[@]:1:COMP_CWORD-1}}"; do
        if [[ -n "$skip" ]]; then skip=""; continue; fi
        case "$word" in --project|--target) skip=1 ;; -*) ;; *) command="$word"; break ;; esac
    done
    case "$command" in
{cases}
        *) words="{' '.join(sorted(commands.choices))} --project --target --version --help" ;;
    esac
    COMPREPLY=($(compgen -W "$words" -- "$current"))
}}
"""
    if shell == "zsh":
        script += "autoload -U +X bashcompinit && bashcompinit\n"
    return script + "complete -o default -F _schemaflow schemaflow\n"


def _init(args: argparse.Namespace) -> int:
    from schemaflow.starter import write_starter

    if not re.fullmatch(r"[a-z_][a-z0-9_]*", args.database):
        raise SchemaflowError(f"--database {args.database!r}: a Hive name has letters, digits and underscores and "
                              "does not start with a digit")
    root = Path(args.project)
    for path in write_starter(root, args.database, args.force):
        print(f"wrote {path}")
    here = "" if root.resolve() == Path.cwd() else f"--project {args.project} "
    print(f"A starter project for the database {args.database}. Next:\n"
          f"  schemaflow {here}validate     # the files, without a metastore\n"
          f"  schemaflow {here}plan         # what apply would do (embedded metastore: .schemaflow/)\n"
          f"  schemaflow {here}apply\n"
          "Then set SCHEMAFLOW_PACKAGE in .github/workflows/ to review and apply every change in CI.")
    return EXIT_OK


def _fmt(args: argparse.Namespace) -> int:
    from schemaflow.spec.fmt import format_project, unified_diff, write_formatted

    root = Path(args.project)
    if not (root / "schemas").is_dir():
        raise SchemaflowError(f"{root.resolve()}: no schemas/ directory here; run in a schemaflow project or "
                              "pass --project DIR")
    formatted, problems = format_project(root, lambda message: print(message, file=sys.stderr, flush=True))
    changed = [file for file in formatted if file.changed]
    if args.check:
        for file in changed:
            sys.stdout.write(unified_diff(file))
    else:
        for path in write_formatted(root, changed):
            print(f"formatted {path}")
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        print(f"error: {plural(len(problems), 'file')} could not be formatted (left as they are)", file=sys.stderr)
        return EXIT_ERROR
    if args.check and changed:
        print(f"{plural(len(changed), 'file')} would be reformatted: run schemaflow fmt", file=sys.stderr)
        return EXIT_CHANGES
    if not changed:
        print(f"{plural(len(formatted), 'file')} already formatted.")
    return EXIT_OK


def _show(args: argparse.Namespace) -> int:
    """A saved plan as ``plan`` prints it; exit codes as ``plan``'s."""
    plan = workflow.load_plan(args.plan_file)
    sys.stdout.write(render(Review(plan), args.format, **_display(args)))
    return _exit_code(plan)


def _review(project: Project, args: argparse.Namespace) -> Review:
    if args.head and not args.base:
        raise SchemaflowError("--head needs --base: the git ref to plan against")
    if args.base and args.against:
        raise SchemaflowError("--base and --against both say what to plan against: give one")
    if args.base:
        counts = (f"partition counts from {project.settings.metastore_uri}" if project.settings.metastore_uri
                  else "without a metastore: partition counts are unknown")
        print(f"Planning {args.head or 'the working tree'} against {args.base} from git, {counts}.", file=sys.stderr)
        return workflow.review_refs(project, args.base, args.head, allow_destructive=args.allow_destructive)
    if args.against:
        return workflow.review_snapshot(project, args.against, allow_destructive=args.allow_destructive)
    return workflow.review_live(project, workflow.Live(project, direct=True), allow_destructive=args.allow_destructive,
                                check_partitions=args.check_partitions)


def _apply(project: Project, args: argparse.Namespace) -> int:
    if not args.auto_approve and not sys.stdin.isatty():  # fail before starting anything
        raise SchemaflowError("not a terminal, so no one can confirm: pass --auto-approve to apply")
    workflow.check_code(project, "in apply")
    live = workflow.Live(project)
    reviewed = workflow.load_plan(args.reviewed) if args.reviewed else None
    if reviewed:
        workflow.check_settings(reviewed, args.reviewed, project)
    if reviewed and args.plan_file:
        raise SchemaflowError("--reviewed checks a plan made now against the reviewed one: give no PLAN with it")
    if args.plan_file and args.recompile:
        raise SchemaflowError("a saved plan runs as reviewed: plan again to re-create views with --recompile, "
                              "or give no PLAN")
    if args.plan_file:
        plan = workflow.load_plan(args.plan_file)
        if args.allow_destructive and not plan.allow_destructive:
            raise SchemaflowError(f"{args.plan_file} was planned without --allow-destructive; "
                                  "a saved plan runs as reviewed: plan again with --allow-destructive")
        check_runnable(plan)
        workflow.check_saved(plan, args.plan_file, project, live)
    else:
        allow = reviewed.allow_destructive if reviewed else args.allow_destructive
        plan = workflow.make_plan(project, live, allow_destructive=allow, recompile=tuple(args.recompile))
    stale = differences(reviewed, plan) if reviewed else []
    if stale:
        raise SchemaflowError(f"{args.reviewed} is stale: planning now against the metastore makes other changes "
                              "than were reviewed; nothing was applied. Review again.\n  " + "\n  ".join(stale))
    sys.stdout.write(render(Review(plan), "text"))
    if plan.is_empty:
        return EXIT_OK
    check_runnable(plan)
    workflow.check_claims(plan, take_over=args.take_over)
    if not args.auto_approve and not _confirm(plan):
        print("Not applied.", file=sys.stderr)
        return EXIT_ERROR
    print()
    target = live.writer()
    target.progress = lambda message: print(f"\n      {message}", end="", flush=True)
    pause = workflow.test_pause()
    if pause:
        pause("planned")
    apply_plan(plan, target, progress=sys.stdout, pause=pause)
    print(f"\nApplied {len(plan.steps)} steps.")
    return _after_apply(project, plan, target)


def _after_apply(project: Project, plan: Plan, target: Metastore) -> int:
    """Refresh Spark's cache of what changed, then run the project's hooks; exit 1 if one failed."""
    changed = changed_objects(plan)
    for warning in refresh(cached_before(plan), target.run_sql):
        print(f"warning: {warning}", file=sys.stderr)
    failures = run_hooks(project.settings.after_apply, changed, str(project.root))
    for failure in failures:
        print(f"error: {failure.describe()}", file=sys.stderr)
    if failures:
        print(f"The apply itself succeeded: all {plural(len(plan.steps), 'step')} applied. Run the failed "
              f"{plural(len(failures), 'hook')} again by hand, with {CHANGED_VARIABLE}='{' '.join(changed)}'.",
              file=sys.stderr)
        return EXIT_ERROR
    return EXIT_OK


def _confirm(plan: Plan) -> bool:
    risky = [f"  {step.object}: " + ("destructive" if step.destructive else "; ".join(step.hazards))
             for step in plan.steps if step.destructive or step.hazards]
    if risky:
        print(f"\n{plural(len(risky), 'step')} destroy data or put it at risk:", *risky, sep="\n")
    answer = input(f"\nApply these {len(plan.steps)} steps? Only 'yes' is accepted: ")
    return answer.strip() == "yes"


def _drift(project: Project, args: argparse.Namespace) -> int:
    drifts = workflow.drift(project, workflow.Live(project, direct=True))
    if args.format == "json":
        _print_json({"drift": [{"object": d.object, "aspects": list(d.aspects), "applied_at": d.applied_at,
                                "commit": d.commit, "message": d.describe(), "details": list(d.details)}
                               for d in drifts]})
        return EXIT_CHANGES if drifts else EXIT_OK
    for found in drifts:
        print(found.describe())
        for detail in found.details:
            print(f"  {detail}")
    if not drifts:
        print("No drift: every object schemaflow applied is as it left it.")
    return EXIT_CHANGES if drifts else EXIT_OK


def _print_json(document: object) -> None:
    """A JSON document on stdout, keys sorted, for CI and other tools."""
    print(json.dumps(document, indent=2, sort_keys=True))


def _import(project: Project, args: argparse.Namespace) -> int:
    out = args.out or project.schemas_dir
    database = args.database.lower()
    imported = workflow.import_database(project, workflow.Live(project), database, out, args.force)
    for path in imported.written:
        print(f"wrote {path}")
    for path in imported.sources:
        print(f"wrote {path} (a source: a view of {database} reads it)")
    for notice in imported.left_alone:
        print(notice)
    for reason in imported.skipped:
        print(f"skipped {reason}", file=sys.stderr)
    total = len(imported.written) + len(imported.skipped) + len(imported.left_alone)
    print(f"Imported {len(imported.written)} of {total} objects of {database}"
          + (f" ({len(imported.left_alone)} left alone, as plan leaves them)" if imported.left_alone else "")
          + (f", and {plural(len(imported.sources), 'source')} its views read" if imported.sources else "") + ".")
    if imported.skipped:
        print(f"error: {plural(len(imported.skipped), 'object')} could not be written, and plan would propose to drop "
              "them: each line above says what to do", file=sys.stderr)
        return EXIT_ERROR
    if imported.imports:
        others = " and ".join(f"schemaflow import --database {other}" for other in imported.imports)
        print(f"Its views read {', '.join(imported.imports)}, which this project manages: run {others} too; then "
              "schemaflow plan should find nothing to do.")
        return EXIT_OK
    print("schemaflow plan should now find nothing to do.")
    return EXIT_OK


def _hash_migrations(project: Project, args: argparse.Namespace) -> int:
    path = workflow.hash_migrations(project)
    print(f"Wrote {path.relative_to(project.root)}: commit it with the migrations it lists.")
    return EXIT_OK


def _history(project: Project, args: argparse.Namespace) -> int:
    records = workflow.history(project, workflow.Live(project), tuple(args.objects))
    if args.format == "json":
        _print_json({"history": [{"at": r.at, "object": r.object, "what": r.what, "commit": r.commit}
                                 for r in records]})
        return EXIT_OK
    if not records:
        print(f"Nothing applied by schemaflow to {' '.join(args.objects)} yet." if args.objects
              else "Nothing applied by schemaflow in these databases yet.")
    for record in records:
        print(f"{record.at}  {record.object:<40} {record.what:<40} {short_commit(record.commit)}")
    return EXIT_OK


def _snapshot(project: Project, args: argparse.Namespace) -> int:
    from schemaflow.catalog.snapshot import write_snapshot

    desired = workflow.desired_state(project)
    live = workflow.Live(project, direct=True)
    current = live.read(desired.databases)
    counts = {t.key: live.reader.count_partitions(t.key) for t in current.tables() if t.partition_columns}
    write_snapshot(current, args.out, partition_counts=counts)
    print(f"Saved the live state of {', '.join(desired.databases)} to {args.out}", file=sys.stderr)
    return EXIT_OK


def _view_partitions(project: Project, args: argparse.Namespace) -> int:
    """``view-partitions sync``: exit 0 done (or nothing to do), 2 with ``--dry-run`` when something would change."""
    if not (args.auto_approve or args.dry_run) and not sys.stdin.isatty():
        raise SchemaflowError("not a terminal, so no one can confirm: pass --auto-approve (or --dry-run)")
    live = workflow.Live(project)
    plan, left_out = workflow.view_partitions_plan(project, live)
    for key in left_out:
        print(f"skipped {key}: the view itself changes; schemaflow apply syncs its partitions", file=sys.stderr)
    sys.stdout.write(render(Review(plan), "text"))
    if plan.is_empty or args.dry_run:
        return EXIT_OK if plan.is_empty else EXIT_CHANGES
    if not args.auto_approve and not _confirm(plan):
        print("Not applied.", file=sys.stderr)
        return EXIT_ERROR
    target = live.writer()
    target.progress = lambda message: print(f"\n      {message}; ", end="", flush=True)
    apply_plan(plan, target, progress=sys.stdout)
    print(f"\nSynced the partitions of {plural(len(plan.steps), 'view')}.")
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
