"""Which files a run checks: explicit files, and `.py` files under directories."""
from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator

# ruff's default exclusions, plus caches of our own.
DEFAULT_EXCLUDES = frozenset({
    ".bzr", ".direnv", ".eggs", ".git", ".git-rewrite", ".hg", ".ipynb_checkpoints",
    ".mypy_cache", ".nox", ".pants.d", ".pyenv", ".pytest_cache", ".pytype",
    ".ruff_cache", ".svn", ".tox", ".venv", ".vscode", "__pypackages__", "_build",
    "buck-out", "build", "dist", "node_modules", "site-packages", "venv", "__pycache__",
    ".autograd_lint_cache",
})


def _is_virtualenv(directory: str) -> bool:
    return os.path.isfile(os.path.join(directory, "pyvenv.cfg"))


def iter_python_files(root: str | os.PathLike[str],
                      excluded: Callable[[str, bool], bool]) -> Iterator[str]:
    """Paths (as text) of `.py` files under `root`, sorted, skipping excluded
    and hidden-tool directories. excluded(path, is_dir) decides user
    exclusions."""
    stack = [os.fspath(root)]
    visited: set[tuple[int, int]] = set()  # each real directory once: symlink loops end
    while stack:
        directory = stack.pop()
        try:
            status = os.stat(directory)
            if (status.st_dev, status.st_ino) in visited:
                continue
            visited.add((status.st_dev, status.st_ino))
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError:
            continue
        subdirs: list[str] = []
        here = directory == os.curdir  # show `ops.py`, not `./ops.py`
        for entry in entries:
            try:
                is_dir = entry.is_dir()
            except OSError:
                continue
            path = entry.name if here else entry.path
            if is_dir:
                if entry.name in DEFAULT_EXCLUDES or entry.name.endswith(".egg-info") \
                        or _is_virtualenv(path) or excluded(path, True):
                    continue
                subdirs.append(path)
            elif entry.name.endswith(".py") and not excluded(path, False):
                try:
                    if entry.is_file():
                        yield path
                except OSError:
                    continue
        stack.extend(reversed(subdirs))


def write_atomically(path: str | os.PathLike[str], data: bytes) -> None:
    """Replace (or create) the file in one step: a crash leaves the old file or
    the new one, never half of one. An existing file keeps its permissions."""
    import tempfile  # only runs that write pay for it

    directory = os.path.dirname(os.path.abspath(path))
    handle, temporary = tempfile.mkstemp(prefix=".autograd-lint-", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
        try:
            mode = os.stat(path).st_mode & 0o7777
        except FileNotFoundError:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask  # what open() would have created
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


_TEST_FOLDERS = frozenset({"test", "tests"})


def is_test_path(path: str) -> bool:
    """A file of a test suite, by pytest's and unittest's naming conventions
    (`test_*.py`, `*_test.py`, `conftest.py`, or under a `test(s)/` folder)."""
    parts = os.path.normpath(path).split(os.sep)
    name = parts[-1]
    return name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py" \
        or any(part in _TEST_FOLDERS for part in parts[:-1])



# What marks the root of a project (ruff's and pytest's roots are found so).
PROJECT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")


class ProjectRoots:
    """The root of the project each file belongs to: its nearest folder
    holding a pyproject.toml, setup.py, setup.cfg or .git (None: none above
    it). Each folder is looked at once."""

    def __init__(self) -> None:
        self._roots: dict[str, str | None] = {}

    def of(self, path: str) -> str | None:
        folder = os.path.dirname(os.path.abspath(path))
        seen: list[str] = []
        root: str | None = None
        while True:
            if folder in self._roots:
                root = self._roots[folder]
                break
            seen.append(folder)
            if any(os.path.exists(os.path.join(folder, m)) for m in PROJECT_MARKERS):
                root = folder
                break
            parent = os.path.dirname(folder)
            if parent == folder:
                break
            folder = parent
        for visited in seen:
            self._roots[visited] = root
        return root
