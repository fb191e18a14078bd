"""Which files a run checks: explicit files, and `.py` files under directories."""
from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

# ruff's default exclusions, plus caches of our own.
DEFAULT_EXCLUDES = frozenset({
    ".bzr", ".direnv", ".eggs", ".git", ".git-rewrite", ".hg", ".ipynb_checkpoints",
    ".mypy_cache", ".nox", ".pants.d", ".pyenv", ".pytest_cache", ".pytype",
    ".ruff_cache", ".svn", ".tox", ".venv", ".vscode", "__pypackages__", "_build",
    "buck-out", "build", "dist", "node_modules", "site-packages", "venv", "__pycache__",
    ".autograd_lint_cache",
})


class NotRegularFile(OSError):
    """A path that leads to a device, a FIFO or a socket, not a file."""


# Opening a FIFO for reading waits for a writer unless non-blocking; a
# terminal must not become the run's controlling one.
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | \
    getattr(os, "O_CLOEXEC", 0)
_FIRST_READ = 1 << 18


def read_regular_file(path: str | os.PathLike[str]) -> bytes:
    """The bytes of a regular file, at most as many as its size said when it
    was opened. What a cloned tree may plant instead of a file is refused or
    bounded: a link to a device (`/dev/zero`, never ending) or a FIFO (a read
    that waits forever) raises NotRegularFile; a file of the kernel's that
    states size 0 and reads on (`/proc/self/pagemap`) reads as empty."""
    fd = os.open(path, _READ_FLAGS)
    try:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode):
            raise NotRegularFile(errno.EINVAL, "not a regular file", os.fspath(path))
        size = status.st_size
        data = os.read(fd, min(size, _FIRST_READ)) if size else b""
        if len(data) >= size or not data:
            return data
        parts = [data]  # (os.read: buffered file objects cost more for small files)
        remaining = size - len(data)
        while remaining > 0 and (chunk := os.read(fd, min(remaining, 1 << 22))):
            parts.append(chunk)
            remaining -= len(chunk)
        return b"".join(parts)
    finally:
        os.close(fd)


def _is_virtualenv(directory: str) -> bool:
    return os.path.isfile(os.path.join(directory, "pyvenv.cfg"))


# ---------------------------------------------------------------------------
# .gitignore: git's pattern semantics (gitignore(5)), read without running git
# ---------------------------------------------------------------------------
_POSIX_CLASSES = {
    "alnum": "a-zA-Z0-9", "alpha": "a-zA-Z", "blank": " \\t", "cntrl": "\\x00-\\x1f\\x7f",
    "digit": "0-9", "graph": "!-~", "lower": "a-z", "print": " -~",
    "punct": "!-/:-@\\[-`{-~", "space": " \\t\\n\\r\\f\\v", "upper": "A-Z",
    "xdigit": "0-9A-Fa-f",
}


@dataclass(frozen=True)
class IgnoreRule:
    """One line of a .gitignore."""

    regex: re.Pattern[str]
    negated: bool  # `!pattern`: takes back what an earlier line ignored
    directory_only: bool  # `pattern/`
    basename: bool  # no slash in it: matched against the name, at any depth


def _class_to_regex(pattern: str, start: int) -> tuple[str, int] | None:
    """The bracket expression at pattern[start] (`[`) as a regex, and the
    index after it; None where it is never closed (git then matches nothing)."""
    i = start + 1
    negated = i < len(pattern) and pattern[i] in "!^"
    i += negated
    items: list[str] = []
    first = True
    while i < len(pattern) and (pattern[i] != "]" or first):
        first = False
        if pattern.startswith("[:", i):
            close = pattern.find(":]", i + 2)
            if close < 0 or pattern[i + 2:close] not in _POSIX_CLASSES:
                return None
            items.append(_POSIX_CLASSES[pattern[i + 2:close]])
            i = close + 2
            continue
        low, i = _class_char(pattern, i)
        if low is None:
            return None
        if pattern.startswith("-", i) and i + 1 < len(pattern) and pattern[i + 1] != "]":
            high, i = _class_char(pattern, i + 1)
            if high is None:
                return None
            if low <= high:  # a reversed range matches nothing, as in git
                items.append(f"{re.escape(low)}-{re.escape(high)}")
            continue
        items.append(re.escape(low))
    if i >= len(pattern):
        return None
    body = "".join(items)
    # A class never matches the `/` between folders.
    if negated:
        return f"[^/{body}]", i + 1
    return (f"(?!/)[{body}]" if body else "(?!)"), i + 1


def _class_char(pattern: str, i: int) -> tuple[str | None, int]:
    if pattern[i] == "\\":
        return (pattern[i + 1], i + 2) if i + 1 < len(pattern) else (None, i + 1)
    return pattern[i], i + 1


