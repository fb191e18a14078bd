"""`check --show-files` and `check --show-settings`: what a run would take,
without running it (ruff's options of the same names), for finding out why
a file is or is not checked, or which configuration and rules apply to it.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from ..core.config import FileConfig
    from ..engine.run_io import SourceInput


def show_files(inputs: list[SourceInput], out: TextIO) -> None:
    """The files a run reports on, one per line, sorted (not the project
    files read only for what the named ones import)."""
    from ..core.findings import shown_text

    for shown in sorted(i.display for i in inputs if not i.context):
        out.write(f"{shown_text(shown)}\n")


def show_settings(path: str, config: FileConfig, how: str, codes: frozenset[str],
                  respect_gitignore: bool, cache_directory: Path | None,
                  out: TextIO, target_torch: tuple[int, int] | None = None) -> None:
    """The configuration that applies to `path` and the resolved selection.
    `how`: where the configuration comes from when no pyproject.toml does."""
    from ..core.config import NEWEST_TORCH, show_torch
    from ..core.files import DEFAULT_EXCLUDES

    source = str(config.source) if config.source is not None else how
    exclude = sorted(DEFAULT_EXCLUDES) if config.exclude is None else config.exclude
    ignored = sorted(config.ignored_for(path)) if not os.path.isdir(path) else []
    rows = [
        ("Resolved settings for", path),
        ("Settings path", source),
        ("Project root", str(config.root)),
        ("select", ", ".join(sorted(c for c in codes if not c.startswith("AGD"))) or "(none)"),
        ("select with --dynamic", ", ".join(sorted(c for c in codes if c.startswith("AGD")))
         or "(none)"),
        ("per-file-ignores here", ", ".join(ignored) or "(none)"),
        ("exclude", ", ".join(exclude)),
        ("extend-exclude", ", ".join(config.extend_exclude) or "(none)"),
        ("respect-gitignore", str(respect_gitignore).lower()),
        ("target-torch", show_torch(target_torch) if target_torch else
         f"{show_torch(NEWEST_TORCH)} (the newest known)"),
        ("cache directory", str(cache_directory) if cache_directory is not None else
         "(none: --no-cache)"),
    ]
    from ..core.findings import shown_text

    for label, value in rows:  # paths and patterns: the tree's and its configuration's
        out.write(f"{label}: {shown_text(value)}\n")
