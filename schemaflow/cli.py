"""The ``schemaflow`` command line: parse arguments, call the library, choose the exit code.

Exit codes: ``validate`` and ``graph`` 0 valid, 1 invalid; ``plan`` (against the catalog, a snapshot, or a git
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
import time
from dataclasses import dataclass
from functools import cache, cached_property
from pathlib import Path
from typing import Any, NoReturn
from collections.abc import Callable, Sequence

from schemaflow import __version__
from schemaflow.apply.after import CHANGED_VARIABLE
from schemaflow.applying import ApplyOptions, Pause, apply_project, run_plan
from schemaflow.catalog.hive import local_server
from schemaflow.catalog.hive.class_archive import write_at_exit
from schemaflow.catalog.live import Live
from schemaflow.catalog.metadata_bounds import metadata_bounds
from schemaflow.code_settings import APPROVAL_VARIABLE
from schemaflow.completion import OBJECTS, SHELLS, TARGETS, Completable, listed_names, script
from schemaflow.errors import SchemaflowError, SpecError
from schemaflow.output_safety import GuardedStream, one_line
from schemaflow.plan.backups import BackupDrops
from schemaflow.plan.plan import Plan
from schemaflow.project import ENV_TARGET, Project, find_root, load_project
from schemaflow.render import FORMATS, render
from schemaflow.render.graph import GRAPH_FORMATS, render_graph
from schemaflow.render.review import Review
from schemaflow import workflow
from schemaflow.wording import duration, plural, short_commit

EXIT_OK, EXIT_ERROR, EXIT_CHANGES = 0, 1, 2
# What --help opens with: what the tool is, for someone who has not met it.
ABOUT = ("Declarative schema migrations for the tables and views of a catalog (a Hive metastore through PySpark, an "
         "Iceberg REST catalog, the AWS Glue Data Catalog): keep their definitions as YAML in git, see what would "
         "change with plan, and make it so with apply.")


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

    def __init__(self, *, targeted: bool = True, **kwargs: Any) -> None:
        super().__init__(formatter_class=argparse.RawDescriptionHelpFormatter, **kwargs)
        self.add_argument("--project", default=argparse.SUPPRESS, metavar="DIR",
                          help="the project directory (also accepted before the command)")
        if targeted:
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
    parser = _Parser(prog="schemaflow", description=ABOUT)
    parser.add_argument("--version", action="version", version=f"schemaflow {__version__}")
    parser.add_argument("--project", metavar="DIR",
                        help="the project directory (default: the nearest folder upwards from here with a "
                             "schemaflow.yaml, as git finds .git)")
    parser.add_argument("--target", metavar="NAME",
                        help=f"the target of schemaflow.yaml to use (default: ${ENV_TARGET}, else its 'target:')")
    parser.add_argument("--approve-code", action="append", default=[], metavar="ID",
                        help="approve a setting of schemaflow.yaml that runs code (a hook, a Spark setting that loads "
                             f"classes), by the id plan shows; repeatable (also: ${APPROVAL_VARIABLE})")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_CommandParser)
    for command in COMMANDS:
        sub = commands.add_parser(command.name, help=command.help, description=command.help[:1].upper()
                                  + command.help[1:] + ".", epilog=f"exit codes: {command.exits}\nexample:\n  "
                                  + command.example, targeted=command.targeted)
        command.arguments(sub)
    return parser


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


def main(argv: Sequence[str] | None = None, *, pause: Pause | None = None) -> int:
    """Run one command; everything it prints goes through ``GuardedStream`` (no CI workflow command, no
    terminal escape that schemaflow did not write), whatever user text it holds. ``pause`` stops an
    apply at a named point (``applying.Pause``), for tests of crashes and races."""
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = GuardedStream(out), GuardedStream(err)
    try:
        return _command(argv, pause)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        sys.stdout, sys.stderr = out, err


def _command(argv: Sequence[str] | None, pause: Pause | None) -> int:
    args = _parser().parse_args(argv)
    command = next(c for c in COMMANDS if c.name == args.command)
    if args.target and not command.targeted:
        _parser().error(f"argument --target: {command.name} uses no target; give --target to the commands that "
                        "reach a catalog or read the project's names")
    try:
        with metadata_bounds():  # one budget for all the metadata files a command reads
            return command.run(_Invocation(args, pause))
    except SpecError as error:
        print(error, file=sys.stderr)
        print(f"{plural(len(error.problems), 'problem')} found; nothing was planned or applied.", file=sys.stderr)
        return EXIT_ERROR
    except SchemaflowError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_ERROR


def _validate(call: _Invocation) -> int:
    project = call.project
    if call.args.format == "json":
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


def _graph(call: _Invocation) -> int:
    sys.stdout.write(render_graph(workflow.desired_state(call.project), call.args.format, call.args.object))
    return EXIT_OK


def _plan(call: _Invocation) -> int:
    args = call.args
    review = _review(call.project, args)
    plan = review.plan
    sys.stdout.write(render(review, args.format, **_display(args)))
    if args.out:
        args.out.write_text(plan.to_json())
        # A plan between git refs is for review: what to apply is planned against the catalog.
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


# The arguments that name an object of the project (db.name): completion offers the project's objects.
_OBJECT_METAVARS = ("OBJECT", "VIEW", "TABLE")


def _completable(parser: argparse.ArgumentParser, help: str = "") -> Completable:
    """What ``parser`` completes: its options, their choices, and which name a target or an object."""
    options, choices, names, takes_value = {}, {}, {}, set()
    positional: tuple[str, ...] = ()
    positional_names = None
    for action in parser._actions:  # argparse keeps them there; it has no public listing
        if isinstance(action, argparse._SubParsersAction):
            continue
        if not action.option_strings:
            positional = tuple(action.choices or ())
            positional_names = OBJECTS if action.metavar in _OBJECT_METAVARS else None
        for option in action.option_strings:
            options[option] = action.help or ""
            if action.nargs == 0:
                continue
            takes_value.add(option)
            if action.choices:
                choices[option] = tuple(action.choices)
            elif action.dest == "target":
                names[option] = TARGETS
            elif action.metavar in _OBJECT_METAVARS:
                names[option] = OBJECTS
    return Completable(help, options, choices, names, frozenset(takes_value), positional, positional_names)


def _completion(shell: str) -> str:
    """A completion script for ``shell``, from the parser itself."""
    parser = _parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    helps = {c.name: c.help for c in COMMANDS}
    return script(shell, _completable(parser), {name: _completable(command, helps[name])
                                                 for name, command in commands.choices.items()})


def _init(call: _Invocation) -> int:
    """Write the starter project: there is no project to load yet."""
    from schemaflow.starter import write_starter

    args = call.args
    if not re.fullmatch(r"[a-z_][a-z0-9_]*", args.database):
        raise SchemaflowError(f"--database {args.database!r}: a Hive name has letters, digits and underscores and "
                              "does not start with a digit")
    root = Path(args.project or ".")  # a new project: here unless told, never a project found above
    for path in write_starter(root, args.database, args.force):
        print(f"wrote {path}")
    here = "" if root.resolve() == Path.cwd() else f"--project {args.project} "
    print(f"A starter project for the database {args.database}. Next:\n"
          f"  schemaflow {here}validate     # the files, without a catalog\n"
          f"  schemaflow {here}plan         # what apply would do (embedded metastore: .schemaflow/)\n"
          f"  schemaflow {here}apply\n"
          "Then set SCHEMAFLOW_PACKAGE in .github/workflows/ (and PYSPARK_VERSION in the apply workflow) to review "
          "and apply every change in CI.")
    return EXIT_OK


def _fmt(call: _Invocation) -> int:
    """The files alone, not the project loaded: even settings that do not validate are formatted."""
    from schemaflow.spec.fmt import format_project, unified_diff, write_formatted

    args = call.args
    root = call.root
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
            print(f"formatted {one_line(path)}")
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


def _show(call: _Invocation) -> int:
    """A saved plan as ``plan`` prints it (it stands alone: no project); exit codes as ``plan``'s."""
    plan = workflow.load_plan(call.args.plan_file)
    sys.stdout.write(render(Review(plan), call.args.format, **_display(call.args)))
    return _exit_code(plan)


