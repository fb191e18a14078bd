"""Configuration: rule selection and `[tool.autograd-lint]` in pyproject.toml.

Selection follows ruff: `select` replaces the set chosen so far, `extend-select`
adds to it, `ignore` removes from it; between a selector and an ignore that
both match a rule, the more specific (longer) one wins, and an ignore wins a
tie. The configuration file is one layer, the command line a second one on
top of it.

Rules are grouped in tiers (RULES.md, "Tiers"); only the correctness tier is
on by default. A tier name (`pedantic`, `coverage`, `style`, `correctness`) is
a selector of its own. Rules outside the correctness tier are opt-in, as
ruff's preview rules are: only their exact code, their tier's name or `ALL`
selects them, never a prefix, so `select = ["AGF"]` or `--extend-select AGF2`
keeps them off and `extend-select = ["pedantic"]` turns that tier on.
"""
from __future__ import annotations

import fnmatch
import os
import re
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .registry import RULES, TIERS, default_codes

CONFIG_TABLE = "autograd-lint"
CONFIG_KEYS = ("select", "extend-select", "ignore", "exclude", "extend-exclude",
               "per-file-ignores", "respect-gitignore", "target-torch")
# The torch versions this release knows (RULES.md, "Target torch version"):
# `target-torch` names the oldest one a project supports, as ruff's
# `target-version` does; the default is the newest.
OLDEST_TORCH = (2, 0)
NEWEST_TORCH = (2, 14)
TorchVersion = tuple[int, int]


class ConfigError(Exception):
    """A user mistake in configuration or on the command line (exit 2)."""


# ---------------------------------------------------------------------------
# Selectors
# ---------------------------------------------------------------------------
def validate_selector(selector: str, where: str) -> str:
    """Normalise a selector (code, code prefix, tier name or ALL) or raise ConfigError."""
    text = selector.strip().upper()
    if text == "ALL":
        return text
    if text.lower() in TIERS:
        return text.lower()
    if text and any(code.startswith(text) for code in RULES):
        return text
    raise ConfigError(f"{where}: unknown rule code, prefix or tier {selector.strip()!r} "
                      f"(see `autograd-lint rules`; tiers: {', '.join(TIERS)})")


def _specificity(selector: str) -> int:
    """ALL < a tier name < a code prefix (the longer, the more specific) < a code."""
    if selector == "ALL":
        return 0
    return 1 if selector in TIERS else 1 + len(selector)


def _matches(code: str, selector: str, opt_in: bool) -> bool:
    if selector == "ALL" or selector == code:
        return True
    if selector in TIERS:
        return RULES[code].tier == selector
    return code.startswith(selector) and not opt_in


def _best_match(code: str, selectors: Iterable[str], *, opt_in: bool = False) -> int:
    """The specificity of the most specific selector matching the code, or -1.
    An opt-in rule is matched by its exact code, its tier or ALL only."""
    best = -1
    for selector in selectors:
        if _matches(code, selector, opt_in):
            best = max(best, _specificity(selector))
    return best


@dataclass
class Selection:
    """One layer of rule selection (a config file or the command line)."""

    select: list[str] | None = None
    extend_select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)

    def apply(self, current: frozenset[str]) -> frozenset[str]:
        selectors = [*(self.select or []), *self.extend_select]
        carried = current if self.select is None else frozenset()
        chosen: set[str] = set()
        for code, rule in RULES.items():
            picked = _best_match(code, selectors, opt_in=not rule.default)
            dropped = _best_match(code, self.ignore)
            if dropped >= 0 and dropped >= picked:
                continue
            if picked >= 0 or code in carried:
                chosen.add(code)
        return frozenset(chosen)


def drop_matching(codes: frozenset[str], selectors: Iterable[str]) -> frozenset[str]:
    """The codes that no selector (code, prefix or ALL) matches."""
    selectors = list(selectors)
    return frozenset(c for c in codes if _best_match(c, selectors) < 0)


def resolve_codes(layers: Iterable[Selection]) -> frozenset[str]:
    codes = default_codes()
    for layer in layers:
        codes = layer.apply(codes)
    return codes


