"""The language server's lint of one buffer in a copy of the torch tree (a
project of ~2,300 files), in process, as the server runs it on each pause in
typing.

    python benchmarks/bench_editor.py [--repeat 7]

Rows: the first lint of a freshly started server, with no cache and after a
command-line run stored its scans; then, with the server warm, the buffer
unchanged, an edit inside a function (the buffer's byte scan is unchanged),
and an edit that adds a class (its scan changes: the project's relevance is
judged again). The ratio is against checking the buffer alone (no project
context), the floor for any lint of that text.
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from _timing import tool, torch_tree
from bench_incremental import copy_sources

BUFFER = "autograd/function.py"  # defines Function itself and several subclasses


def _never_excluded(path: str, is_dir: bool) -> bool:
    return False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    from autograd_lint.core.registry import default_codes
    from autograd_lint.engine.context import BufferLinter
    from autograd_lint.engine.lint import lint_source

    codes = default_codes()
    with tempfile.TemporaryDirectory() as workdir:
        project = Path(workdir)
        (project / "pyproject.toml").write_text("[project]\nname = 'copy'\n")
        copy_sources(torch_tree(), project / "torch")
        path = str(project / "torch" / BUFFER)
        text = Path(path).read_bytes()
        body_edit = text.replace(b"return ", b"return  ", 1)
        new_class = text + b"\n\nclass Typed(object):\n    pass\n"

        def lint(linter: BufferLinter, data: bytes) -> float:
            start = time.perf_counter()
            linter.lint(path, data, codes, _never_excluded, project)
            return time.perf_counter() - start

        times: dict[str, list[float]] = {}

        def add(name: str, measure: Callable[[], float]) -> None:
            times.setdefault(name, []).append(measure())

        for _ in range(args.repeat):
            add("first lint, no cache", lambda: lint(BufferLinter(), text))
        subprocess.run([tool("autograd-lint"), "check", "torch", "--isolated", "-q",
                        "--exit-zero"], cwd=project, check=True, stdout=subprocess.DEVNULL)
        for _ in range(args.repeat):
            add("first lint, after a command-line run", lambda: lint(BufferLinter(), text))
        linter = BufferLinter()
        lint(linter, text)
        for _ in range(args.repeat):
            add("warm: buffer unchanged", lambda: lint(linter, text))
            # Back and forth, so that each lint sees a changed text.
            add("warm: edit inside a function", lambda: lint(linter, body_edit))
            lint(linter, text)
            add("warm: edit adding a class", lambda: lint(linter, new_class))
            lint(linter, text)
            add("the buffer alone (lint_source)", lambda: _alone(lint_source, body_edit, path,
                                                                  codes))
    medians = {name: statistics.median(values) for name, values in times.items()}
    baseline = medians["the buffer alone (lint_source)"]
    print(f"\nlanguage server, one buffer ({BUFFER}) in a copy of the torch tree "
          f"({args.repeat} rounds, medians)")
    width = max(len(name) for name in medians)
    for name, seconds in medians.items():
        print(f"  {name:<{width}}  {seconds:7.3f} s   ratio vs the buffer alone: "
              f"{seconds / baseline:5.2f}")


def _alone(lint_source: Callable[..., object], data: bytes, path: str,
           codes: frozenset[str]) -> float:
    start = time.perf_counter()
    lint_source(data, path, codes)
    return time.perf_counter() - start


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    main()
