"""The static engine: parse files, find Functions project-wide, run checkers.

Phase 1 parses every file into a module model (imports, classes); a file that
does not parse becomes an AGF000 finding. Phase 2 decides which classes are
Functions across all modules (a Function may derive from one defined in
another file), then runs each rule family over each module. An internal error
in one file is recorded for that file and the run goes on.

Nothing here imports torch or the code being checked.

This module holds the entry points (`lint_inputs`: files checked as one
project; `lint_source`: one module's text), the checking of a parsed module
(`check_module`) and a run's flow (`_Run`). The run's rooms live beside it,
and their names are importable from here too:

- engine_io: what a run takes in and hands out (`SourceInput`,
  `LintResult`, `FunctionTarget`);
- engine_scope: what to analyse: the byte scans, the relevance judgement,
  which files to parse up front;
- engine_parse: how a file is parsed: whole, sparsely, on demand;
- engine_syntax: whether a text parses (AGF000), and the whole-file syntax
  check of the files parsed sparsely;
- engine_parts: analysing in parts, in forked workers;
- engine_workers: workers stop with their run (fork hooks, prctl, SIGTERM);
- engine_incremental: what a run remembers: stale files, stored results.

Tests replace `check_module`, `_CHECK_FRAMES`, `_PARALLEL_MIN_FILES` and
`_load_prctl` on this module: the code that reads them stays here.
"""
from __future__ import annotations

import ast
import gc
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from functools import cached_property
from typing import TYPE_CHECKING

from ..core.files import ProjectRoots, is_notebook, is_test_path
from ..core.findings import Finding, sort_findings
from ..core.model import ModuleInfo, ModuleNamer, build_module
from ..core.registry import default_codes
from .incremental import _Incremental
from .parse import HUGE_BYTES, SPARSE_MIN_BYTES, ParsedFile, _module, _Parsing
from .parts import PartResult, _Parts
from .run_io import FunctionTarget, LintResult, SourceInput, _describe, _op_target, _target
from .scope import ScanTable, _Scope
from .syntax import decode_source, parse_text, syntax_finding
from .workers import _workers_stop_with_run, forking
from .workers import libc_prctl as _load_prctl

if TYPE_CHECKING:  # imported lazily at run time (a warm run analyses nothing)
    from ..core.project import Project
    from ..core.scan import FileScan
    from .cache import Cache
    from .relevance import Relevance

__all__ = [  # what other modules import from here, most of it defined in engine_*
    "FUNCTION_WORD", "HUGE_BYTES", "SPARSE_MIN_BYTES", "FunctionTarget", "LintResult",
    "ParsedFile", "PartResult", "ScanTable", "SourceInput", "check_module",
    "decode_source", "forking", "lint_inputs", "lint_source", "parse_text", "syntax_finding",
]


# ---------------------------------------------------------------------------
# Checking
# ---------------------------------------------------------------------------
def check_module(module: ModuleInfo, project: Project, codes: frozenset[str],
                 target_torch: tuple[int, int] | None = None) -> list[Finding]:
    """Run every enabled rule family over one module (for a project that
    supports torch from `target_torch` on; None: the newest known)."""
    from ..analysis.function_facts import facts_of
    from ..checkers import CHECKERS, Reporter  # the rule families, loaded on first use

    reporter = Reporter(module.path, codes, module.source, target_torch)
    checkers = [cls(reporter, project) for cls in CHECKERS if cls.codes() & codes]
    if not checkers:
        return []
    op_findings: list[Finding] = []

    def check() -> None:
        for fn in project.functions_in(module):
            facts = facts_of(fn)
            for checker in checkers:
                checker.check_function(fn, facts)
        for checker in checkers:
            checker.check_module(module)
        op_findings.extend(_check_op_callbacks(module, project, codes, target_torch))

    # Deeply nested code is analysed, not skipped: a RecursionError even
    # there is the file's internal error (the caller's to report), never a
    # Function's findings silently dropped.
    _with_room_to_recurse(check)
    return reporter.findings + op_findings


def _check_op_callbacks(module: ModuleInfo, project: Project, codes: frozenset[str],
                        target_torch: tuple[int, int] | None) -> list[Finding]:
    """A custom op's registered setup_context and backward, seen as a
    Function: the ctx and backward rules that apply to them
    (analysis/op_functions.py), with a reporter of those rules only."""
    from ..analysis.function_facts import facts_of
    from ..analysis.op_functions import OP_CALLBACK_CODES, op_functions
    from ..checkers import CHECKERS, Reporter

    enabled = codes & OP_CALLBACK_CODES
    views = op_functions(module, project) if enabled else []
    if not views:
        return []
    reporter = Reporter(module.path, enabled, module.source, target_torch)
    checkers = [cls(reporter, project) for cls in CHECKERS if cls.codes() & enabled]
    for view in views:
        facts = facts_of(view)
        for checker in checkers:
            checker.check_function(view, facts)
    return reporter.findings


