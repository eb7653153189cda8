"""Shell completion: the scripts that complete schemaflow in bash, zsh and fish, and the names they offer.

A script offers the commands, each command's options, the values of an option that has choices
(``plan --format``: text, markdown, json) and, where an option or argument names a target or an
object, the project's own names. Those are not in the script, which is written once: it asks
``schemaflow completion --list targets`` (or ``objects``) at completion time, which reads
schemaflow.yaml and the names of the files in schemas/ (``schemas/<db>/<name>.yaml``), with no JVM
and no schema loaded.

A project's names are its users' text, and a completion script hands text to a shell: only Hive
names (letters, digits, underscores, and one dot between database and name) are listed, and the
scripts never expand what they read (bash's ``compgen -W`` would: it runs ``$(...)`` in its words).
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from schemaflow.errors import SchemaflowError
from schemaflow.spec.settings import read_settings
from schemaflow.spec.source import Directory

SHELLS = ("bash", "zsh", "fish")
TARGETS, OBJECTS = "targets", "objects"  # the names ``completion --list`` prints
_LISTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)?")


@dataclass(frozen=True)
class Completable:
    """What a command (or the command line before one) completes, as its parser declares it."""

    help: str = ""
    options: Mapping[str, str] = field(default_factory=dict)               # option -> its help
    choices: Mapping[str, tuple[str, ...]] = field(default_factory=dict)   # option -> its values
    names: Mapping[str, str] = field(default_factory=dict)                 # option -> TARGETS or OBJECTS
    takes_value: frozenset[str] = frozenset()                              # options followed by a value
    positional: tuple[str, ...] = ()                                       # the choices of its argument
    positional_names: str | None = None                                    # or: the names it takes


def listed_names(root: Path, what: str) -> list[str]:
    """The project's target names or object names (``db.name``, from the paths of schemas/), sorted; only
    Hive names, so none is a shell's code. Unreadable settings list no targets: completion says nothing."""
    if what == TARGETS:
        try:
            names = list(read_settings(Directory(root)).get("targets") or ())
        except SchemaflowError:
            return []
    else:
        names = [f"{path.parent.name}.{path.stem}".lower() for suffix in ("yaml", "yml")
                 for path in (root / "schemas").glob(f"*/*.{suffix}")]
    return sorted({str(name) for name in names if _LISTED.fullmatch(str(name))})


def script(shell: str, top: Completable, commands: Mapping[str, Completable]) -> str:
    """The completion script for ``shell``."""
    if shell == "fish":
        return _fish(top, commands)
    text = _bash(top, commands)
    if shell == "zsh":
        text = text.replace("# schemaflow bash", "# schemaflow zsh").replace("completion bash", "completion zsh")
        text += "autoload -U +X bashcompinit && bashcompinit\n"
    return text + "complete -o default -F _schemaflow schemaflow\n"


def _words(words: list[str] | tuple[str, ...]) -> str:
    """Words for a bash script, one a line, in ANSI-C quotes (the words are schemaflow's own)."""
    return "$'" + "\\n".join(words) + "'"


def _positional(command: Completable) -> str:
    """What a bash script offers for a command's argument: its choices, or the project's names."""
    return _words(command.positional) if command.positional else f"$(_schemaflow_list {command.positional_names})"


