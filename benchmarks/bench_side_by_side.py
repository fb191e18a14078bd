"""Many real projects in one folder: does each file keep its own findings?

    python benchmarks/bench_side_by_side.py [--dir benchmarks/.corpus] [PACKAGE ...]
    python benchmarks/bench_side_by_side.py --project CHECKOUT [--project CHECKOUT ...]
    python benchmarks/bench_side_by_side.py --no-packages ...

Downloads and unpacks each package as bench_corpus.py does (or takes local
checkouts with --project: repositories hold the test folders and vendored
copies that source distributions often leave out), copies the Python files
of every project into one folder side by side, then checks that folder once
with every rule, and each project on its own. Prints, per project, its files,
its findings alone, the findings the shared run gives its files, and how many
of its files differ; then the differences by rule, and the two times.

--no-packages drops every `__init__.py`: each folder becomes a set of
top-level modules, as in copied scripts, `examples/` trees and pytest test
folders, so that module names (`utils`, `layers`, `cross_entropy`,
`test_ops`) collide within and across projects. The unit compared is then
each folder, and AGF301 is left out (a gradcheck in another folder may
legitimately exercise a Function).

Every difference is a file whose findings depend on what lies beside it;
only code really used across units (a base class or a Function imported from
another one) may cause one.
"""
from __future__ import annotations

import argparse
import shutil
import time
from collections import Counter
from pathlib import Path

from _packages import download, unpack
from bench_corpus import PACKAGES

from autograd_lint.core.files import PROJECT_MARKERS

Row = tuple[int, int, str, str]


def lint(root: Path, paths: list[str], codes: frozenset[str]) -> dict[str, set[Row]]:
    """Findings per file (relative to `root`) of one project scan of `paths`."""
    from autograd_lint.engine.lint import SourceInput, lint_inputs

    result = lint_inputs([SourceInput(p, p, codes) for p in paths], scan_tree=True)
    for path, message in result.errors:
        print(f"  error: {path}: {message}")
    by_file: dict[str, set[Row]] = {}
    for finding in result.findings:
        relative = Path(finding.path).relative_to(root).as_posix()
        by_file.setdefault(relative, set()).add(
            (finding.line, finding.column, finding.code, finding.message))
    return by_file


def copy_project(source: Path, target: Path, packages: bool) -> None:
    def ignore(directory: str, names: list[str]) -> set[str]:
        # Python files, and what marks a project's root (AGF301 asks whether
        # a project was scanned with its tests).
        return {name for name in names
                if (not name.endswith(".py") and not Path(directory, name).is_dir()
                    and name not in PROJECT_MARKERS)
                or (not packages and name == "__init__.py")}

    shutil.copytree(source, target, ignore=ignore)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("packages", nargs="*")
    parser.add_argument("--dir", type=Path, default=Path(__file__).parent / ".corpus")
    parser.add_argument("--project", type=Path, action="append", default=[],
                        help="a local project folder to put beside the others")
    parser.add_argument("--no-packages", action="store_true",
                        help="drop every __init__.py and compare folder by folder")
    args = parser.parse_args()
    from autograd_lint.core.files import iter_python_files
    from autograd_lint.core.registry import RULES

    packages = args.packages or ([] if args.project else PACKAGES)
    side = (args.dir / "side-by-side").resolve()
    shutil.rmtree(side, ignore_errors=True)
    for folder in args.project:
        copy_project(folder, side / folder.name, not args.no_packages)
    for package in packages:
        archive = download(package, args.dir / "downloads")
        if archive is None:
            print(f"{package}: could not download")
            continue
        tree = unpack(archive, args.dir / "src")
        copy_project(tree, side / tree.name, not args.no_packages)
    codes = frozenset(RULES) - ({"AGF301"} if args.no_packages else set())
    everything = list(iter_python_files(str(side), lambda path, is_dir: False))

    start = time.perf_counter()
    whole = lint(side, everything, codes)
    whole_time = time.perf_counter() - start

    units: dict[str, list[str]] = {}  # unit (project or folder) -> its files
    for path in everything:
        relative = Path(path).relative_to(side)
        unit = relative.parent if args.no_packages else Path(relative.parts[0])
        units.setdefault(unit.as_posix(), []).append(path)
    alone: dict[str, set[Row]] = {}
    start = time.perf_counter()
    for paths in units.values():
        alone.update(lint(side, paths, codes))
    alone_time = time.perf_counter() - start

    rows: dict[str, Counter[str]] = {}
    differing: Counter[str] = Counter()
    for path in sorted(set(alone) | set(whole) | {Path(p).relative_to(side).as_posix()
                                                 for p in everything}):
        project = rows.setdefault(path.split("/")[0], Counter())
        mine, shared = alone.get(path, set()), whole.get(path, set())
        project.update(files=1, alone=len(mine), beside=len(shared), differ=mine != shared)
        for row in mine ^ shared:
            differing[row[2]] += 1
    print(f"{'project':<44} {'files':>6} {'alone':>6} {'beside':>6} {'differ':>6}")
    for name, counts in rows.items():
        print(f"{name[:44]:<44} {counts['files']:>6} {counts['alone']:>6} "
              f"{counts['beside']:>6} {counts['differ']:>6}")
    totals = sum(rows.values(), Counter())
    unit = "folders" if args.no_packages else "projects"
    print(f"\n{len(rows)} projects, {len(units)} {unit}, {totals['files']} files: "
          f"{totals['alone']} findings alone, {totals['beside']} side by side, "
          f"{totals['differ']} files differ")
    if differing:
        print("differences by rule: " + ", ".join(f"{c} {n}" for c, n in differing.most_common()))
    print(f"time: whole folder {whole_time:.2f} s, {unit} one by one {alone_time:.2f} s "
          f"(ratio {whole_time / alone_time:.2f})")


if __name__ == "__main__":
    main()