def _review(project: Project, args: argparse.Namespace) -> Review:
    if args.head and not args.base:
        raise SchemaflowError("--head needs --base: the git ref to plan against")
    if args.base and args.against:
        raise SchemaflowError("--base and --against both say what to plan against: give one")
    if args.base:
        hints = workflow.review_hints(project, args.base)  # never from an address the head writes
        print(f"Planning {args.head or 'the working tree'} against {args.base} from git, {hints.said}.", file=sys.stderr)
        return workflow.review_refs(project, args.base, args.head, allow_destructive=args.allow_destructive,
                                    drop_backups=_drop_backups(args), hints=hints)
    if args.against:
        return workflow.review_snapshot(project, args.against, allow_destructive=args.allow_destructive,
                                        drop_backups=_drop_backups(args))
    return workflow.review_live(project, Live(project, direct=True), allow_destructive=args.allow_destructive,
                                drop_backups=_drop_backups(args), check_partitions=args.check_partitions)


def _drop_backups(args: argparse.Namespace) -> BackupDrops:
    return BackupDrops(args.drop_backups, tuple(args.drop_backup_with_rows))


def _apply(call: _Invocation) -> int:
    args = call.args
    if not args.auto_approve and not sys.stdin.isatty():  # fail before starting anything
        raise SchemaflowError("not a terminal, so no one can confirm: pass --auto-approve to apply")
    options = ApplyOptions(saved=args.plan_file, reviewed=args.reviewed, allow_destructive=args.allow_destructive,
                           drop_backups=_drop_backups(args),
                           recompile=tuple(args.recompile), take_over=args.take_over)
    outcome = apply_project(call.project, Live(call.project), options,
                            show=lambda plan: sys.stdout.write(render(Review(plan), "text")),
                            confirm=lambda plan: _confirmed(plan, args.auto_approve), progress=sys.stdout,
                            report=_report, pause=call.pause)
    plan = outcome.plan
    if not outcome.ran:
        return EXIT_OK if plan.is_empty else EXIT_ERROR
    print(f"\nApplied {plural(len(plan.steps), 'step')}.")
    for warning in outcome.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    for failure in outcome.failures:
        print(f"error: {failure.describe()}", file=sys.stderr)
    if outcome.failures:
        print(f"The apply itself succeeded: all {plural(len(plan.steps), 'step')} applied. Run the failed "
              f"{plural(len(outcome.failures), 'hook')} again by hand, with {CHANGED_VARIABLE}="
              f"'{' '.join(outcome.changed)}'.", file=sys.stderr)
        return EXIT_ERROR
    return EXIT_OK