def _op_targets(source: SourceInput, module: ModuleInfo,
                project: Project) -> list[FunctionTarget]:
    """The custom ops a module defines, for the dynamic mode (their autograd
    registrations may be made in other modules of the project)."""
    if module.module_name == "__main__":
        return []
    from ..analysis.op_model import module_ops, ops_index

    if module_ops(module, project) is None:
        return []
    return [_op_target(source, op) for op in ops_index(project).ops
            if module.same_file(op.module)]


# The rules recurse with the code, a frame or two per level of an
# expression, and the parser builds trees some 3,000 levels deep: a thousand
# nested unary minus signs exceed Python's default limit of 1,000 frames.
_CHECK_FRAMES = 50_000
# The stack of the thread that checks (recursion through C code, such as
# ast.unparse, takes C stack per level); reserved, committed only as used.
_CHECK_STACK_BYTES = 512 << 20


def _with_room_to_recurse(run: Callable[[], None]) -> None:
    """run() with room for _CHECK_FRAMES frames: in a thread with a stack
    large enough for them (the limit is raised while it runs), or in this
    one, with the limit as it is, where no such thread can be started."""
    import threading

    failed: list[BaseException] = []

    def target() -> None:
        try:
            run()
        except BaseException as exc:  # raised again in the caller's thread
            failed.append(exc)

    thread = threading.Thread(target=target, name="autograd-lint-check", daemon=True)
    limit = sys.getrecursionlimit()
    try:
        stack = threading.stack_size(_CHECK_STACK_BYTES)
    except (ValueError, RuntimeError):  # the platform cannot size stacks
        stack = None
    if stack is not None:
        try:
            sys.setrecursionlimit(max(limit, _CHECK_FRAMES))
            thread.start()
        except RuntimeError:  # no thread to be had (memory, a limit on threads)
            pass
        finally:
            threading.stack_size(stack)
        try:
            if thread.ident is not None:
                thread.join()
        finally:
            sys.setrecursionlimit(limit)
    if thread.ident is None:  # not started
        run()
    elif failed:
        raise failed[0]


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector during a batch run.

    Every parsed tree stays alive until the project is checked; with the
    collector on, its repeated scans of millions of (acyclic) AST nodes cost
    more than the parsing itself.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def lint_inputs(inputs: Iterable[SourceInput], *, scan_tree: bool = False,
                prefilter: bool = True, jobs: int | None = None,
                cache: Cache | None = None, keep: list[object] | None = None,
                functions: bool = False) -> LintResult:
    """Check files as one project (Functions may cross files).

    scan_tree: the files are a whole tree (directories were given), so
        project-level rules (AGF301) apply.
    prefilter: parse only the files (and, in large files, the top-level
        statements) that can matter, as judged from a byte scan. Off: parse
        everything whole; the findings are the same.
    jobs: worker processes for the byte scan, the relevance judgement and,
        in large trees on Linux, the analysis (default: one per core).
    cache: reuse scans of unchanged files and the findings of an identical run.
    keep: a list to append the run (syntax trees and all) to, so that the
        caller controls when it is freed.
    functions: also list the Function classes found (for the dynamic mode);
        the result cache is not used then.
    """
    # `_load_prctl` is looked up here as each run starts: replaced on this
    # module, it leaves the workers to poll for their parent.
    with _gc_paused(), _workers_stop_with_run(jobs, _load_prctl):
        run = _Run(list(inputs), scan_tree, prefilter, jobs, None if functions else cache)
        run.collect_functions = functions
        if keep is not None:
            keep.append(run)  # the caller decides when (whether) it is freed
        return run.lint()


# Fewer files to analyse than this: one process (a worker's start and the
# files it parses again for its imports cost more than it saves).
_PARALLEL_MIN_FILES = 32


