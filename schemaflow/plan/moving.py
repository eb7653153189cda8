"""Moving a project from one catalog to another, as steps of its plan (``metastore.moving_from``).

A project whose catalog changes (``metastore.type: hive`` to ``iceberg_rest``, say) names the catalog it moves from
while the move is under way. The plan reads that catalog too, never writing it to move anything, and plans each
declared object that the catalog moved to lacks and the one moved from holds:

- an Iceberg table is **registered**: the new catalog adopts the table's current metadata file as it stands when
  planned, with its snapshots and history; no data or metadata file is written or copied. Its declared changes, if
  the schemas change it too, follow as ordinary commits, planned against the table as the old catalog holds it;
- a view is created from its declaration, as any view the catalog lacks;
- a table of another kind (a Hive-format or Parquet table) cannot move in this release: its step is blocked with the
  reason, rather than planned as an empty table that would leave its rows behind. So is an Iceberg table where the
  catalog moved to cannot register one (``Capabilities.registers``).

Both catalogs then name the same files: a commit through the old entry after the register forks the table's history,
which each register step says as a hazard; apply refuses a plan whose old entry names another metadata file than the
one planned (``workflow.check_moved``). The old catalog's entries stay until a step names them: with
``moving_from.forget: true`` the plan drops the old entry of each moved object that the new catalog holds now (a
table only where it is the same Iceberg table, by its uuid), keeping its files; such a step is destructive, so blocked
without ``--allow-destructive``. Without it, the plan warns that the old entries remain.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from collections.abc import Mapping

from schemaflow.model import Catalog, Object, Table, View
from schemaflow.output_safety import one_line
from schemaflow.plan.kinds import ObjectType, StepKind
from schemaflow.plan.steps import ForgetEntryAction, RegisterTableAction, Step
from schemaflow.wording import listed, plural

FORGET_SETTING = "metastore.moving_from.forget"


@dataclass(frozen=True)
class Moving:
    """The catalog a project moves from, as a plan reads it: ``source`` holds its objects in the project's databases,
    ``endpoint`` names it as plans record a catalog, ``noun`` in words ("the metastore (metastore.type hive)").
    ``registers`` and ``views``: whether the catalog moved to adopts Iceberg tables by their metadata files and holds
    views; ``forget``: the operator asks for the steps that drop the old entries of moved objects."""

    source: Catalog
    endpoint: str
    noun: str
    target: str  # the catalog moved to, in words
    registers: bool
    views: bool = True
    forget: bool = False

    def registered(self, desired: Catalog, live: Catalog) -> dict[str, Table]:
        """The declared tables the new catalog (``live``) lacks and the old one holds as Iceberg tables it can
        register, as the old catalog holds them (what their register steps adopt, and later changes start from)."""
        if not self.registers:
            return {}
        return {key: have for key, want in sorted(desired.objects.items())
                if isinstance(want, Table) and key not in live.objects
                for have in [self.source.get(key)] if isinstance(have, Table) and have.iceberg is not None}

    def register_steps(self, tables: Mapping[str, Table]) -> list[RegisterTable]:
        return [RegisterTable(table, self.endpoint, self.noun) for _, table in sorted(tables.items())]

    def with_move(self, step: Step) -> Step:
        """``step`` as the move makes it: a created view says its old entry stays; a created table that the old
        catalog holds, and that is not registered, is blocked (its rows would be left behind)."""
        have = self.source.get(step.object)
        if have is None or step.object_type == ObjectType.DATABASE:
            return step
        if step.kind == StepKind.CREATE_VIEW:
            return replace(step, notes=step.notes + (
                f"created from its declaration: {self.noun} holds the view {step.object} too, and keeps it until a "
                f"step forgets it ({FORGET_SETTING})",))
        if step.kind == StepKind.CREATE_TABLE:
            return replace(step, blocked=step.blocked or self._unmovable(step.object, have))
        return step

    def _unmovable(self, key: str, have: Object) -> str:
        if _iceberg(have):
            what = f"an Iceberg table in {self.noun}, and {self.target} cannot register a table by its metadata file"
        elif isinstance(have, Table):
            what = f"a {one_line(have.format)} table in {self.noun}, and only Iceberg tables move"
        else:
            what = f"a view in {self.noun}, declared as a table here"
        return (f"{key} is {what} in this release: created here it would be empty, its rows left behind. Keep it in "
                f"{self.noun} until it can move (or declare it elsewhere)")

    def forget_steps(self, desired: Catalog, live: Catalog) -> list[Step]:
        """With ``forget``, a step for each declared object both catalogs hold, dropping the old entry: only where the
        new catalog holds the same object (a table with the same Iceberg uuid, whose register has landed)."""
        if not self.forget:
            return []
        steps = []
        for key, have in sorted(self.source.objects.items()):
            now = live.get(key)
            if key not in desired.objects or now is None or not _same(have, now):
                continue
            kind = ObjectType.TABLE if isinstance(have, Table) else ObjectType.VIEW
            steps.append(Step(
                StepKind.FORGET_ENTRY, key, kind, f"forget {kind} {key} in {self.noun}",
                (ForgetEntryAction(key, kind, have.version, self.endpoint),),
                notes=(f"{self.target} holds {key} now; its entry in {self.noun} goes, and no file with it: "
                       + ("its data and metadata files are the moved table's" if kind == ObjectType.TABLE
                          else "a view holds none"),),
                hazards=(f"whatever still reads {key} through {self.noun} fails from then on: move its readers to "
                         f"{self.target} first",),
                destructive=True))
        return steps

    def warnings(self, desired: Catalog, live: Catalog, registered: Mapping[str, Table]) -> tuple[str, ...]:
        """What the plan says beside its steps: the old entries that stay, and the declared tables both catalogs
        hold as different tables (not forgotten)."""
        kept = sorted(key for key in self.source.objects if key in desired.objects
                      and (key in registered or key in live.objects or isinstance(desired.objects[key], View)))
        differ = sorted(key for key in kept if key in live.objects and not _same(self.source.objects[key],
                                                                                live.objects[key]))
        said = []
        if kept and not self.forget:
            said.append(f"moving from {self.noun}: {plural(len(kept), 'moved object')} keep their entries there "
                        f"{listed(kept)}, readable and writable through it: set {FORGET_SETTING}: true to plan "
                        "their removal once their readers and writers use the new catalog")
        said += [f"{key} is held by {self.noun} and by {self.target} as different tables: nothing moves it, and its old "
                 "entry is not forgotten" for key in differ]
        return tuple(said)


@dataclass(frozen=True)
class RegisterTable:
    """A change: the catalog adopts ``table``, an Iceberg table the catalog moved from holds, by its current metadata
    file (see the module)."""

    table: Table  # as the catalog moved from holds it
    source: str   # that catalog, as a plan records one
    noun: str     # that catalog, in words
    object_type = ObjectType.TABLE
    destructive = False
    reshapes = True  # a table appears where there was none, as a created one does

    @property
    def key(self) -> str:
        return self.table.key

    def to_step(self) -> Step:
        table, key = self.table, self.table.key
        assert table.iceberg is not None  # registered only so (``Moving.registered``)
        location = table.iceberg.metadata_location
        return Step(
            StepKind.REGISTER_TABLE, key, ObjectType.TABLE,
            f"register Iceberg table {key} from {self.noun} ({plural(len(table.columns), 'column')})",
            (RegisterTableAction(key, location, table.version, self.source),),
            notes=(f"the catalog adopts the table's current metadata file in {self.noun} ({one_line(location)}), with "
                   "its snapshots and history: no data or metadata file is written or copied, and its rows read as "
                   "there; the schemas' changes to it, if any, follow as commits",),
            hazards=(f"both catalogs name the same files from this step on: a commit through {self.noun} after it "
                     "is not seen here, nor one here there, and the table's history forks: stop every writer that uses "
                     f"the old catalog for {key} before applying (its entry stays there until a step forgets it: "
                     f"{FORGET_SETTING})",
                     "it adopts the metadata file current when planned: apply refuses the plan if the old entry names "
                     "another by then, and a commit through the old catalog after that check is not carried over"))


def _iceberg(obj: Object | None) -> bool:
    return isinstance(obj, Table) and obj.iceberg is not None


def _same(old: Object, new: Object) -> bool:
    """Whether ``new`` is the moved ``old``: the same Iceberg table (its uuid), or a view of the same name."""
    if not (isinstance(old, Table) and isinstance(new, Table)):
        return isinstance(old, View) and isinstance(new, View)
    return old.iceberg is not None and new.iceberg is not None and old.iceberg.table_uuid == new.iceberg.table_uuid