def _report(message: str) -> None:
    """What a long step says it has done so far, on a line of its own under the step's; the step's
    "done" follows the last one on its line."""
    print(f"\n      {message}; ", end="", flush=True)


def _confirmed(plan: Plan, auto_approve: bool) -> bool:
    """Whether the person at the terminal (or --auto-approve) confirms ``plan``; the steps' output follows."""
    if not auto_approve and not _confirm(plan):
        print("Not applied.", file=sys.stderr)
        return False
    print()
    return True


def _confirm(plan: Plan) -> bool:
    risky = [f"  {step.object}: " + ("destructive" if step.destructive else "; ".join(step.hazards))
             for step in plan.steps if step.destructive or step.hazards]
    if risky:
        print(f"\nData destroyed or at risk in {plural(len(risky), 'step')}:", *risky, sep="\n")
    answer = input(f"\nApply {'this step' if len(plan.steps) == 1 else f'these {len(plan.steps)} steps'}? "
                   "Only 'yes' is accepted: ")
    return answer.strip() == "yes"


def _drift(call: _Invocation) -> int:
    drifts = workflow.drift(call.project, Live(call.project, direct=True))
    if call.args.format == "json":
        _print_json({"drift": [{"object": d.object, "aspects": list(d.aspects), "applied_at": d.applied_at,
                                "commit": d.commit, "message": d.describe(), "details": list(d.details)}
                               for d in drifts]})
        return EXIT_CHANGES if drifts else EXIT_OK
    for found in drifts:
        print(one_line(found.describe()))  # the metastore's text: each line one line
        for detail in found.details:
            print(f"  {one_line(detail)}")
    if not drifts:
        print("No drift: every object schemaflow applied is as it left it.")
    return EXIT_CHANGES if drifts else EXIT_OK


def _print_json(document: object) -> None:
    """A JSON document on stdout, keys sorted, for CI and other tools."""
    print(json.dumps(document, indent=2, sort_keys=True))