def _glob_to_regex(pattern: str) -> str | None:
    """A gitignore glob as a regex for re.fullmatch on a `/`-separated path
    (None: a malformed pattern, which git never matches)."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "*":
            end = i
            while end < len(pattern) and pattern[end] == "*":
                end += 1
            whole_part = (i == 0 or pattern[i - 1] == "/") and \
                (end == len(pattern) or pattern[end] == "/")
            if end - i >= 2 and whole_part:  # `**` as a whole part of the path
                if end == len(pattern):
                    out.append(".*")  # `dir/**`: everything inside
                else:
                    out.append("(?:.*/)?")  # `**/` : zero or more folders
                    end += 1
            else:
                out.append("[^/]*")
            i = end
        elif char == "?":
            out.append("[^/]")
            i += 1
        elif char == "[":
            converted = _class_to_regex(pattern, i)
            if converted is None:
                return None
            out.append(converted[0])
            i = converted[1]
        elif char == "\\":
            if i + 1 == len(pattern):
                return None  # a trailing backslash
            out.append(re.escape(pattern[i + 1]))
            i += 2
        else:
            out.append(re.escape(char))
            i += 1
    return "".join(out)


def _trim_trailing_spaces(line: str) -> str:
    """Trailing spaces go, unless escaped (`\\ `)."""
    end = len(line)
    while end and line[end - 1] == " ":
        backslashes = len(line[:end - 1]) - len(line[:end - 1].rstrip("\\"))
        if backslashes % 2:
            break
        end -= 1
    return line[:end]


def _byte_view(text: str) -> str:
    """A text as the bytes git matches (UTF-8, undecodable bytes as read),
    one character per byte: git's `?` and `[...]` match one byte, so `?.py`
    does not match `ø.py` (two bytes) there, nor here."""
    return text if text.isascii() else \
        text.encode("utf-8", "surrogateescape").decode("latin-1")


def parse_gitignore(text: str) -> tuple[IgnoreRule, ...]:
    """The rules of a .gitignore's text, in order (matched against paths'
    bytes, as git matches them: see _byte_view)."""
    rules: list[IgnoreRule] = []
    for raw in _byte_view(text.removeprefix("\ufeff")).split("\n"):
        line = _trim_trailing_spaces(raw.removesuffix("\r"))
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        line = line[negated:]
        directory_only = line.endswith("/")
        line = line.rstrip("/") if directory_only else line
        basename = "/" not in line
        line = line.removeprefix("/")
        regex = _glob_to_regex(line) if line else None
        if regex is not None:
            rules.append(IgnoreRule(re.compile(regex, re.DOTALL), negated, directory_only,
                                    basename))
    return tuple(rules)


@dataclass(frozen=True)
class IgnoreFile:
    """A .gitignore (or `.git/info/exclude`) and the folder its patterns are
    relative to, as a path from the repository's root ("" for the root)."""

    base: str
    rules: tuple[IgnoreRule, ...]
    # Quick rejections: most paths match no line at all.
    _names: re.Pattern[str] | None = field(init=False, repr=False, compare=False)
    _paths: re.Pattern[str] | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "base", _byte_view(self.base))

        def combined(rules: list[IgnoreRule]) -> re.Pattern[str] | None:
            alternatives = "|".join(f"(?:{r.regex.pattern})" for r in rules)
            return re.compile(alternatives, re.DOTALL) if rules else None

        object.__setattr__(self, "_names", combined([r for r in self.rules if r.basename]))
        object.__setattr__(self, "_paths", combined([r for r in self.rules if not r.basename]))

    def verdict(self, path: str, is_dir: bool) -> bool | None:
        """True: ignored, False: taken back by a `!` line, None: no line
        matches. (`path` as _byte_view shows it.)"""
        if self.base:
            if not path.startswith(self.base + "/"):
                return None
            path = path[len(self.base) + 1:]
        name = path.rpartition("/")[2]
        if not ((self._names is not None and self._names.fullmatch(name)) or
                (self._paths is not None and self._paths.fullmatch(path))):
            return None
        for rule in reversed(self.rules):  # the last matching line decides
            if rule.directory_only and not is_dir:
                continue
            if rule.regex.fullmatch(name if rule.basename else path):
                return not rule.negated
        return None


