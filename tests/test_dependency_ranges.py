"""Runtime dependencies are pinned to ranges: a lower bound we tested and an upper bound,
so a future major (or, for calendar-versioned ones, far-future) release cannot break an
install silently."""

from __future__ import annotations

import re
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib  # type: ignore[no-redef]

import pytest

ROOT = Path(__file__).resolve().parent.parent
if not (ROOT / "pyproject.toml").is_file():  # pragma: no cover - running from an sdist
    pytest.skip("no pyproject.toml", allow_module_level=True)

PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
EXTRAS = PROJECT["optional-dependencies"]
RUNTIME = [*PROJECT["dependencies"], *EXTRAS["wordllama"], *EXTRAS["minilm"]]


@pytest.mark.parametrize("spec", RUNTIME)
def test_runtime_dependency_has_both_bounds(spec: str) -> None:
    assert ">=" in spec and "<" in spec.replace("<=", ""), f"{spec}: give it a range"


@pytest.mark.parametrize("spec", PROJECT["dependencies"])
def test_installed_versions_fit_the_ranges(spec: str) -> None:
    requirements = pytest.importorskip("packaging.requirements")
    req = requirements.Requirement(spec)
    try:
        installed = version(req.name)
    except PackageNotFoundError:  # pragma: no cover - not installed here
        pytest.skip(f"{req.name} not installed")
    assert req.specifier.contains(installed, prereleases=True), (spec, installed)
    assert re.match(r"\d", installed)