def _import(call: _Invocation) -> int:
    args = call.args
    (call.root / "schemas").mkdir(parents=True, exist_ok=True)  # adopting: there may be no schemas yet
    project = call.project
    out = args.out or project.schemas_dir
    database = args.database.lower()
    imported = workflow.import_database(project, Live(project, direct=True), database, out, args.force)
    for path in imported.written:
        print(f"wrote {one_line(str(path))}")
    for path in imported.sources:
        print(f"wrote {one_line(str(path))} (a source: a view of {database} reads it)")
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


def _hash_migrations(call: _Invocation) -> int:
    path = workflow.hash_migrations(call.project)
    print(f"Wrote {path.relative_to(call.project.root)}: commit it with the migrations it lists.")
    return EXIT_OK


def _history(call: _Invocation) -> int:
    args = call.args
    records = workflow.history(call.project, Live(call.project, direct=True), tuple(args.objects))
    if args.format == "json":
        _print_json({"history": [{"at": r.at, "object": r.object, "what": r.what, "commit": r.commit,
                                  "change": r.change or None} for r in records]})
        return EXIT_OK
    if not records:
        print(f"Nothing applied by schemaflow to {' '.join(args.objects)} yet." if args.objects
              else "Nothing applied by schemaflow in these databases yet.")
        return EXIT_OK
    print(f"{'APPLIED AT':<20}  {'OBJECT':<40} {'CHANGE':<9} {'WHAT':<40} COMMIT")
    for record in records:  # each field as one line: the metastore holds them, whoever wrote them
        print(one_line(f"{record.at:<20}  {record.object:<40} {record.change or '?':<9} {record.what:<40} "
                       f"{short_commit(record.commit)}"))
    return EXIT_OK


def _snapshot(call: _Invocation) -> int:
    saved, unread = workflow.snapshot(call.project, Live(call.project, direct=True), call.args.out)
    for line in unread:
        print(f"warning: {one_line(line)}", file=sys.stderr)
    print(f"Saved the live state of {', '.join(saved)} to {call.args.out}", file=sys.stderr)
    return EXIT_OK


def _view_partitions(call: _Invocation) -> int:
    """``view-partitions sync``: exit 0 done (or nothing to do), 2 with ``--dry-run`` when something would change."""
    args = call.args
    if not (args.auto_approve or args.dry_run) and not sys.stdin.isatty():
        raise SchemaflowError("not a terminal, so no one can confirm: pass --auto-approve (or --dry-run)")
    live = Live(call.project)
    plan, left_out = workflow.view_partitions_plan(call.project, live)
    for key in left_out:
        print(f"skipped {key}: the view itself changes; schemaflow apply syncs its partitions", file=sys.stderr)
    sys.stdout.write(render(Review(plan), "text"))
    if plan.is_empty or args.dry_run:
        return EXIT_OK if plan.is_empty else EXIT_CHANGES
    if not args.auto_approve and not _confirm(plan):
        print("Not applied.", file=sys.stderr)
        return EXIT_ERROR
    run_plan(live, plan, progress=sys.stdout, report=_report)
    print(f"\nSynced the partitions of {plural(len(plan.steps), 'view')}.")
    return EXIT_OK


def _restore(call: _Invocation) -> int:
    """``restore TABLE``: exit 0 restored, 1 an error or not confirmed (nothing restored)."""
    args = call.args
    if not args.auto_approve and not sys.stdin.isatty():
        raise SchemaflowError("not a terminal, so no one can confirm: pass --auto-approve to restore")
    live = Live(call.project)
    plan = workflow.restoring(call.project, live, args.table)
    sys.stdout.write(render(Review(plan), "text", **_display(args)))
    if not args.auto_approve and not _confirm(plan):
        print("Not restored.", file=sys.stderr)
        return EXIT_ERROR
    run_plan(live, plan, progress=sys.stdout, report=_report, pause=call.pause)
    print(f"\nRestored {plan.steps[0].object}. Revert the change that rewrote it in git, or the next plan rewrites it "
          "again.")
    return EXIT_OK


