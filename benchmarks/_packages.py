"""Shared helpers: download a package from the index once, unpack it once."""
from __future__ import annotations

import json
import subprocess
import sys
import tarfile
import urllib.parse
import urllib.request
import zipfile
from pathlib import Path

# The index's JSON API: where a source distribution that pip cannot prepare
# (its metadata build imports torch, or CUDA) is fetched as the file it is.
PYPI_JSON = "https://pypi.org/pypi/{name}/json"


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
    return _download_file(package, into)


def _download_file(package: str, into: Path) -> Path | None:
    """The pinned release's source distribution (else its first wheel), as a
    file, without preparing it: the .py files are all the benchmarks read."""
    name, _, version = package.partition("==")
    try:
        with urllib.request.urlopen(PYPI_JSON.format(name=name), timeout=60) as response:
            files = json.load(response)["releases"][version]
    except (OSError, ValueError, KeyError):
        return None
    files = sorted((f for f in files if f["filename"].endswith((".tar.gz", ".zip", ".whl"))),
                   key=lambda f: (f["packagetype"] != "sdist", "linux" not in f["filename"],
                                  f["filename"]))
    if not files:
        return None
    target = into / files[0]["filename"]
    partial = target.with_name(target.name + ".part")
    # A mirror may give addresses relative to the JSON page.
    url = urllib.parse.urljoin(PYPI_JSON.format(name=name), files[0]["url"])
    try:
        with urllib.request.urlopen(url, timeout=600) as response, partial.open("wb") as out:
            while chunk := response.read(1 << 20):
                out.write(chunk)
    except (OSError, ValueError):
        partial.unlink(missing_ok=True)
        return None
    partial.rename(target)
    return target


def _downloaded(package: str, into: Path) -> Path | None:
    """An archive of the package already in `into`: the source distribution
    when there is one (it holds the tests), else a wheel."""
    name, _, version = package.partition("==")
    prefix = name.replace("-", "_").lower() + "-" + version
    found = sorted((p for p in into.iterdir()
                    if p.name.replace("-", "_").lower().startswith(prefix.replace("-", "_"))
                    and p.name[len(name) + 1:][:1].isdigit()
                    and not p.name.endswith(".part")),
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