# ---------------------------------------------------------------------------
# pyproject.toml
# ---------------------------------------------------------------------------
@dataclass
class FileConfig:
    """The `[tool.autograd-lint]` table of one pyproject.toml (or defaults)."""

    root: Path  # paths in the table are relative to this directory
    source: Path | None = None  # the pyproject.toml it came from
    selection: Selection = field(default_factory=Selection)
    exclude: list[str] | None = None
    extend_exclude: list[str] = field(default_factory=list)
    per_file_ignores: dict[str, list[str]] = field(default_factory=dict)
    # Directory scans skip what git ignores (.gitignore, .git/info/exclude), as ruff's do.
    respect_gitignore: bool = True
    target_torch: TorchVersion | None = None  # None: not set here (NEWEST_TORCH)

    def is_excluded(self, path: str | os.PathLike[str], extra: Iterable[str] = (), *,
                    parents: bool = True) -> bool:
        patterns = [*(self.exclude or []), *self.extend_exclude, *extra]
        return bool(patterns) and matches_any(path, patterns, self.root, parents=parents)

    def ignored_for(self, path: str | os.PathLike[str]) -> set[str]:
        ignored: set[str] = set()
        if not self.per_file_ignores:
            return ignored
        for pattern, selectors in self.per_file_ignores.items():
            if matches_any(path, [pattern], self.root):
                ignored.update(selectors)
        return ignored


def matches_any(path: str | os.PathLike[str], patterns: Iterable[str], root: Path, *,
                parents: bool = True) -> bool:
    """ruff-style matching: the path relative to root, any parent, or the name.
    parents=False: the path and its name only (a directory walk has already
    decided the folders it went through, and a folder named on the command
    line is checked even when a pattern names it, as ruff does)."""
    path = Path(path)
    absolute = path if path.is_absolute() else Path.cwd() / path
    try:
        relative = absolute.relative_to(root).as_posix()
    except ValueError:
        relative = absolute.as_posix()
    candidates = {relative, absolute.as_posix(), path.name}
    parts = relative.split("/")
    if parents:
        candidates.update("/".join(parts[:i]) for i in range(1, len(parts)))
    for pattern in patterns:
        pattern = pattern.rstrip("/")
        if any(fnmatch.fnmatchcase(c, pattern) for c in candidates):
            return True
    return False


