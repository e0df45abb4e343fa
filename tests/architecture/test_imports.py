"""Package faces and layer arrows, checked by walking every import of the code.

Two rules (README "Layout"):

* nobody imports another package's private module or private name: ``a._b`` and
  ``from a import _c`` are private to package ``a`` and its subpackages;
* the pure layers (``metrics/`` and ``pipelines/core/``) import no Dagster, Streamlit or DuckDB.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("pipelines", "metrics", "dashboards")
PURE_LAYERS = ("metrics", "pipelines.core")
FORBIDDEN_IN_PURE = ("dagster", "dagster_duckdb", "streamlit", "duckdb")


@dataclass(frozen=True)
class Import:
    """One imported target: the module, and the name taken from it (None for ``import x``)."""

    importer: str
    path: Path
    line: int
    module: str
    name: str | None


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _package_of(path: Path) -> str:
    """The package a file belongs to: itself for ``__init__.py``, else its folder."""
    name = _module_name(path)
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def _imports() -> list[Import]:
    out: list[Import] = []
    for top in PACKAGES:
        for path in sorted((ROOT / top).rglob("*.py")):
            tree = ast.parse(path.read_text(), filename=str(path))
            pkg = _package_of(path)
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    for alias in node.names:
                        out.append(Import(_module_name(path), path, node.lineno, alias.name, None))
                elif isinstance(node, ast.ImportFrom):
                    if node.level:
                        base = pkg.split(".")
                        base = base[: len(base) - (node.level - 1)]
                        module = ".".join([*base, *([node.module] if node.module else [])])
                    else:
                        module = node.module or ""
                    for alias in node.names:
                        out.append(
                            Import(_module_name(path), path, node.lineno, module, alias.name)
                        )
    return out


def _private_owner(module: str, name: str | None) -> str | None:
    """The package that owns the first private part of ``module[.name]``, if any."""
    parts = module.split(".")
    for i, part in enumerate(parts):
        if part.startswith("_") and not part.startswith("__"):
            return ".".join(parts[:i])
    if name is not None and name.startswith("_") and not name.startswith("__"):
        # A private name of a module belongs to the module's package.
        if (ROOT / module.replace(".", "/") / "__init__.py").exists():
            return module
        return module.rpartition(".")[0]
    return None


def _inside(importer: str, owner: str) -> bool:
    return importer == owner or importer.startswith(owner + ".")


def test_no_import_reaches_into_another_packages_private_module_or_name() -> None:
    """``from pipelines.slurm._sacct_parse import x`` in ``pipelines/analytics`` fails; inside
    ``pipelines.slurm`` (or from ``pipelines._parse_result`` anywhere under ``pipelines``) it is
    the package's own business."""
    bad = []
    for imp in _imports():
        if imp.module.split(".")[0] not in PACKAGES:
            continue
        owner = _private_owner(imp.module, imp.name)
        if owner is None:
            continue
        # A module's own private names are its own; a package owns its private modules.
        if _inside(imp.importer, owner):
            continue
        bad.append(
            f"{imp.path.relative_to(ROOT)}:{imp.line}: {imp.module}"
            + (f" import {imp.name}" if imp.name else "")
        )
    assert bad == [], "imports of another package's private parts:\n" + "\n".join(bad)


@pytest.mark.parametrize("layer", PURE_LAYERS)
def test_pure_layers_import_no_dagster_streamlit_or_duckdb(layer: str) -> None:
    """``metrics/`` and ``pipelines/core/`` are frames in, frames out."""
    bad = [
        f"{imp.path.relative_to(ROOT)}:{imp.line}: {imp.module}"
        for imp in _imports()
        if _inside(imp.importer, layer) and (imp.module.split(".")[0] in FORBIDDEN_IN_PURE)
    ]
    assert bad == [], "\n".join(bad)


def test_the_walk_sees_the_code() -> None:
    """The walk finds the known packages and imports (a walk that saw nothing would pass)."""
    importers = {imp.importer for imp in _imports()}
    assert "pipelines.definitions" in importers
    assert "metrics.occupancy" in importers
    assert _private_owner("pipelines.slurm._sacct_parse", "parse_sacct") == "pipelines.slurm"
    assert _private_owner("pipelines.report", "_common") == "pipelines.report"
    assert _private_owner("metrics.waterfall", "_utc_lit") == "metrics"
    assert _private_owner("pipelines.warehouse", "load_parse_result") is None
