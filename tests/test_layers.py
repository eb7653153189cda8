"""The code's layers, as "Layout of the code" (docs/contributing.md) states them, hold in every import.

Read from the source (every ``import``, lazy ones inside functions and ``TYPE_CHECKING`` ones
included), so an arrow that runs up a layer, an import cycle between modules, or the JVM reached
outside the Hive backend (``catalog/hive/``), or a backend's package reached from the neutral ``catalog/`` or from
another backend's, fails here before it reaches review.
"""
from __future__ import annotations

import ast
import graphlib
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "schemaflow"

# Bottom first. A unit (a top-level module or a package) imports only units of the layers below its
# own; units of one layer do not import each other.
LAYERS: list[tuple[str, ...]] = [
    ("model", "wording", "output_safety", "graph", "background", "processes", "workers", "safe_spark_settings"),
    ("errors",),
    ("claims", "code_settings", "spark_version"),
    ("sql",),
    ("spec",),
    ("project", "scope", "target", "capabilities"),
    ("gitsource", "catalog", "plan"),
    ("apply", "render"),
    ("workflow", "starter", "completion"),
    ("applying",),
    ("cli",),
    ("testing",),
    ("__main__",),
]
RANK = {unit: rank for rank, units in enumerate(LAYERS) for unit in units}
JVM = ("pyspark", "py4j")


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> list[tuple[int, str]]:
    """Each module ``path`` imports, with its line: ``from a import b`` names ``a.b`` when that is a module."""
    found = []
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([*package.split(".")[:len(package.split(".")) - node.level + 1], base]).strip(".")
            found.append((node.lineno, base))
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names
                      if _is_module(f"{base}.{alias.name}")]
    return found


def _is_module(name: str) -> bool:
    relative = Path(*name.split("."))
    return (PACKAGE.parent / relative).with_suffix(".py").is_file() or (PACKAGE.parent / relative / "__init__.py").is_file()


def unit(module: str) -> str:
    return module.split(".")[1] if "." in module else module


SOURCES = sorted(PACKAGE.rglob("*.py"))
MODULES = {module_name(path): path for path in SOURCES}


def test_every_unit_has_a_layer() -> None:
    assert sorted({unit(m) for m in MODULES if m != "schemaflow"} - RANK.keys()) == []


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_run_down_the_layers(path: Path) -> None:
    here = unit(module_name(path))
    upward = [f"{path.relative_to(PACKAGE.parent)}:{line}: {here} imports {name}"
              for line, name in imports(path)
              if name.startswith("schemaflow.") and unit(name) != here and RANK[unit(name)] >= RANK.get(here, 0)]
    assert upward == []


def test_only_the_hive_backend_reaches_the_jvm() -> None:
    reaching = [f"{path.relative_to(PACKAGE.parent)}:{line}: {name}" for path in SOURCES
                for line, name in imports(path)
                if name.split(".")[0] in JVM and _backend(module_name(path)) != "hive"
                and not _type_only(path, line)]
    assert reaching == []


BACKENDS = ("hive", "rest", "glue")
# What one backend may take from another: the Glue Data Catalog holds the Hive metastore's entries, read and written
# as Spark's Hive catalog makes them.
SHARED = {("glue", "schemaflow.catalog.hive.thrift_data"), ("glue", "schemaflow.catalog.hive.spark_schema")}


def _backend(module: str) -> str | None:
    """The backend package ``module`` is in (``hive`` for schemaflow.catalog.hive.metastore), None elsewhere."""
    parts = module.split(".")
    return parts[2] if parts[:2] == ["schemaflow", "catalog"] and len(parts) > 2 and parts[2] in BACKENDS else None


def test_the_neutral_catalog_and_each_backend_keep_to_their_own() -> None:
    """The neutral ``catalog/`` imports no backend (the registry imports one by name when a project names it), and no
    backend imports another's modules but what ``SHARED`` names."""
    crossing = [f"{path.relative_to(PACKAGE.parent)}:{line}: {name}" for path in SOURCES
                for line, name in imports(path)
                if unit(module_name(path)) == "catalog" and (theirs := _backend(name)) is not None
                and theirs != _backend(module_name(path)) and (_backend(module_name(path)), name) not in SHARED]
    assert crossing == []


def _type_only(path: Path, line: int) -> bool:
    """Whether the import on ``line`` sits under ``if TYPE_CHECKING:`` (no JVM loads for it)."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            if any(inner.lineno == line for inner in ast.walk(node) if hasattr(inner, "lineno")):
                return True
    return False


def test_no_module_imports_itself_back() -> None:
    graph = {module: {name for _, name in imports(path) if name in MODULES and name != module}
             for module, path in MODULES.items()}
    # A package's __init__ re-exporting its modules is not an arrow back from them.
    for module in graph:
        graph[module] -= {m for m in graph[module] if module.startswith(m + ".") and MODULES[m].name == "__init__.py"}
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as error:
        pytest.fail(f"an import cycle: {' -> '.join(error.args[1])}")


def test_the_docs_state_the_layers() -> None:
    page = (PACKAGE.parent / "docs" / "contributing.md").read_text()
    stated = "\n".join("  " + ", ".join(units) for units in reversed(LAYERS))
    assert stated in page


def test_no_test_module_imports_another() -> None:
    """What tests share lives in the helper modules of tests/ (tests/projects.py: projects written, planned, applied
    and run as a command; tests/catalogs.py, tests/conversions.py, ...), not in a test module another imports."""
    tests = Path(__file__).parent
    crossing = [f"{path.name}:{line}: {name}" for path in sorted(tests.glob("test_*.py"))
                for line, name in imports(path) if name.startswith("tests.test_")]
    assert crossing == []