class _Run(_Incremental, _Parts, _Scope, _Parsing):
    """One batch run: scan, judge relevance, parse, resolve, check.

    Here the run's flow and the checking of each parsed file; the rest are
    mixins, each with the state it keeps: what to analyse (`_Scope`), how
    a file is parsed (`_Parsing`, also the project's ModuleLoader), in which
    processes (`_Parts`), what is remembered between runs (`_Incremental`)."""

    relevance: Relevance  # judged as the run starts

    def __init__(self, inputs: list[SourceInput], scan_tree: bool, prefilter: bool,
                 jobs: int | None, cache: Cache | None = None) -> None:
        self.inputs = inputs
        self.scan_tree = scan_tree
        self.project_roots = ProjectRoots()
        self.prefilter = prefilter
        self.jobs = jobs
        self.cache = cache
        self.result = LintResult(files_checked=sum(not i.context for i in inputs))
        self._by_path = {i.path: i for i in inputs}
        self.texts = {i.path: i.text for i in inputs if i.text is not None}
        if cache is not None:
            cache.begin_run(self.texts)
        self.module_names = ModuleNamer()
        self.project: Project | None = None
        self._file_findings: dict[str, list[Finding]] = {}  # per file, analysed or stored
        self._reads: dict[str, set[str]] = {}  # per analysed file: the files it read
        self._checking: set[str] | None = None  # the files to analyse (None: all)
        self._op_modules: list[str] = []  # modules that may define or register custom ops
        # The scans, for the files an incremental run parses when a name
        # leads there.
        self._scans_by_path: ScanTable | None = None
        self.collect_functions = False
        self._init_scope()
        self._init_parsing()
        self._init_parts()
        self._init_incremental()

    @cached_property
    def tested_projects(self) -> frozenset[str | None]:
        """AGF301 asks whether a project's tests check a Function: a project
        scanned without its tests (a wheel, a package without its test
        suite) cannot say. The roots of the projects whose tests were scanned
        (asked when a run analyses: a warm run with nothing changed does not)."""
        if not self.scan_tree:
            return frozenset()
        return frozenset(self.project_roots.of(i.path) for i in self.inputs
                         if is_test_path(i.path))

    def lint(self) -> LintResult:
        references = any(c in i.codes for i in self.inputs for c in ("AGF105", "AGF301"))
        gradcheck = self.scan_tree and any("AGF301" in i.codes for i in self.inputs)
        scans = ScanTable(list(self._by_path), self.cache, self.jobs, self.texts)
        self.relevance = self._judge(scans, references, gradcheck)
        # The files a run analyses (all of them without the prefilter).
        unreadable = scans.unreadable()
        # Every notebook is parsed: one that is not a notebook says so (AGF000).
        relevant = [p for p, source in self._by_path.items() if p not in unreadable and (
            source.explicit or not self.prefilter or self.relevance.matters(p)
            or is_notebook(p))]
        self.result.skipped.extend((source.display, scans[p].error or "")
                                   for p, source in self._by_path.items() if p in unreadable)
        # Files read only for what others import (beside named files) are
        # never analysed: parsed when a name leads there.
        reported = {p for p in relevant if not self._by_path[p].context}
        everything = None if len(reported) == len(relevant) else reported
        if self.cache is None or not self.cache.keeps_results:
            self._analyse_files(scans, relevant, everything)
            return self.result
        self._analyse_incrementally(scans, relevant, reported, everything)
        return self.result

    def _analyse_files(self, scans: ScanTable, relevant: list[str],
                       only: set[str] | None = None, broken: frozenset[str] | set[str] =
                       frozenset()) -> None:
        """Analyse `only` (None: every relevant file), in worker processes
        when there are enough files and cores; `broken`: files known not to
        parse. Each worker analyses one part as an incremental run would
        (the rest parsed when a name leads there), so the findings are one
        process's."""
        targets = relevant if only is None else [p for p in relevant if p in only]
        if len(targets) >= _PARALLEL_MIN_FILES and \
                self._analyse_in_parts(scans, relevant, targets, broken):
            return
        if only is None:
            self._lint(scans, relevant)
        else:
            self._lint(scans, relevant, only, self._context(only, relevant, scans, broken))

    def _lint(self, scans: ScanTable, paths: list[str], only: set[str] | None = None,
              context: Iterable[str] = ()) -> None:
        """Parse the relevant `paths` and analyse them; with `only`, parse
        those and `context` up front, analyse only those in `only`, and
        parse any other file that matters when a name leads there, as a
        whole run would have (so their findings are a whole run's)."""
        self._checking = only
        self._scans_by_path = scans
        # Ops are registered by name across modules: every run, whole or in
        # parts, sees all of them (analysis/op_model.py, `ops_index`).
        self._op_modules = sorted({self.module_names(p)[0] for p in paths if scans[p].ops})
        wanted = None if only is None else only | set(context)
        relevant = []
        for path in paths:
            if wanted is None or path in wanted:
                source = self._by_path[path]
                matters = source.explicit or self.relevance.matters(path)
                relevant.append((source, scans[path], matters))
        # AGF000 covers what the run reads (RULES.md): a syntax error in a
        # statement a sparse parse keeps makes that parse fail and the file
        # is parsed whole; one in a statement no rule reads is not reported.
        self._analyse(relevant)
        self.result.findings = sort_findings(
            [finding for findings in self._file_findings.values() for finding in findings])

    def _analyse(self, relevant: list[tuple[SourceInput, FileScan, bool]]) -> None:
        # Drop the stored findings of what is analysed now (context files keep theirs).
        for source, _, _ in relevant:
            if self._checking is None or source.path in self._checking:
                self._file_findings.pop(source.path, None)
                self._reads.pop(source.path, None)
        self.result.functions = []
        parsed: list[ParsedFile] = []
        for source, scan, matters in relevant:
            entry = self._parse(source, scan, matters)
            if entry is not None:
                if entry.module is not None and self.prefilter:
                    entry.module.reach = self.relevance.reach.get(source.path, frozenset())
                parsed.append(entry)
        from ..core.project import Project

        self._in_project = {p.source.path for p in parsed if p.module is not None}
        self.project = Project([p.module for p in parsed if p.module is not None],
                               scan_tree=self.scan_tree,
                               tested_projects=(self.project_roots, self.tested_projects),
                               loader=self,
                               candidates=self.relevance.candidates,
                               lazy=self._checking is not None)
        self.project.cache["op_module_names"] = self._op_modules
        if self._gradcheck_role == "defer":  # another worker computes the answer
            from ..checkers.usage import PENDING_AGF301

            self.project.cache[PENDING_AGF301] = []
        seed = self._gradchecked_seed
        if seed is not None:
            self.project.cache["gradchecked"] = (
                {(str(path), str(key)) for path, key in seed["keys"]}, frozenset(seed["reads"]))
        for entry in parsed:
            if self._checking is None or entry.source.path in self._checking:
                self._check(entry)

    def _check(self, entry: ParsedFile) -> None:
        """Run the rules over a parsed file; keep its findings, the files it
        read and, when asked for, its Functions."""
        from .noqa import apply_noqa

        findings = entry.findings
        if entry.module is not None:
            with self.project.reads.frame() as reads:
                self.project.read(entry.module)  # and what deciding its classes read
                try:
                    checked = check_module(entry.module, self.project, entry.source.codes,
                                           entry.source.target_torch)
                except Exception as exc:
                    self.result.errors.append((entry.source.display, _describe(exc)))
                    checked = []
            reads.discard(entry.source.path)
            self._reads[entry.source.path] = reads
            findings = findings + apply_noqa(checked, entry.text, entry.module.path,
                                             entry.source.codes)
            if is_notebook(entry.source.path):
                from ..core.notebooks import cell_lines_in_messages

                findings = cell_lines_in_messages(findings, entry.source.read_bytes)
            if self.collect_functions and not entry.source.context:
                for fn in self.project.functions_in(entry.module):
                    target = _target(entry.source, fn, self.project)
                    if target is not None:
                        self.result.functions.append(target)
                self.result.functions.extend(
                    _op_targets(entry.source, entry.module, self.project))
        self._file_findings[entry.source.path] = findings


