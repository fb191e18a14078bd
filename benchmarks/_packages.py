"""Shared helpers: download a package from the index once, unpack it once."""
from __future__ import annotations

import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path


def download(package: str, into: Path) -> Path | None:
    into.mkdir(parents=True, exist_ok=True)
    kept = _downloaded(package, into)
    if kept is not None:
        return kept  # the same archive every run, whatever pip would pick today
    before = set(into.iterdir())
    for flags in (["--no-binary", ":all:"], ["--only-binary", ":all:"]):
        proc = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q",
                               *flags, "-d", str(into), package], capture_output=True)
        new = set(into.iterdir()) - before
        if proc.returncode == 0 and new:
            return new.pop()
    return None


def _downloaded(package: str, into: Path) -> Path | None:
    """An archive of the package already in `into`: the source distribution
    when there is one (it holds the tests), else a wheel."""
    name, _, version = package.partition("==")
    prefix = name.replace("-", "_").lower() + "-" + version
    found = sorted((p for p in into.iterdir()
                    if p.name.replace("-", "_").lower().startswith(prefix.replace("-", "_"))
                    and p.name[len(name) + 1:][:1].isdigit()),
                   key=lambda p: (not p.name.endswith(".tar.gz"), p.name))
    return found[0] if found else None


def unpack(archive: Path, into: Path) -> Path:
    name = archive.name
    for suffix in (".tar.gz", ".zip", ".whl"):
        name = name.removesuffix(suffix)
    target = into / name
    if not target.exists():
        target.mkdir(parents=True)
        if archive.name.endswith(".tar.gz"):
            with tarfile.open(archive) as handle:
                handle.extractall(target, filter="data")
        else:
            with zipfile.ZipFile(archive) as handle:
                handle.extractall(target)
    return target
