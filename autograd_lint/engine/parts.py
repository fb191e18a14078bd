"""Where a run analyses: the files to analyse cut into parts balanced by
their expected cost, each part analysed in a forked worker (which parses
the rest of the project as an incremental run would, when a name leads
there), and the workers' results merged in the order of their parts, so
that the findings are one process's. That the workers die with the run is
engine_workers'.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..core.findings import Finding, sort_findings
from .run_io import _describe

if TYPE_CHECKING:
    from ..checkers.usage import PendingAGF301
    from ..core.files import ProjectRoots
    from ..core.project import Project
    from ..core.scan import FileScan
    from .relevance import Relevance
    from .run_io import FunctionTarget, LintResult
    from .scope import ScanTable


# Parsing this many bytes costs about as much as analysing a small file.
_BYTES_PER_FILE_COST = 100_000
# Following a file's gradient checks to the Functions they exercise costs
# about this many times parsing it (fitted on the torch tree).
_GRADCHECK_SEARCH_COST = 6.0


def _can_fork() -> bool:
    """Whether workers can be forked safely (they inherit the run as it is;
    fork is the default, and safe for us, on Linux only)."""
    return sys.platform.startswith("linux")


@dataclass
class PartResult:
    """What a worker sends back for its part of the files."""

    findings: dict[str, list[Finding]]
    reads: dict[str, set[str]]
    errors: list[tuple[str, str]]
    functions: list[FunctionTarget]
    gradchecked: tuple[set[tuple[str, str]], frozenset[str]] | None
    pending: list[PendingAGF301]  # AGF301 findings the gradcheck answer may clear


class _Parts:
    """The run's workers (a mixin of engine._Run): `_analyse_in_parts` runs
    the run's `_lint` in each worker, with the files that `_context` picks
    for that part."""

    # The run's, read here.
    jobs: int | None
    result: LintResult
    relevance: Relevance
    project: Project | None
    _file_findings: dict[str, list[Finding]]
    _reads: dict[str, set[str]]
    _gradchecked_seed: dict[str, Any] | None
    scan_tree: bool
    project_roots: ProjectRoots

    def _init_parts(self) -> None:
        # Which Functions gradcheck exercises, as a worker found it.
        self._gradchecked: tuple[set[tuple[str, str]], frozenset[str]] | None = None
        # Who computes that answer: this process when needed ("own"); in a
        # run in parts, one worker ("answer") while the others report their
        # AGF301 findings pending it ("defer").
        self._gradcheck_role = "own"

    def _analyse_in_parts(self, scans: ScanTable, relevant: list[str], targets: list[str],
                          broken: frozenset[str] | set[str]) -> bool:
        """Analyse `targets` in forked workers, a part each, and take their
        results; False when the files make one part, workers cannot be forked,
        or one failed: the caller analyses them in this process then."""
        answer_once = self._answers_gradcheck(targets)
        search = self._gradcheck_search_cost(scans) if answer_once else 0.0
        parts = self._parts(targets, scans, search)
        if len(parts) < 2 or not _can_fork():
            return False
        results = self._run_parts(scans, relevant, parts, broken, answer_once)
        if results is None:
            return False
        self._merge(results)
        if answer_once:
            self._settle_pending(results)
        self.result.workers = len(results)
        return True

    def _answers_gradcheck(self, targets: list[str]) -> bool:
        """Whether AGF301 needs the project's gradcheck answer here and no
        stored one holds: one worker then computes it, not every one."""
        return self.scan_tree and self._gradchecked_seed is None and any(
            p in self.relevance.defining and "AGF301" in self._by_path[p].codes
            for p in targets)

    def _gradcheck_search_cost(self, scans: ScanTable) -> float:
        """The expected cost of the gradcheck answer, in `_expected_cost`'s units."""
        return sum(_GRADCHECK_SEARCH_COST * (1.0 + _size(path) / _BYTES_PER_FILE_COST)
                   for path in self.relevance.gradchecking)

    def _parts(self, targets: list[str], scans: ScanTable,
               last_extra: float = 0.0) -> list[list[str]]:
        """The files to analyse cut into one run of neighbours per worker
        (neighbours import each other: fewer files parsed twice), balanced
        by the cost each file is expected to have; `last_extra`: work the
        last part does besides its files."""
        workers = self.jobs if self.jobs is not None else (os.cpu_count() or 1)
        if workers < 2:
            return [targets]
        costs = [self._expected_cost(path, scans[path]) for path in targets]
        share = (sum(costs) + last_extra) / workers
        parts: list[list[str]] = [[]]
        filled = 0.0
        for path, cost in zip(targets, costs, strict=True):
            if filled >= share * len(parts) and len(parts) < workers:
                parts.append([])
            parts[-1].append(path)
            filled += cost
        return [part for part in parts if part]

    def _expected_cost(self, path: str, scan: FileScan) -> float:
        """A file's analysis time, in units of what any file costs: the rules
        run per Function, parsing costs by size (fitted on the torch tree,
        where a file costs about 5 ms, a Function as much, a megabyte 50 ms)."""
        functions = sum(name in self.relevance.candidates for name, _ in scan.headers)
        return 1.0 + functions + _size(path) / _BYTES_PER_FILE_COST

    def _run_parts(self, scans: ScanTable, relevant: list[str],
                   parts: list[list[str]], broken: frozenset[str] | set[str],
                   answer_once: bool) -> list[PartResult] | None:
        """Each part analysed in a forked worker; None when one failed.
        `answer_once`: the last part computes the gradcheck answer, the
        others leave their AGF301 findings pending it."""
        import multiprocessing

        context = multiprocessing.get_context("fork")
        running = []
        try:
            for number, part in enumerate(parts):
                self._gradcheck_role = "own" if not answer_once else \
                    "answer" if number == len(parts) - 1 else "defer"
                reader, writer = context.Pipe(duplex=False)
                # The read ends this worker inherits (its own among them),
                # for it to close: a write to a pipe without a reader then
                # fails, never waits for one.
                readers = [r for _, r in running] + [reader]
                worker = context.Process(
                    target=self._run_part,
                    args=(scans, relevant, set(part), broken, writer, readers), daemon=True)
                worker.start()
                writer.close()
                running.append((worker, reader))
        except OSError:  # no processes to be had
            for worker, _ in running:
                worker.kill()
            return None
        finally:
            self._gradcheck_role = "own"  # (the workers took theirs)
        results: list[PartResult] | None = []
        for worker, reader in running:
            try:
                result = reader.recv()
            except (EOFError, OSError):
                result = None  # the worker died
            if not isinstance(result, PartResult):
                results = None
            elif results is not None:
                results.append(result)
            reader.close()
            worker.join()
        return results

    def _run_part(self, scans: ScanTable, relevant: list[str], part: set[str],
                  broken: frozenset[str] | set[str], writer: Any,
                  readers: Sequence[Any] = ()) -> None:
        """In a worker: analyse `part`, send what the parent keeps (`readers`:
        the read ends of the parent's pipes, closed here)."""
        for reader in readers:
            reader.close()
        try:
            self.jobs = 1  # this worker has its core; no pools of its own
            errors_before = len(self.result.errors)
            self._lint(scans, relevant, part, self._context(part, relevant, scans, broken))
            from ..checkers.usage import PENDING_AGF301, gradchecked

            if self._gradcheck_role == "answer" and self.project is not None:
                gradchecked(self.project)  # if no file of the part asked for it
            computed = self.project.cache.get("gradchecked") if self.project else None
            pending = self.project.cache.get(PENDING_AGF301, []) if self.project else []
            writer.send(PartResult(
                findings={p: self._file_findings[p] for p in part if p in self._file_findings},
                reads={p: self._reads[p] for p in part if p in self._reads},
                errors=self.result.errors[errors_before:], functions=self.result.functions,
                gradchecked=computed,  # type: ignore[arg-type]
                pending=list(pending)))  # type: ignore[call-overload]
        except BaseException as exc:  # the parent analyses in one process instead
            try:
                writer.send(_describe(exc))
            except OSError:  # the pipe is broken: the parent is gone, so go too
                pass
        finally:
            writer.close()

    def _merge(self, results: list[PartResult]) -> None:
        """Take the workers' results, in the order of their parts."""
        for part in results:
            self._file_findings.update(part.findings)
            self._reads.update(part.reads)
            self.result.errors.extend(part.errors)
            self.result.functions.extend(part.functions)
            if part.gradchecked is not None and self._gradchecked is None:
                self._gradchecked = part.gradchecked
        self.result.findings = sort_findings(
            [finding for findings in self._file_findings.values() for finding in findings])

    def _settle_pending(self, results: list[PartResult]) -> None:
        """Drop the pending AGF301 findings that the answer (the last
        part's) covers; the files that waited for it read what it read."""
        from ..checkers.usage import GradcheckAnswer
        from ..core.project import GRADCHECK_READS

        assert self._gradchecked is not None
        exercised, answer_reads = self._gradchecked
        answer = GradcheckAnswer(exercised, self.project_roots.of)
        covered = {(p.path, p.line, p.column) for r in results for p in r.pending
                   if answer.covers(p.path, p.key, p.name)}
        for path in {path for path, _, _ in covered}:
            self._file_findings[path] = [
                f for f in self._file_findings.get(path, ())
                if f.code != "AGF301" or (f.path, f.line, f.column) not in covered]
        for reads in self._reads.values():
            if GRADCHECK_READS in reads:
                reads.update(answer_reads)
        self.result.findings = sort_findings(
            [finding for findings in self._file_findings.values() for finding in findings])


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0