def _metastore(call: _Invocation) -> int:
    """``metastore status|start|stop|uri``: the local server of the embedded metastore (``catalog.hive.local_server``)."""
    settings, action = call.project.settings, call.args.action
    if settings.metastore_uri:
        if action == "uri":
            raise SchemaflowError(f"the metastore is the server at {settings.metastore_uri} (metastore.uri): connect "
                                  "to it there")
        print(f"The metastore is the server at {settings.metastore_uri} (metastore.uri): schemaflow runs no local "
              "server for it.")
        return EXIT_OK
    state_dir = local_server.state_directory(settings)
    if not local_server.serves(settings):
        if action == "uri":
            raise SchemaflowError("metastore.local_server is 0 (or SCHEMAFLOW_LOCAL_SERVER=0): no server serves the "
                                  f"embedded metastore in {state_dir}; open it with no other process using it")
        print(f"metastore.local_server is 0: every command opens the embedded metastore in {state_dir} in a JVM of its "
              "own, and none serves it.")
        return EXIT_OK
    match action:
        case "stop":
            stopped = local_server.stop(state_dir)
            print(f"Stopped the local metastore server at {stopped.uri}." if stopped else
                  "No local metastore server was running.")
            return EXIT_OK
        case "uri":
            print(local_server.serve(settings, sys.stderr).uri)
            return EXIT_OK
        case "start":
            served: local_server.Served | None = local_server.serve(settings, sys.stderr)
        case _:
            served = local_server.running(state_dir)
    if served is None:
        print(f"No local metastore server runs on the embedded metastore in {state_dir}: the next command that reads "
              "it starts one.")
        return EXIT_OK
    up = duration(time.time() - served.started)
    print(f"A local metastore server serves the embedded metastore in {state_dir} at {served.uri} (up {up}; it "
          f"stops after {duration(served.idle_seconds)} unused, and apply stops it to write).\n"
          "A Spark session of your own can share it, instead of opening the database, with:\n"
          f"  spark.hadoop.hive.metastore.uris={served.uri}")
    return EXIT_OK


def _completion_script(call: _Invocation) -> int:
    """A script, or (``--list``, what the scripts call) the project's names, one a line."""
    if call.args.list:
        for name in listed_names(call.root, call.args.list):
            print(name)
        return EXIT_OK
    if not call.args.shell:
        raise SchemaflowError(f"completion needs a SHELL ({', '.join(SHELLS)}), or --list")
    print(_completion(call.args.shell), end="")
    return EXIT_OK


@dataclass
class _Invocation:
    """One run of a command: its arguments, the project they name (loaded when the command asks for
    it: ``init``, ``fmt``, ``show`` and ``completion`` never do), and what a test injects."""

    args: argparse.Namespace
    pause: Pause | None = None

    @cached_property
    def root(self) -> Path:
        """The project folder: as given, else found upwards from here (``project.find_root``). Paths the user
        typed otherwise stay relative to where they typed them: nothing changes the working directory."""
        return Path(self.args.project) if self.args.project else find_root(Path.cwd())

    @cached_property
    def project(self) -> Project:
        # A plan between git refs is what a pull request's job runs, where the operator's folders are not known.
        return load_project(self.root, target=self.args.target, approve_code=tuple(self.args.approve_code),
                            operator_folders=getattr(self.args, "base", None) is None)


def _no_arguments(command: argparse.ArgumentParser) -> None:
    """A command that takes only the options every command takes."""


def _init_arguments(command: argparse.ArgumentParser) -> None:
    command.add_argument("--database", default="warehouse", type=str.lower,
                         help="the database the project manages (default: warehouse)")
    command.add_argument("--force", action="store_true", help="overwrite starter files that exist")


def _fmt_arguments(command: argparse.ArgumentParser) -> None:
    command.add_argument("--check", action="store_true",
                         help="write nothing: show what would change, and exit 2 if anything would (for CI)")


def _validate_arguments(command: argparse.ArgumentParser) -> None:
    command.add_argument("--format", choices=("text", "json"), default="text",
                         help="json: the located problems as data, for CI annotations (exit code as for text)")


def _plan_arguments(command: argparse.ArgumentParser) -> None:
    command.add_argument("--format", choices=FORMATS, default="text",
                         help="text for a terminal, markdown for a pull-request comment, json for other tools "
                              "(default: text)")
    _add_display_options(command)
    command.add_argument("--out", type=Path, metavar="FILE", help="also save the plan as JSON, for apply")
    command.add_argument("--allow-destructive", action="store_true", help="plan drops instead of blocking them")
    _backup_arguments(command)
    command.add_argument("--check-partitions", action="store_true",
                         help="also look for stale partition column lists in every partitioned table (lists them all)")
    command.add_argument("--against", type=Path, metavar="SNAPSHOT",
                         help="plan against a saved live state (see snapshot) instead of the catalog")
    command.add_argument("--base", metavar="REF",
                         help="plan against the schemas at this git ref instead of the catalog (no JVM)")
    command.add_argument("--head", metavar="REF", help="with --base: plan the schemas at this git ref "
                                                       "(default: the working tree, uncommitted edits included)")