def _load_toml(path: Path) -> dict[str, Any]:
    try:
        import tomllib  # Python >= 3.11
    except ModuleNotFoundError:  # pragma: no cover - Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    from .files import read_regular_file

    try:
        return tomllib.loads(read_regular_file(path).decode("utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: not UTF-8 (byte {exc.start})") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
    except RecursionError:
        raise ConfigError(f"{path}: invalid TOML: nested too deeply") from None


def _string_list(value: Any, where: str) -> list[str]:
    # A bare string is a mistake ruff rejects too: `select = "AGF006"`.
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: expected a list of strings, got {value!r}")
    return value


def _bool(value: Any, where: str) -> bool:
    # TOML has booleans: "false" or 0 is a mistake, not a false value.
    if not isinstance(value, bool):
        raise ConfigError(f"{where}: expected true or false, got {value!r}")
    return value


def parse_table(table: Any, source: Path) -> FileConfig:
    where = f"{source}: [tool.{CONFIG_TABLE}]"
    if not isinstance(table, dict):
        raise ConfigError(f"{where} must be a table")
    unknown = sorted(set(table) - set(CONFIG_KEYS))
    if unknown:
        raise ConfigError(f"{where}: unknown key {unknown[0]!r} "
                          f"(known keys: {', '.join(CONFIG_KEYS)})")
    config = FileConfig(root=source.parent, source=source)
    if "select" in table:
        config.selection.select = [validate_selector(s, f"{where} select")
                                   for s in _string_list(table["select"], f"{where} select")]
    config.selection.extend_select = [
        validate_selector(s, f"{where} extend-select")
        for s in _string_list(table.get("extend-select", []), f"{where} extend-select")]
    config.selection.ignore = [
        validate_selector(s, f"{where} ignore")
        for s in _string_list(table.get("ignore", []), f"{where} ignore")]
    if "exclude" in table:
        config.exclude = _string_list(table["exclude"], f"{where} exclude")
    config.extend_exclude = _string_list(table.get("extend-exclude", []),
                                         f"{where} extend-exclude")
    config.respect_gitignore = _bool(table.get("respect-gitignore", True),
                                     f"{where} respect-gitignore")
    if "target-torch" in table:
        value = table["target-torch"]
        if not isinstance(value, str):
            raise ConfigError(f"{where} target-torch: expected a version string such as "
                              f"\"2.13\", got {value!r}")
        config.target_torch = parse_torch_version(value, f"{where} target-torch")
    per_file = table.get("per-file-ignores", {})
    if not isinstance(per_file, dict):
        raise ConfigError(f"{where} per-file-ignores: expected a table of pattern = [codes]")
    for pattern, selectors in per_file.items():
        key = f"{where} per-file-ignores {pattern!r}"
        config.per_file_ignores[pattern] = [validate_selector(s, key)
                                            for s in _string_list(selectors, key)]
    return config


def parse_torch_version(text: str, where: str) -> TorchVersion:
    """`"2.13"` as (2, 13): a version this release knows (`2.13.1` is 2.13)."""
    match = re.fullmatch(r"\s*(\d+)\.(\d+)(?:\.\d+)?\s*", text)
    version = (int(match.group(1)), int(match.group(2))) if match else None
    if version is None or not OLDEST_TORCH <= version <= NEWEST_TORCH:
        raise ConfigError(f"{where}: unknown torch version {text!r} (known: "
                          f"{show_torch(OLDEST_TORCH)} to {show_torch(NEWEST_TORCH)})")
    return version


def show_torch(version: TorchVersion) -> str:
    return f"{version[0]}.{version[1]}"


def load_config_file(path: Path) -> FileConfig:
    """Read a configuration given explicitly: `[tool.autograd-lint]` of a
    pyproject.toml (whatever its file name: one with `[project]`, `[tool]` or
    `[build-system]` is read as one), else the whole file is the table (an
    `autograd-lint.toml`)."""
    if not os.path.isfile(path):
        raise ConfigError(f"config file not found: {path}")
    data = _load_toml(path)
    if path.name == "pyproject.toml" or _looks_like_pyproject(data):
        table = _tool_table(data)
        if table is None:
            hint = " ([tool.autograd_lint] is misspelt: the table is " \
                f"[tool.{CONFIG_TABLE}])" if _misspellings(data) else ""
            raise ConfigError(f"{path}: no [tool.{CONFIG_TABLE}] table{hint}")
    else:
        table = data
    return parse_table(table, path.resolve())


def _looks_like_pyproject(data: dict[str, Any]) -> bool:
    return any(key in data for key in ("project", "tool", "build-system"))


def _tool_table(data: dict[str, Any]) -> Any:
    """`[tool.autograd-lint]`, or None."""
    tool = data.get("tool", {})
    return tool.get(CONFIG_TABLE) if isinstance(tool, dict) else None


def _misspellings(data: dict[str, Any]) -> list[str]:
    """The tables that look like ours and are not read: `[tool.autograd_lint]`
    (or `autograd-linter`...), whether or not `[tool.autograd-lint]` is there
    too (its `per-file-ignores` subtable alone makes it so)."""
    tool = data.get("tool", {})
    if not isinstance(tool, dict):
        return []
    return [key for key in tool if key != CONFIG_TABLE and
            key.replace("_", "-").startswith(CONFIG_TABLE)]


class ConfigFinder:
    """Finds the nearest pyproject.toml with a `[tool.autograd-lint]` table."""

    def __init__(self, fallback_root: Path,
                 warn: Callable[[str], None] | None = None) -> None:
        self._warn = warn  # one line per misspelt table, as the search meets it
        self._cache: dict[Path, FileConfig | None] = {}
        # Each pyproject.toml looked at (or looked for), with its (mtime, size)
        # then: a long-lived caller (the language server) asks `stale()`.
        self._consulted: dict[Path, tuple[int, int] | None] = {}
        self._by_directory: dict[str, FileConfig] = {}  # unresolved directory -> config
        self._by_file: dict[str, FileConfig] = {}  # file as given -> config
        self._resolved: dict[str, Path] = {}  # unresolved directory -> its real path
        self._fallback = FileConfig(root=fallback_root)

    @property
    def fallback(self) -> FileConfig:
        return self._fallback

    def for_path(self, path: str | os.PathLike[str], *,
                 is_dir: bool | None = None) -> FileConfig:
        """The configuration that applies to a file (or directory)."""
        text = os.fspath(path)
        if is_dir is False and text in self._by_file:  # asked per file several times a run
            return self._by_file[text]
        directory = text if (is_dir if is_dir is not None else os.path.isdir(text)) \
            else os.path.dirname(text)
        # Keyed by the directory as given (relative ones are relative to the
        # working directory, fixed for the run): no path arithmetic per file.
        cached = self._by_directory.get(directory)
        if cached is None:
            found = self._lookup(self._real_path(directory))
            cached = found if found is not None else self._fallback
            self._by_directory[directory] = cached
        if is_dir is False:
            self._by_file[text] = cached
        return cached

    def _real_path(self, directory: str) -> Path:
        """The directory's real path. A walk meets a folder after its parent:
        a child that is not a link is its parent's real path and its name,
        with no walk up the tree to resolve it again."""
        parent, name = os.path.split(directory)
        base = self._resolved.get(parent)
        if base is not None and name not in ("", os.curdir, os.pardir) \
                and not os.path.islink(directory):
            real = base / name
        else:
            real = Path(os.path.abspath(directory or os.curdir)).resolve()
        self._resolved[directory] = real
        return real

    def _lookup(self, directory: Path) -> FileConfig | None:
        visited: list[Path] = []
        result: FileConfig | None = None
        current: Path | None = directory
        while current is not None:
            if current in self._cache:
                result = self._cache[current]
                break
            visited.append(current)
            candidate = current / "pyproject.toml"
            # (one stat: missing, or its stamp and whether it is a regular
            # file; no PermissionError in a folder the user cannot search)
            self._consulted[candidate], is_file = _stamp_of_file(candidate)
            if is_file:
                data = _load_toml(candidate)
                for misspelt in _misspellings(data) if self._warn is not None else ():
                    self._warn(f"{candidate}: [tool.{misspelt}] is not read (the table "
                               f"is [tool.{CONFIG_TABLE}])")
                table = _tool_table(data)
                if table is not None:
                    result = parse_table(table, candidate)
                    break
            parent = current.parent
            current = parent if parent != current else None
        for directory_seen in visited:
            self._cache[directory_seen] = result
        return result


    def stale(self) -> bool:
        """Whether a pyproject.toml this finder read (or found missing) has
        changed, appeared or gone since."""
        return any(_stamp(path) != stamp for path, stamp in self._consulted.items())


def _stamp_of_file(path: Path) -> tuple[tuple[int, int] | None, bool]:
    """`_stamp(path)`, and whether it is a regular file."""
    try:
        status = path.stat()
    except OSError:
        return None, False
    return (status.st_mtime_ns, status.st_size), stat.S_ISREG(status.st_mode)


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        status = path.stat()
    except OSError:
        return None
    return status.st_mtime_ns, status.st_size


def cwd() -> Path:
    return Path(os.getcwd())


# ---------------------------------------------------------------------------
# The Python a project requires (`[project] requires-python`)
# ---------------------------------------------------------------------------
_LOWER_BOUND = re.compile(r"(>=|~=|==|>)\s*(\d+)\.(\d+)")


def minimum_python(specifier: str) -> tuple[int, int] | None:
    """The oldest Python a `requires-python` specifier admits, as (major,
    minor): `>=3.12` and `~=3.12` and `==3.12.*` give (3, 12), `>3.11` gives
    (3, 12) (what the packaging tools install); None without a lower bound."""
    bounds = []
    for operator, major, minor in _LOWER_BOUND.findall(specifier):
        version = (int(major), int(minor))
        bounds.append((version[0], version[1] + 1) if operator == ">" else version)
    return max(bounds) if bounds else None


class PythonRequirements:
    """The oldest Python each file's project requires: the nearest
    pyproject.toml above it that has a `[project]` table (each folder looked
    at once)."""

    def __init__(self) -> None:
        self._by_folder: dict[str, tuple[int, int] | None] = {}

    def of(self, path: str) -> tuple[int, int] | None:
        folder = os.path.dirname(os.path.abspath(path))
        seen: list[str] = []
        found: tuple[int, int] | None = None
        while folder not in self._by_folder:
            seen.append(folder)
            project = _project_table(os.path.join(folder, "pyproject.toml"))
            if project is not None:
                value = project.get("requires-python")
                found = minimum_python(value) if isinstance(value, str) else None
                break
            parent = os.path.dirname(folder)
            if parent == folder:
                break
            folder = parent
        else:
            found = self._by_folder[folder]
        for visited in seen:
            self._by_folder[visited] = found
        return found


def _project_table(path: str) -> dict[str, Any] | None:
    """`[project]` of a pyproject.toml; None when there is none (or no file,
    or one that cannot be read: the configuration's own reading says why)."""
    if not os.path.isfile(path):
        return None
    try:
        data = _load_toml(Path(path))
    except ConfigError:
        return None
    project = data.get("project")
    return project if isinstance(project, dict) else None