@dataclass(frozen=True)
class GitIgnore:
    """The ignore files in force in one folder of a repository, the least
    binding first: `.git/info/exclude`, then each folder's .gitignore from
    the root down (a deeper one overrides a higher one)."""

    files: tuple[IgnoreFile, ...] = ()

    def ignored(self, path: str, is_dir: bool) -> bool:
        """Whether git ignores `path` (from the repository's root, `/`-separated)."""
        path = _byte_view(path)
        for ignore_file in reversed(self.files):
            verdict = ignore_file.verdict(path, is_dir)
            if verdict is not None:
                return verdict
        return False

    def with_file(self, base: str, path: str) -> GitIgnore:
        """With the ignore file at `path` (if it can be read) added on top."""
        try:
            text = read_regular_file(path).decode("utf-8", "surrogateescape")
        except OSError:
            return self
        rules = parse_gitignore(text)
        return GitIgnore((*self.files, IgnoreFile(base, rules))) if rules else self


def _repository_ignores(folder: str) -> GitIgnore:
    """A repository's own rules: `.git/info/exclude` (for a submodule or a
    worktree, `.git` is a file naming the git directory)."""
    git = os.path.join(folder, ".git")
    if os.path.isfile(git):
        try:
            first = read_regular_file(git).decode("utf-8", "surrogateescape")
            first = first.split("\n", 1)[0].strip()
        except OSError:
            return GitIgnore()
        if not first.startswith("gitdir:"):
            return GitIgnore()
        git = os.path.join(folder, first[len("gitdir:"):].strip())
        with contextlib.suppress(OSError):  # a worktree shares its info/ with the main one
            common = read_regular_file(os.path.join(git, "commondir"))
            git = os.path.join(git, common.decode("utf-8", "surrogateescape").strip())
    return GitIgnore().with_file("", os.path.join(git, "info", "exclude"))


def _ignores_above(root: str) -> tuple[GitIgnore | None, str]:
    """For a walk from `root`: the rules of the repository around it from its
    root down to root's parent (root's own .gitignore is read on the way in),
    and root's path in it. (None, ""): not in a repository, where git, and
    ruff, read no .gitignore."""
    folder = os.path.abspath(root)
    below: list[str] = []
    parent = os.path.dirname(folder)
    while parent != folder:
        below.append(os.path.basename(folder))
        folder = parent
        if os.path.exists(os.path.join(folder, ".git")):
            break
        parent = os.path.dirname(folder)
    else:
        return None, ""
    ignores = _repository_ignores(folder)
    parts = below[::-1]
    for depth in range(len(parts)):
        base = "/".join(parts[:depth])
        ignores = ignores.with_file(base, os.path.join(folder, *parts[:depth], ".gitignore"))
    return ignores, "/".join(parts)


def iter_python_files(root: str | os.PathLike[str],
                      excluded: Callable[[str, bool], bool], *,
                      respect_gitignore: bool = True,
                      notebooks: bool = False,
                      unreadable: Callable[[str, OSError], None] | None = None,
                      ) -> Iterator[str]:
    """Paths (as text) of `.py` files (and, with `notebooks`, `.ipynb` ones)
    under `root`, sorted, skipping excluded and hidden-tool directories and,
    with respect_gitignore, what git ignores (as ruff does).
    excluded(path, is_dir) decides user exclusions.

    Links to directories met on the way are not followed (ruff does not
    either): they mostly lead to virtual environments, dependencies or back
    up the tree, and --fix must not write through them. `root` itself is
    followed, and links to files are listed. A folder that cannot be listed
    (no permission) is skipped and, with `unreadable`, told to it."""
    start = os.fspath(root)
    ignores, relative = _ignores_above(start) if respect_gitignore else (None, "")
    stack: list[tuple[str, GitIgnore | None, str]] = [(start, ignores, relative)]
    visited: set[tuple[int, int]] = set()  # each real directory once (bind mounts)
    suffixes = (".py", ".ipynb") if notebooks else ".py"
    while stack:
        directory, ignores, relative = stack.pop()
        try:
            status = os.stat(directory)
            if (status.st_dev, status.st_ino) in visited:
                continue
            visited.add((status.st_dev, status.st_ino))
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError as exc:
            if unreadable is not None and not isinstance(exc, FileNotFoundError):
                unreadable(directory, exc)
            continue
        if respect_gitignore:
            names = {entry.name for entry in entries}
            if ".git" in names:  # a repository (or submodule) of its own
                ignores, relative = _repository_ignores(directory), ""
            if ignores is not None and ".gitignore" in names:
                ignores = ignores.with_file(relative, os.path.join(directory, ".gitignore"))
        subdirs: list[tuple[str, GitIgnore | None, str]] = []
        here = directory == os.curdir  # show `ops.py`, not `./ops.py`
        for entry in entries:
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                continue
            if not is_dir and not entry.name.endswith(suffixes):
                continue
            path = entry.name if here else entry.path
            inner = f"{relative}/{entry.name}" if relative else entry.name
            if ignores is not None and ignores.ignored(inner, is_dir):
                continue
            if is_dir:
                if entry.name in DEFAULT_EXCLUDES or entry.name.endswith(".egg-info") \
                        or _is_virtualenv(path) or excluded(path, True):
                    continue
                subdirs.append((path, ignores, inner))
            elif not excluded(path, False):
                try:
                    if entry.is_file():
                        yield path
                except OSError:
                    continue
        stack.extend(reversed(subdirs))