def _backup_arguments(command: argparse.ArgumentParser) -> None:
    command.add_argument("--drop-backups", action="store_true",
                         help="drop the backups whose rows are all in their table (kept otherwise, whatever else is "
                              "allowed)")
    command.add_argument("--drop-backup-with-rows", action="append", default=[], metavar="BACKUP",
                         help="drop this backup (db.name_backup_) although it holds rows no other table holds: the "
                              "table a restore swapped out (repeatable)")


def _apply_arguments(command: argparse.ArgumentParser) -> None:
    command.add_argument("plan_file", nargs="?", type=Path, metavar="PLAN", help="a plan saved by plan --out")
    command.add_argument("--auto-approve", action="store_true", help="do not ask for confirmation")
    command.add_argument("--allow-destructive", action="store_true", help="allow drops (when planning here)")
    _backup_arguments(command)
    command.add_argument("--reviewed", type=Path, metavar="PLAN",
                         help="a plan made for review (plan --base ... --out): apply only if planning now makes the "
                              "same changes, else refuse it as stale")
    command.add_argument("--take-over", action="store_true",
                         help="finish the work of an apply that stopped on another machine (its claims name it)")
    command.add_argument("--recompile", action="append", default=[], metavar="VIEW",
                         help="also re-create this declared view from its SQL (db.name; repeatable)")


def _show_arguments(command: argparse.ArgumentParser) -> None:
    command.add_argument("plan_file", type=Path, metavar="PLAN", help="a plan saved by plan --out")
    command.add_argument("--format", choices=("text", "markdown"), default="text",
                         help="text for a terminal, markdown for a pull-request comment (default: text)")
    _add_display_options(command)


def _graph_arguments(command: argparse.ArgumentParser) -> None:
    command.add_argument("--format", choices=GRAPH_FORMATS, default="text",
                         help="text for a terminal; mermaid or dot to draw it (default: text)")
    command.add_argument("object", nargs="?", metavar="OBJECT", help="only this object (db.name), with everything "
                                                                    "upstream and downstream of it")


def _history_arguments(command: argparse.ArgumentParser) -> None:
    command.add_argument("objects", nargs="*", metavar="OBJECT",
                         help="only these objects: db.name, or globs such as 'retail.*' (default: all)")
    command.add_argument("--format", choices=("text", "json"), default="text",
                         help="text for a terminal, json for other tools (default: text)")


def _drift_arguments(command: argparse.ArgumentParser) -> None:
    command.add_argument("--format", choices=("text", "json"), default="text",
                         help="text for a terminal, json for other tools (default: text)")


def _import_arguments(command: argparse.ArgumentParser) -> None:
    command.add_argument("--database", required=True, metavar="DB",
                         help="the live database to import (one of the project's, by its name on the target)")
    command.add_argument("--out", type=Path, metavar="DIR", help="where to write them (default: the project's schemas/)")
    command.add_argument("--force", action="store_true", help="overwrite files that exist")


def _snapshot_arguments(command: argparse.ArgumentParser) -> None:
    command.add_argument("--out", type=Path, required=True, metavar="FILE",
                         help="the JSON file to write (plan --against reads it)")


def _view_partitions_arguments(command: argparse.ArgumentParser) -> None:
    # Named as the usage names it, in errors too (argparse's would be the internal "action").
    command.add_argument("action", choices=("sync",), metavar="ACTION",
                         help="sync: add and drop view partitions to match schemas/ and the base tables")
    command.add_argument("--auto-approve", action="store_true", help="do not ask for confirmation")
    command.add_argument("--dry-run", action="store_true",
                         help="show what would change, change nothing (exit 2 when something would)")


def _restore_arguments(command: argparse.ArgumentParser) -> None:
    command.add_argument("table", metavar="TABLE", help="the rewritten table, as database.table")
    command.add_argument("--auto-approve", action="store_true", help="do not ask for confirmation")
    _add_display_options(command)


def _metastore_arguments(command: argparse.ArgumentParser) -> None:
    command.add_argument("action", choices=("status", "start", "stop", "uri"), metavar="ACTION",
                         help="status: whether a local server serves the embedded metastore, and where; start: "
                              "start one now; stop: stop it; uri: print its address alone, starting one if none runs "
                              "(for a Spark session of your own)")