def _bash(top: Completable, commands: Mapping[str, Completable]) -> str:
    skipped = "|".join(sorted(top.takes_value))
    values, paths = [], set()
    for name, command in [("", top), *sorted(commands.items())]:
        for option in sorted(command.takes_value):
            if option in command.choices:
                values.append(f'        "{name}:{option}") values={_words(command.choices[option])} ;;')
            elif option in command.names:
                values.append(f'        "{name}:{option}") values=$(_schemaflow_list {command.names[option]}) ;;')
            else:
                paths.add(option)
    # A file, a folder or free text: nothing offered, so -o default completes paths.
    values.append(f"        {'|'.join(f'*:{option}' for option in sorted(paths))}) return ;;")
    options = "\n".join(f'                {name}) values={_words(sorted(c.options))} ;;'
                        for name, c in sorted(commands.items()))
    positional = "\n".join(f"                {name}) values={_positional(c)} ;;"
                           for name, c in sorted(commands.items()) if c.positional or c.positional_names)
    first = _words(sorted(commands) + sorted(top.options))
    return f"""# schemaflow bash completion: eval "$(schemaflow completion bash)"
_schemaflow_list() {{  # the project's targets or objects, as schemaflow lists them (Hive names only)
    local i project=()
    for ((i = 1; i < COMP_CWORD; i++)); do
        if [[ "${{COMP_WORDS[i]}}" == --project ]]; then project=(--project "${{COMP_WORDS[i+1]}}"); fi
    done
    schemaflow "${{project[@]}}" completion --list "$1" 2>/dev/null
}}
_schemaflow() {{
    local current="${{COMP_WORDS[COMP_CWORD]}}" previous="" command="" word values="" i skip=""
    if ((COMP_CWORD > 1)); then previous="${{COMP_WORDS[COMP_CWORD-1]}}"; fi
    for ((i = 1; i < COMP_CWORD; i++)); do
        word="${{COMP_WORDS[i]}}"
        if [[ -n "$skip" ]]; then skip=""; continue; fi
        case "$word" in {skipped}) skip=1 ;; -*) ;; *) command="$word"; break ;; esac
    done
    COMPREPLY=()
    case "$command:$previous" in
{chr(10).join(values)}
        *)
            if [[ -z "$command" ]]; then values={first}
            elif [[ "$current" == -* ]]; then
                case "$command" in
{options}
                esac
            else
                case "$command" in
{positional}
                esac
            fi ;;
    esac
    # Read, never expanded: a word is offered as it is.
    while IFS= read -r word; do
        if [[ -n "$word" && "$word" == "$current"* ]]; then COMPREPLY+=("$word"); fi
    done <<< "$values"
}}
"""


def _fish_quoted(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _fish(top: Completable, commands: Mapping[str, Completable]) -> str:
    lines = ["# schemaflow fish completion: schemaflow completion fish | source",
             "function __schemaflow_list  # the project's targets or objects, as schemaflow lists them (Hive names only)",
             "    set -l tokens (commandline -opc)",
             "    set -l project",
             "    if set -l at (contains -i -- --project $tokens)",
             "        set project --project $tokens[(math $at + 1)]",
             "    end",
             "    schemaflow $project completion --list $argv[1] 2>/dev/null",
             "end",
             "complete -c schemaflow -f"]
    lines += _fish_options("__fish_use_subcommand", top)
    for name, command in sorted(commands.items()):
        lines.append(f"complete -c schemaflow -n __fish_use_subcommand -a {name} -d {_fish_quoted(command.help)}")
    for name, command in sorted(commands.items()):
        condition = _fish_quoted(f"__fish_seen_subcommand_from {name}")
        lines += _fish_options(condition, command)
        if command.positional:
            lines.append(f"complete -c schemaflow -n {condition} -a {_fish_quoted(' '.join(command.positional))}")
        elif command.positional_names:
            lines.append(f"complete -c schemaflow -n {condition} -a "
                         f"{_fish_quoted(f'(__schemaflow_list {command.positional_names})')}")
    return "\n".join(lines) + "\n"


def _fish_options(condition: str, command: Completable) -> list[str]:
    lines = []
    for option, help in sorted(command.options.items()):
        if not option.startswith("--"):
            continue
        values = ""
        if option in command.choices:
            values = f" -x -a {_fish_quoted(' '.join(command.choices[option]))}"
        elif option in command.names:
            values = f" -x -a {_fish_quoted(f'(__schemaflow_list {command.names[option]})')}"
        elif option in command.takes_value:
            values = " -r -F"
        lines.append(f"complete -c schemaflow -n {condition} -l {option[2:]}{values} -d {_fish_quoted(help)}")
    return lines