# Every way to define a Function subclass in a module spells this: torch's
# `Function`, `InplaceFunction`, an alias imported `... Function as F`.
FUNCTION_WORD = "Function"


def _may_matter(text: str) -> bool:
    """Whether a lone module may define a Function or a custom op."""
    from ..core.scan import text_mentions_ops

    return FUNCTION_WORD in text or text_mentions_ops(text)


def lint_source(source: str | bytes, path: str = "<string>",
                codes: Iterable[str] | None = None, *, tree: ast.Module | None = None,
                module_name: tuple[str, bool] | None = None,
                context: Sequence[ModuleInfo] = (),
                target_torch: tuple[int, int] | None = None) -> list[Finding]:
    """Check one module given as text (tests, editors, flake8/pylint adapters).

    tree: the module's syntax tree when the caller already parsed `source`
    (flake8 hands one over). module_name: (dotted name, is a package) when the
    caller knows it better than the file's location does (pylint does).
    context: other modules of its project (read, never reported)."""
    enabled = frozenset(codes) if codes is not None else default_codes()
    if tree is None:
        if "AGF000" not in enabled and isinstance(source, str) and not _may_matter(source):
            return []  # nothing to report, not even a syntax error: skip the parse
        text, tree, syntax = parse_text(path, source)
        if syntax is not None:
            return [syntax] if "AGF000" in enabled else []
    else:
        text = source if isinstance(source, str) else decode_source(source)
    assert tree is not None and text is not None
    if not _may_matter(text) and not context:
        return []  # a lone module defines no Function (or op) without spelling the word
    if module_name is not None:
        module = build_module(path, module_name[0], module_name[1], tree, text)
    else:
        module = _module(path, path, tree, text)
    from ..core.project import Project
    from .noqa import apply_noqa

    findings = check_module(module, Project([module, *context]), enabled, target_torch)
    return sort_findings(apply_noqa(findings, text, path, enabled))