def _completion_arguments(command: argparse.ArgumentParser) -> None:
    command.add_argument("shell", nargs="?", choices=SHELLS, metavar="SHELL",
                         help=f"the shell to complete in: {', '.join(SHELLS)}")
    command.add_argument("--list", choices=(TARGETS, OBJECTS),
                         help="print the project's target names or object names (db.name), one a line, for "
                              "the scripts to offer")


@dataclass(frozen=True)
class _Command:
    """A command, declared once: its one-line help (also its --help description), its exit codes and an
    example (its --help epilog), its arguments, and what runs it."""

    name: str
    help: str
    exits: str
    example: str
    arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[_Invocation], int]
    targeted: bool = True  # whether --target does anything to it: it reaches a catalog or maps names


# In the order --help lists them.
COMMANDS = (
    _Command("init", "write a starter project into the project folder (default: here)",
             "0 written, 1 error (a file exists: nothing written)", "schemaflow init --database sales",
             _init_arguments, _init, targeted=False),
    _Command("fmt", "rewrite the project's YAML files in the canonical layout (keys in the order of their JSON "
             "Schema, one column a line), comments and values kept",
             "0 formatted (or canonical already), 2 with --check: files would change, 1 a file cannot be formatted",
             "schemaflow fmt --check", _fmt_arguments, _fmt, targeted=False),
    _Command("validate", "check the project's YAML, without a catalog", "0 valid, 1 invalid",
             "schemaflow validate --format json > problems.json", _validate_arguments, _validate),
    _Command("plan", "show the steps that would make the catalog match schemas/",
             "0 no changes, 2 changes, 1 error or a blocked step",
             "schemaflow plan --base origin/main --format markdown --out plan.json", _plan_arguments, _plan),
    _Command("apply", "plan (or load a saved plan) and apply it",
             "0 applied, 1 error (what was and was not applied is listed)", "schemaflow apply plan.json --auto-approve",
             _apply_arguments, _apply),
    _Command("show", "a saved plan (plan --out), for people; needs no project or catalog",
             "as plan: 0 no changes, 2 changes, 1 error or a blocked step", "schemaflow show plan.json",
             _show_arguments, _show, targeted=False),
    _Command("graph", "show how the declared tables and views depend on each other", "0, 1 invalid",
             "schemaflow graph --format mermaid retail.daily_revenue", _graph_arguments, _graph),
    _Command("history", "what schemaflow applied to and dropped from the managed databases: when, from which commit",
             "0, 1 error", "schemaflow history 'retail.*'", _history_arguments, _history),
    _Command("drift", "what changed in the catalog outside schemaflow since the last apply",
             "0 none, 2 drift, 1 error", "schemaflow drift", _drift_arguments, _drift),
    _Command("hash-migrations", "write migrations/schemaflow.sum after reviewing the migrations", "0, 1 error",
             "schemaflow hash-migrations", _no_arguments, _hash_migrations, targeted=False),
    _Command("import", "write schema files for the tables and views of a live database",
             "0 written, 1 error or an object that could not be written", "schemaflow import --database sales",
             _import_arguments, _import),
    _Command("snapshot", "save the live state of the managed databases as JSON", "0, 1 error",
             "schemaflow snapshot --out live.json", _snapshot_arguments, _snapshot),
    _Command("view-partitions", "the partitions of partitioned views", "0 done, 2 changes with --dry-run, 1 error",
             "schemaflow view-partitions sync --dry-run", _view_partitions_arguments, _view_partitions),
    _Command("restore", "swap back in the table a rewrite kept as its backup, no row copied (the rewritten table "
             "becomes the backup)", "0 restored, 1 error or not confirmed (nothing restored)",
             "schemaflow restore retail.orders", _restore_arguments, _restore),
    _Command("metastore", "the local server of the embedded metastore: whether one runs and where, start it, stop it, "
             "its address",
             "0, 1 error", "schemaflow metastore status", _metastore_arguments, _metastore),
    _Command("completion", "print a shell completion script (bash, zsh or fish)", "0",
             "schemaflow completion bash >> ~/.bashrc", _completion_arguments, _completion_script, targeted=False),
)


if __name__ == "__main__":
    sys.exit(main())
