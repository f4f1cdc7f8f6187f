"""The wheel must carry every module: pyproject lists packages explicitly (the design card's
top-level folders are remapped), so a new sub-package that is not listed would work in an
editable install and silently vanish from the wheel."""

from __future__ import annotations

import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib  # type: ignore[no-redef]

import pytest

ROOT = Path(__file__).resolve().parent.parent
if not (ROOT / "pyproject.toml").is_file():  # pragma: no cover - running from an sdist
    pytest.skip("no pyproject.toml", allow_module_level=True)


def test_every_python_package_on_disk_is_in_the_wheel() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    on_disk = set()
    for name, folder in config["package-dir"].items():
        base = ROOT / folder
        for init in base.rglob("__init__.py"):
            rel = init.parent.relative_to(base).parts
            if "__pycache__" not in rel:
                on_disk.add(".".join((name, *rel)))
        for py in base.rglob("*.py"):
            rel = py.parent.relative_to(base).parts
            if "__pycache__" not in rel and not (py.parent / "__init__.py").exists():
                pytest.fail(f"{py.relative_to(ROOT)} is in a folder without __init__.py")
    assert on_disk <= listed, f"add to [tool.setuptools] packages: {sorted(on_disk - listed)}"