def write_atomically(path: str | os.PathLike[str], data: bytes) -> None:
    """Replace (or create) the file in one step: a crash leaves the old file or
    the new one, never half of one. An existing file keeps its permissions.
    A symlink at `path` is replaced by the file (what a cache wants of a link
    planted in its folder); to write a link's target, pass the target
    (`fix_destination`)."""
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


def fix_roots(paths: Iterable[str]) -> tuple[str, ...]:
    """The folders a fix may reach through a symlink: each directory named on
    the command line and the project (see ProjectRoots) of each path named,
    as real paths."""
    projects = ProjectRoots()
    roots: set[str] = set()
    for path in paths:
        if os.path.isdir(path):
            roots.add(os.path.realpath(path))
            path = os.path.join(path, "__init__.py")  # its project: from the folder itself
        project = projects.of(path)
        if project is not None:
            roots.add(os.path.realpath(project))
    return tuple(sorted(roots))


def fix_destination(path: str, roots: Iterable[str]) -> str | None:
    """The file a fix of `path` is written to: the file itself, or the file a
    symlink on the way leads to (the link stays a link) when that is inside
    one of `roots` (see fix_roots); None when it leads elsewhere: a link in
    a tree must not let --fix rewrite files outside it."""
    real = os.path.realpath(path)
    if real == os.path.abspath(path):  # no link on the way
        return real
    if any(os.path.commonpath([real, root]) == root for root in roots):
        return real
    return None


def fix_target(path: str, roots: Iterable[str]) -> tuple[str | None, str]:
    """Where a fix (or a noqa comment) of `path` is written, as
    fix_destination finds it, or None and why not: a link leading outside
    `roots`, or a file its owner made read-only (a fix must not override
    what `chmod a-w` says, though replacing the file would succeed)."""
    destination = fix_destination(path, roots)
    if destination is None:
        return None, (f"it is a symlink to {os.path.realpath(path)}, outside the checked "
                      "folders and project")
    if is_read_only(destination):
        return None, "it is read-only"
    return destination, ""


def is_read_only(path: str) -> bool:
    """Whether an existing file may not be written by this user, or by
    anyone by its mode (`chmod a-w`: root, who may write it anyway, must not
    either)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not mode & 0o222 or not os.access(path, os.W_OK)


class OutsideProject(OSError):
    """A write that a symbolic link of the project would lead out of it."""


def project_root_here() -> str:
    """The project of the working directory (its nearest folder holding a
    project marker, else the working directory itself), as a real path."""
    here = os.getcwd()
    root = ProjectRoots().of(os.path.join(here, "__init__.py"))
    return os.path.realpath(root if root is not None else here)


def contained_destination(path: str, root: str) -> str:
    """The real path a write to `path` reaches. A symbolic link lying inside
    the project `root` (a real path) may lead only inside it: a link
    committed to a repository must not make a report or a baseline land in
    the user's files (raises OutsideProject). Links outside the project (the
    system's, the user's own folders) are followed as any program does."""
    resolved = os.sep
    for part in os.path.abspath(path).split(os.sep):
        if not part:
            continue
        candidate = os.path.join(resolved, part)
        if os.path.islink(candidate):
            target = os.path.realpath(candidate)
            if _inside(resolved, root) and not _inside(target, root):
                raise OutsideProject(errno.EXDEV, f"{candidate} is a symbolic link to "
                                     f"{target}, outside the project", path)
            resolved = target
        else:
            resolved = candidate
    return resolved


def _inside(path: str, root: str) -> bool:
    return os.path.commonpath([path, root]) == root


def write_inside_project(path: str, data: bytes) -> None:
    """Write a file the user named (a report, a baseline) in one step, its
    folders made as needed, never through a link of the project that leads
    out of it (contained_destination), never over a read-only file."""
    destination = contained_destination(path, project_root_here())
    if os.path.exists(destination):
        if is_read_only(destination):
            raise PermissionError(errno.EACCES, "Permission denied", path)
        if not os.path.isfile(destination):  # `-o /dev/stdout`: written, not replaced
            with open(destination, "wb") as stream:
                stream.write(data)
            return
    os.makedirs(os.path.dirname(destination), exist_ok=True)
    write_atomically(destination, data)


NOTEBOOK_SUFFIX = ".ipynb"


def is_notebook(path: str) -> bool:
    return path.endswith(NOTEBOOK_SUFFIX)


class NotebookError(ValueError):
    """The file is not a notebook this linter reads (not JSON, not nbformat 4)."""


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
