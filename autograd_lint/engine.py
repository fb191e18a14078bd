"""The static engine: parse files, find Functions project-wide, run checkers.

Phase 1 parses every file into a module model (imports, classes); a file that
does not parse becomes an AGF000 finding. Phase 2 decides which classes are
Functions across all modules (a Function may derive from one defined in
another file), then runs each rule family over each module. An internal error
in one file is recorded for that file and the run goes on.

Nothing here imports torch or the code being checked.
"""
from __future__ import annotations

import ast
import gc
import hashlib
import io
import os
import sys
import tokenize
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .files import ProjectRoots, is_test_path
from .findings import Finding, sort_findings
from .model import ModuleInfo, ModuleNamer, build_module
from .noqa import filter_findings
from .project import GRADCHECK_READS, Project, reachable_as
from .registry import RULES, default_codes

if TYPE_CHECKING:  # imported lazily at run time
    from .cache import Cache
    from .relevance import Relevance
    from .scan import FileScan


_PYTHON = "{}.{}".format(*sys.version_info[:2])


@dataclass
class SourceInput:
    """One file to check: where it is, how to show it, which rules apply."""

    path: str  # a Path is accepted and stored as text (big trees: Paths cost)
    display: str
    codes: frozenset[str]
    explicit: bool = False  # named on the command line: always parsed whole
    context: bool = False  # read only for what other files import, never reported
    # An editor's (or stdin's) text for this path, checked instead of the
    # file on disk (which may be older, or absent).
    text: bytes | None = None

    def __post_init__(self) -> None:
        self.path = os.fspath(self.path)

    def read(self) -> bytes:
        if self.text is not None:
            return self.text
        with open(self.path, "rb") as handle:
            return handle.read()


@dataclass
class LintResult:
    findings: list[Finding] = field(default_factory=list)
    errors: list[tuple[str, str]] = field(default_factory=list)  # (path, message)
    files_checked: int = 0
    functions: list[FunctionTarget] = field(default_factory=list)  # with functions=True
    workers: int = 1  # processes the analysis ran in


@dataclass(frozen=True)
class FunctionTarget:
    """A Function class the dynamic mode can import and check."""

    path: str  # on disk
    display: str
    module: str  # dotted module name
    import_root: str  # the directory to put on sys.path to import `module`
    qualname: str  # within the module ("Outer.Inner")
    line: int
    end_line: int  # the class statement's last line
    once_differentiable: bool
    has_jvp: bool
    has_vmap: bool  # a vmap staticmethod or generate_vmap_rule = True
    # Set when the class's name is bound again later in its scope: the line
    # where, and the first line of each method it defines, so that the worker
    # can tell whether the class it imports by name is this one.
    rebound_at: int | None = None
    method_lines: tuple[tuple[str, int], ...] = ()
    # Why it cannot run at all (no backward): reported as AGD900 without a worker.
    skip_reason: str | None = None
    # forward's inputs that static analysis saw used as tensors: synthesis
    # never guesses a number for them.
    tensor_inputs: tuple[str, ...] = ()
    legacy: bool = False  # forward is an instance method (pre-1.3 style)

    @property
    def key(self) -> str:
        """Unique within a module, also for two classes of one name."""
        return f"{self.qualname}:{self.line}"

    @property
    def name(self) -> str:
        return self.qualname.rsplit(".", 1)[-1]

    def to_json(self) -> dict[str, object]:
        return {**self.__dict__, "key": self.key}


def _target(source: SourceInput, fn: object, project: Project) -> FunctionTarget | None:
    from .project import FunctionClass

    assert isinstance(fn, FunctionClass)
    module = fn.module
    if module.module_name == "__main__":
        return None
    forward, backward = fn.method("forward"), fn.method("backward") or fn.method("vjp")
    skip_reason = None
    if forward is None or backward is None:
        if project.has_subclasses(fn):
            return None  # a base class: its subclasses are what runs
        skip_reason = ("it defines no forward (AGF111)" if forward is None else
                       "it defines neither backward nor vjp (AGF106): nothing to differentiate")
    generate = fn.attr("generate_vmap_rule")
    facts = fn.facts
    node = fn.info.node
    method_lines: tuple[tuple[str, int], ...] = ()
    if fn.info.rebound_at is not None:
        method_lines = tuple(
            (name, min([method.node.lineno, *(d.lineno for d in method.node.decorator_list)]))
            for name, method in fn.own.items() if method.node is not None)
    return FunctionTarget(
        path=source.path, display=source.display, module=module.module_name,
        import_root=module.import_root or os.path.dirname(os.path.abspath(source.path)),
        qualname=fn.info.qualname, line=fn.info.line,
        end_line=node.end_lineno or node.lineno,
        once_differentiable=backward is not None and backward.once_differentiable,
        has_jvp=fn.method("jvp") is not None,
        has_vmap=fn.method("vmap") is not None or (
            isinstance(generate, ast.Constant) and generate.value is True),
        rebound_at=fn.info.rebound_at, method_lines=method_lines, skip_reason=skip_reason,
        tensor_inputs=tuple(sorted(name for name in facts.inputs if facts.input_is_tensor(name))),
        legacy=forward is not None and forward.node is not None and not forward.is_static
        and not forward.is_classmethod)


@dataclass
class ParsedFile:
    source: SourceInput
    text: str | None = None
    module: ModuleInfo | None = None
    findings: list[Finding] = field(default_factory=list)


# ---------------------------------------------------------------------------
# Parsing
# ---------------------------------------------------------------------------
def decode_source(data: bytes) -> str:
    """Decode like the interpreter does: BOM, then a coding cookie, then UTF-8."""
    from .scan import wide_encoding

    if wide_encoding(data) is not None:
        raise UnicodeError("it is UTF-16 or UTF-32 encoded (a byte order mark says so); "
                           "Python source must be UTF-8 or declare its encoding")
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    return data.decode(encoding)


def syntax_finding(path: str, exc: BaseException) -> Finding:
    rule = RULES["AGF000"]
    line, column, end_line, end_column = 1, 0, None, None
    if isinstance(exc, SyntaxError):
        line = exc.lineno or 1
        column = max((exc.offset or 1) - 1, 0)
        end_line = getattr(exc, "end_lineno", None)
        end_offset = getattr(exc, "end_offset", None)
        end_column = end_offset - 1 if end_offset and end_offset > 0 else None
        detail = f"{exc.msg or 'invalid syntax'} (parsed as Python {_PYTHON})"
    elif isinstance(exc, (UnicodeError, LookupError)):
        detail = f"cannot decode the file ({exc})"
    elif isinstance(exc, RecursionError):
        detail = "the code is nested too deeply for the parser"
    elif isinstance(exc, MemoryError):
        detail = "the file is too large to parse"
    else:
        detail = str(exc) or type(exc).__name__
    return Finding(path=path, line=line, column=column, end_line=end_line,
                   end_column=end_column, code="AGF000", name=rule.name,
                   severity=rule.severity, message=rule.format(detail=detail))


def parse_text(display: str, data: bytes | str) -> tuple[str | None, ast.Module | None,
                                                            Finding | None]:
    """(text, tree, None) or (text-or-None, None, AGF000 finding)."""
    text: str | None = None
    try:
        text = data if isinstance(data, str) else decode_source(data)
        with warnings.catch_warnings():  # e.g. invalid escapes: not ours to print
            warnings.simplefilter("ignore")
            tree = ast.parse(text, filename=display)
    except (SyntaxError, ValueError, LookupError, RecursionError,  # ValueError: bad bytes too
            MemoryError) as exc:
        return text, None, syntax_finding(display, exc)
    return text, tree, None


# ---------------------------------------------------------------------------
# Checking
# ---------------------------------------------------------------------------
def check_module(module: ModuleInfo, project: Project, codes: frozenset[str]) -> list[Finding]:
    """Run every enabled rule family over one module."""
    from .checkers import CHECKERS, Reporter  # the rule families, loaded on first use

    reporter = Reporter(module.path, codes, module.source)
    checkers = [cls(reporter, project) for cls in CHECKERS if cls.codes() & codes]
    if not checkers:
        return []

    def check() -> None:
        for fn in project.functions_in(module):
            facts = fn.facts
            for checker in checkers:
                checker.check_function(fn, facts)
        for checker in checkers:
            checker.check_module(module)

    # Deeply nested code is analysed, not skipped: a RecursionError even
    # there is the file's internal error (the caller's to report), never a
    # Function's findings silently dropped.
    _with_room_to_recurse(check)
    return reporter.findings


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
    with _gc_paused(), _workers_stop_with_run(jobs):
        run = _Run(list(inputs), scan_tree, prefilter, jobs, None if functions else cache)
        run.collect_functions = functions
        if keep is not None:
            keep.append(run)  # the caller decides when (whether) it is freed
        return run.lint()


# More changed files than this: judge the whole tree again rather than update.
_UPDATE_MAX_FILES = 50


def _kept_words(cache: Cache) -> Callable[[str], frozenset[bytes] | None] | None:
    """A language server's memory of the words each file names after a dot
    (a judgement again reads only the files that name a wanted one)."""
    from .cache import EditorCache

    return cache.attribute_words if isinstance(cache, EditorCache) else None


def _same_scan(before: FileScan | None, after: FileScan) -> bool:
    """Whether a changed file's scan says what it said before (then only the
    parts of its relevance that depend on its text can have changed)."""
    return before is not None and after.error is None and \
        (before.headers, before.aliases, before.imports, before.gradcheck) == \
        (after.headers, after.aliases, after.imports, after.gradcheck)


# Fewer files to analyse than this: one process (a worker's start and the
# files it parses again for its imports cost more than it saves).
_PARALLEL_MIN_FILES = 32
# Parsing this many bytes costs about as much as analysing a small file.
_BYTES_PER_FILE_COST = 100_000


def _can_fork() -> bool:
    """Whether workers can be forked safely (they inherit the run as it is;
    fork is the default, and safe for us, on Linux only)."""
    return sys.platform.startswith("linux")


# Worker processes stop with their run. Workers are forked while a run is in
# progress (the analysis parts here, the pools of `scan_all`,
# `dotted_references` and `SyntaxCheck`); a worker forked then is armed to die
# with the process that forked it: on Linux the kernel kills it when that
# process dies (PR_SET_PDEATHSIG: a SIGKILL of the run cannot be caught),
# elsewhere a thread of the worker polls for a new parent. A run stopped by
# SIGTERM kills its workers itself, then dies by the signal.
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
_PARENT_POLL_SECONDS = 0.2


class _Workers:
    """What the fork hooks and the SIGTERM handler need (module state: a
    forked child has its own copy)."""

    runs = 0  # runs in progress in this process (a forked child inherits them)
    owner = 0  # the process whose run installed `_terminated`
    before: frozenset[int] = frozenset()  # the owner's children from before its run
    forking = 0  # the process that is forking (set just before the fork)
    from_main = True  # whether its main thread forks
    prctl: Any = None  # libc's prctl where there is one
    hooked = False  # the fork hooks are registered


@contextmanager
def _workers_stop_with_run(jobs: int | None) -> Iterator[None]:
    """Within it, forked workers die with their parent and SIGTERM kills them
    before the run dies by it (when this is the main thread and SIGTERM has
    no handler); a run ending with an exception kills those still running."""
    if jobs == 1 or not hasattr(os, "register_at_fork"):
        yield  # one process (or no fork: spawned workers are not armed)
        return
    import signal
    import threading

    _hook_forks()
    before = _children()
    installed = _Workers.runs == 0 and \
        threading.current_thread() is threading.main_thread() and \
        signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
    if installed:
        _Workers.owner, _Workers.before = os.getpid(), before
        signal.signal(signal.SIGTERM, _terminated)
    _Workers.runs += 1
    try:
        yield
    except BaseException:
        _stop_workers(before)
        raise
    finally:
        _Workers.runs -= 1
        if installed and signal.getsignal(signal.SIGTERM) is _terminated:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            _Workers.owner = 0


def _children() -> frozenset[int]:
    """The pids of this process's running multiprocessing children."""
    multiprocessing = sys.modules.get("multiprocessing")
    if multiprocessing is None:  # none started, then
        return frozenset()
    return frozenset(child.pid for child in multiprocessing.active_children()
                     if child.pid is not None)


def _stop_workers(before: frozenset[int]) -> None:
    """Kill this process's multiprocessing children but those in `before`."""
    multiprocessing = sys.modules.get("multiprocessing")
    if multiprocessing is None:
        return
    workers = [child for child in multiprocessing.active_children()
               if child.pid not in before]
    for worker in workers:
        try:
            worker.kill()
        except (OSError, ValueError):  # gone, or closed
            pass
    for worker in workers:
        try:
            worker.join(1.0)
        except (OSError, ValueError, AssertionError):
            pass


def _terminated(signum: int, frame: object) -> None:
    """SIGTERM during a run: kill the workers, then die by the signal."""
    import signal

    if os.getpid() != _Workers.owner:  # a worker, forked before it reset this
        os._exit(128 + signum)
    _stop_workers(_Workers.before)
    try:
        sys.stderr.write("autograd-lint: terminated\n")
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):
        pass
    signal.signal(signum, signal.SIG_DFL)
    signal.raise_signal(signum)
    os._exit(128 + signum)  # not reached: the signal ends the process


def _hook_forks() -> None:
    if _Workers.hooked:
        return
    _Workers.hooked = True
    _Workers.prctl = _load_prctl()
    os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent,
                        after_in_child=_after_fork_in_child)


def _load_prctl() -> Any:
    """libc's prctl on Linux; None elsewhere, or where it cannot be loaded."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
        prctl.argtypes = [ctypes.c_int] + [ctypes.c_ulong] * 4
        prctl.restype = ctypes.c_int
        return prctl
    except (ImportError, OSError, AttributeError):
        return None


def _before_fork() -> None:
    import threading

    _Workers.forking = os.getpid()
    _Workers.from_main = threading.current_thread() is threading.main_thread()


def _after_fork_in_parent() -> None:
    _Workers.forking = 0


def forking() -> bool:
    """Whether this process is between the two halves of a fork: a signal
    handler that raises there is ignored (at-fork callbacks swallow it)."""
    return _Workers.forking == os.getpid()


def _after_fork_in_child() -> None:
    """In every child forked during a run: die with the parent."""
    if _Workers.runs == 0:
        return  # forked outside a run: none of ours
    import signal

    try:
        if callable(signal.getsignal(signal.SIGTERM)):  # ours, or the command's
            signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a worker just dies
    except ValueError:  # not the main thread: `_terminated` exits a worker too
        pass
    _Workers.owner = 0
    parent = _Workers.forking or os.getppid()
    armed = False
    # The kernel sends the signal when the forking *thread* ends: armed only
    # for a child of the main thread (that of a shorter-lived thread polls).
    if _Workers.prctl is not None and _Workers.from_main:
        try:
            armed = _Workers.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0
        except Exception:  # then poll instead
            armed = False
    if os.getppid() != parent:  # the parent died before the signal was armed
        os._exit(1)
    if not armed:
        import threading

        threading.Thread(target=_watch_parent, args=(parent,), daemon=True,
                         name="autograd-lint-parent-watch").start()


def _watch_parent(parent: int) -> None:
    """In a worker without PR_SET_PDEATHSIG: exit once the parent is gone
    (whatever the worker waits for, it waits for a process that died)."""
    import time

    while os.getppid() == parent:
        time.sleep(_PARENT_POLL_SECONDS)
    os._exit(1)


@dataclass
class PartResult:
    """What a worker sends back for its part of the files."""

    findings: dict[str, list[Finding]]
    reads: dict[str, set[str]]
    errors: list[tuple[str, str]]
    functions: list[FunctionTarget]
    broken: set[str]  # files of the part that do not parse whole
    sparse: set[str]  # files parsed sparsely: the part's and those loaded for it
    gradchecked: tuple[set[tuple[str, str]], frozenset[str]] | None


# Files below this size are parsed whole: sparse parsing pays off for big ones.
SPARSE_MIN_BYTES = 16_384
# Files above this size are never parsed whole, even when named explicitly: a
# whole parse of a 50 MB data module takes minutes and gigabytes.
HUGE_BYTES = 4_000_000


class ScanTable(Mapping[str, "FileScan"]):
    """The byte scans of a run's files by path. Those `take`n are scanned
    then (in worker processes when there are many), or read from the cache
    where the file is unchanged; any other is read from the cache when first
    asked for. A warm run with nothing changed asks for none."""

    def __init__(self, paths: list[str], cache: Cache | None, jobs: int | None,
                 texts: Mapping[str, bytes]) -> None:
        self._paths = paths
        self._cache = cache
        self._jobs = jobs
        self._texts = texts  # an editor's text of some files
        self._taken: dict[str, FileScan] = {}

    def take(self, paths: Iterable[str]) -> None:
        from .scan import scan_all, scan_bytes

        missing = []
        for path in paths:
            if path in self._taken:
                continue
            cached = self._cache.scan(path) if self._cache is not None else None
            if cached is not None:
                self._taken[path] = cached
            else:
                missing.append(path)
        on_disk = [path for path in missing if path not in self._texts]
        scans = [scan_bytes(path, self._texts[path]) for path in missing
                 if path in self._texts] + scan_all(on_disk, self._jobs)
        for scan in scans:
            self._taken[scan.path] = scan
            if self._cache is not None:
                self._cache.store_scan(scan)

    def class_names(self, paths: Iterable[str]) -> set[str]:
        """The names of the classes these files define."""
        return {name for path in paths for name, _ in self[path].headers}

    def base_names(self, paths: Iterable[str]) -> set[str]:
        """The last parts of the bases of these files' classes (`ops.Scale`:
        `Scale`)."""
        return {base.rpartition(".")[2] for path in paths
                for _, bases in self[path].headers for base in bases}

    def unreadable(self) -> set[str]:
        """The files taken that could not be read (those not taken were
        read when they last changed)."""
        return {path for path, scan in self._taken.items() if scan.error is not None}

    def __getitem__(self, path: str) -> FileScan:
        if path not in self._taken:
            self.take([path])
        return self._taken[path]

    def __iter__(self) -> Iterator[str]:
        return iter(self._paths)

    def __len__(self) -> int:
        return len(self._paths)


class _Run:
    """One batch run: scan, judge relevance, parse, resolve, check."""

    def __init__(self, inputs: list[SourceInput], scan_tree: bool, prefilter: bool,
                 jobs: int | None, cache: Cache | None = None) -> None:
        self.inputs = inputs
        self.scan_tree = scan_tree
        # AGF301 asks whether a project's tests check a Function: a project
        # scanned without its tests (a wheel, a package without its test
        # suite) cannot say. The roots of the projects whose tests were scanned.
        self.project_roots = ProjectRoots()
        self.tested_projects = frozenset(
            self.project_roots.of(i.path) for i in inputs if is_test_path(i.path)
        ) if scan_tree else frozenset()
        self.prefilter = prefilter
        self.jobs = jobs
        self.cache = cache
        self.result = LintResult(files_checked=sum(not i.context for i in inputs))
        self._by_path = {i.path: i for i in inputs}
        self.texts = {i.path: i.text for i in inputs if i.text is not None}
        if cache is not None:
            cache.begin_run(self.texts)
        self._by_last_part: dict[str, list[SourceInput]] | None = None
        self._in_project: set[str] = set()  # paths parsed by the current pass
        self._whole: dict[str, ModuleInfo | None] = {}  # whole-file parses, by path
        self.module_names = ModuleNamer()
        self._whole_only: set[str] = set()  # files found broken: parse whole, never sparse
        self._sparse_parsed: dict[str, bool] = {}
        self.project: Project | None = None
        self._file_findings: dict[str, list[Finding]] = {}  # per file, analysed or stored
        self._reads: dict[str, set[str]] = {}  # per analysed file: the files it read
        self._checking: set[str] | None = None  # the files to analyse (None: all)
        # An incremental run's: the files that matter but were not parsed up
        # front, those among them known not to parse, the scans, and which
        # Functions gradcheck exercises as an earlier run found it.
        self._context_paths: set[str] = set()
        self._broken_context: set[str] = set()
        self._scans_by_path: ScanTable | None = None
        self._gradchecked_seed: dict[str, Any] | None = None
        # Which Functions gradcheck exercises, as a worker found it.
        self._gradchecked: tuple[set[tuple[str, str]], frozenset[str]] | None = None
        self._broken: set[str] = set()  # analysed files found not to parse whole
        self._errors_before = 0
        self.collect_functions = False

    def lint(self) -> LintResult:
        references = any(c in i.codes for i in self.inputs for c in ("AGF105", "AGF301"))
        gradcheck = self.scan_tree and any("AGF301" in i.codes for i in self.inputs)
        scans = ScanTable(list(self._by_path), self.cache, self.jobs, self.texts)
        self.relevance = self._judge(scans, references, gradcheck)
        # The files a run analyses (all of them without the prefilter).
        unreadable = scans.unreadable()
        relevant = [p for p, source in self._by_path.items() if p not in unreadable and (
            source.explicit or not self.prefilter or self.relevance.matters(p))]
        self.result.errors.extend((source.display, scans[p].error or "")
                                  for p, source in self._by_path.items() if p in unreadable)
        # Files read only for what others import (beside named files) are
        # never analysed: parsed when a name leads there.
        reported = {p for p in relevant if not self._by_path[p].context}
        everything = None if len(reported) == len(relevant) else reported
        if self.cache is None or not self.cache.keeps_results:
            self._analyse_files(scans, relevant, everything)
            return self.result
        key = self.cache.run_key(self._run_settings())
        records, facts = self.cache.file_results(key)
        stale = self._stale(relevant, records, scans)
        if stale is None:
            self._analyse_files(scans, relevant, everything)
        elif stale & reported:
            self._analyse_stale(scans, relevant, stale & reported, records, facts)
        # A context file's record holds its digest (its changes make the
        # files deriving from its classes stale), never findings or reads.
        self._file_findings.update((p, []) for p in relevant if p not in reported)
        self.result.findings = sort_findings(
            [finding for path in relevant for finding in self._file_findings.get(path, ())])
        self._store(key, relevant, records, stale, facts)
        self.cache.flush()
        return self.result

    def _analyse_stale(self, scans: ScanTable, relevant: list[str], stale: set[str],
                       records: dict[str, Any], facts: dict[str, Any]) -> None:
        """An incremental run: the stale files, with what the stored results
        of the others say (the gradcheck answer while it holds, the files
        that do not parse)."""
        seed = facts.get("gradchecked")
        if self.scan_tree and not any(scans[p].gradcheck for p in stale) and \
                self._still_holds(seed):
            self._gradchecked_seed = seed
        broken = {p for p in relevant if p not in stale and p in records and any(
            item.get("code") == "AGF000" for item in records[p]["findings"])}
        self._analyse_files(scans, relevant, stale, broken)

    def _analyse_files(self, scans: ScanTable, relevant: list[str],
                       only: set[str] | None = None, broken: frozenset[str] | set[str] =
                       frozenset()) -> None:
        """Analyse `only` (None: every relevant file), in worker processes
        when there are enough files and cores; `broken`: files known not to
        parse. Each worker analyses one part as an incremental run would
        (the rest parsed when a name leads there), so the findings are one
        process's."""
        targets = relevant if only is None else [p for p in relevant if p in only]
        parts = self._parts(targets, scans)
        if len(parts) > 1 and _can_fork():
            results = self._run_parts(scans, relevant, parts, broken)
            if results is not None:
                found_broken = set().union(*(r.broken for r in results))
                if any(r.sparse & found_broken for r in results):
                    # Rare: a worker read a file sparsely that does not parse
                    # whole; all analyse again as the whole parses see it.
                    self._whole_only |= found_broken
                    results = self._run_parts(scans, relevant, parts, broken)
            if results is not None:
                self._merge(results)
                self.result.workers = len(results)
                return
        if only is None:
            self._lint(scans, relevant)
        else:
            self._lint(scans, relevant, only, self._context(only, relevant, scans, broken))

    def _parts(self, targets: list[str], scans: ScanTable) -> list[list[str]]:
        """The files to analyse cut into one run of neighbours per worker
        (neighbours import each other: fewer files parsed twice), balanced
        by the cost each file is expected to have."""
        workers = self.jobs if self.jobs is not None else (os.cpu_count() or 1)
        if workers < 2 or len(targets) < _PARALLEL_MIN_FILES:
            return [targets]
        costs = [self._expected_cost(path, scans[path]) for path in targets]
        share = sum(costs) / workers
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
        try:
            size = os.stat(path).st_size
        except OSError:
            size = 0
        functions = sum(name in self.relevance.candidates for name, _ in scan.headers)
        return 1.0 + functions + size / _BYTES_PER_FILE_COST

    def _run_parts(self, scans: ScanTable, relevant: list[str],
                   parts: list[list[str]], broken: frozenset[str] | set[str]
                   ) -> list[PartResult] | None:
        """Each part analysed in a forked worker; None when one failed."""
        import multiprocessing

        context = multiprocessing.get_context("fork")
        running = []
        try:
            for part in parts:
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
            computed = self.project.cache.get("gradchecked") if self.project else None
            writer.send(PartResult(
                findings={p: self._file_findings[p] for p in part if p in self._file_findings},
                reads={p: self._reads[p] for p in part if p in self._reads},
                errors=self.result.errors[errors_before:], functions=self.result.functions,
                broken=self._broken, gradchecked=computed,  # type: ignore[arg-type]
                sparse={p for p, sparse in self._sparse_parsed.items() if sparse}))
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

    def _context(self, analysed: set[str], relevant: list[str], scans: ScanTable,
                 broken: frozenset[str] | set[str]) -> set[str]:
        """The files to parse up front beside those `analysed`: those deriving
        from their classes and, when an analysed file may define a Function
        and no stored answer holds, those calling gradcheck. Any other file
        that matters is parsed when a name leads to it."""
        self._broken_context = set(broken) - analysed
        self._context_paths = set(relevant) - analysed
        defined = scans.class_names(analysed) & self.relevance.candidates
        context = {path for path in self._context_paths if scans.base_names([path]) & defined}
        if self.scan_tree and self._gradchecked_seed is None and any(
                p in self.relevance.defining and "AGF301" in self._by_path[p].codes
                for p in analysed):
            context |= self.relevance.gradchecking & self._context_paths
        return context - self._broken_context

    def _still_holds(self, seed: object) -> bool:
        """Whether a stored gradcheck answer is sound and none of the files
        it was computed from changed."""
        assert self.cache is not None
        return isinstance(seed, dict) and isinstance(seed.get("reads"), dict) and \
            isinstance(seed.get("keys"), list) and \
            all(isinstance(k, list) and len(k) == 2 for k in seed["keys"]) and \
            all(self.cache.digest(path) == value for path, value in seed["reads"].items())

    def _run_settings(self) -> dict[str, object]:
        """What every file's findings depend on besides the files read: the
        settings, the tree's file list (a new file may take a module name an
        import resolved to before) and the names that may be Functions."""
        tree = hashlib.blake2b("\0".join(self._by_path).encode(), digest_size=16).hexdigest()
        return {"scan_tree": self.scan_tree, "prefilter": self.prefilter, "tree": tree,
                "candidates": sorted(self.relevance.candidates)}

    def _file_settings(self, path: str) -> list[object]:
        source = self._by_path[path]
        return [source.display, sorted(source.codes), source.explicit]

    def _stale(self, relevant: list[str], records: dict[str, Any],
               scans: ScanTable) -> set[str] | None:
        """The files to analyse again: changed, or reading a changed file;
        None when every file must be (one has no sound stored result). The
        stored findings of the others are taken."""
        assert self.cache is not None
        digest = self.cache.digest
        stale: set[str] = set()
        changed: set[str] = set()
        for path in relevant:
            record = records.get(path)
            findings = self.cache.findings(record.get("findings")) \
                if isinstance(record, dict) and isinstance(record.get("reads"), dict) else None
            if findings is None:
                return None
            if record.get("settings") != self._file_settings(path) or \
                    record.get("digest") != digest(path):
                changed.add(path)
            elif any(digest(read) != value for read, value in record["reads"].items()):
                stale.add(path)
            else:
                self._file_findings[path] = findings
        if not changed:
            return stale
        # What no stored read can show: a changed file that now derives from
        # a class of another file (which may now have subclasses), or that
        # now calls gradcheck (which may now exercise any Function).
        # (Only custom Functions have subclasses that matter: by name, candidates.)
        bases = scans.base_names(changed) & self.relevance.candidates
        gradchecks = any(scans[path].gradcheck for path in changed)
        for path in relevant:
            if scans.class_names([path]) & bases or \
                    (gradchecks and GRADCHECK_READS in records[path]["reads"]):
                stale.add(path)
        return stale | changed

    def _store(self, key: str, relevant: list[str], records: dict[str, Any],
               stale: set[str] | None, facts: dict[str, Any]) -> None:
        """Keep each analysed file's findings and reads (not after an internal
        error in it: that file is analysed again next time)."""
        assert self.cache is not None
        if stale is not None and not stale and records.keys() == set(relevant) and \
                not self.cache.digests_changed:
            return  # nothing analysed, nothing dropped: what is stored stands
        failed = {display for display, _ in self.result.errors}
        stored: dict[str, object] = {}
        for path in relevant:
            if stale is not None and path not in stale:
                stored[path] = records[path]
                continue
            if self._by_path[path].display in failed or path not in self._file_findings:
                continue
            reads = {read: self.cache.digest(read) for read in sorted(self._reads.get(path, ()))}
            stored[path] = {
                "digest": self.cache.digest(path), "settings": self._file_settings(path),
                "reads": reads,
                "findings": [f.to_json(dynamic=True) for f in self._file_findings[path]],
            }
        computed = self._gradchecked if self.project is None else \
            self.project.cache.get("gradchecked")
        if computed is not None and self._gradchecked_seed is None:
            keys, reads = computed
            facts = {**facts, "gradchecked": {
                "keys": sorted(map(list, keys)),
                "reads": {read: self.cache.digest(read) for read in sorted(reads)}}}
        self.cache.store_file_results(key, stored, facts)

    def _judge(self, scans: ScanTable, references: bool,
               gradcheck: bool) -> Relevance:
        """The relevance of every file: from the cache while no file changed,
        updated for the changed files while their scans are the same, else
        judged again."""
        from .relevance import Relevance, judge

        paths = list(self._by_path)
        if self.cache is None:
            scans.take(paths)
            return judge(list(scans.values()), references=references, gradcheck=gradcheck,
                         module_names=self.module_names, jobs=self.jobs, texts=self.texts)
        cache = self.cache
        key = cache.relevance_key(paths, [references, gradcheck])
        stored, stats, unread = cache.relevance(key)
        relevance = None
        try:
            relevance = Relevance.from_json(stored) if stored is not None else None
        except (KeyError, TypeError, ValueError):
            pass  # damaged: judge again
        if relevance is not None:
            changed = [p for p in paths if cache.stat(p) != stats.get(p)]
            # Files that could not be read are read again (to say so again).
            scans.take(changed + [p for p in unread if p in self._by_path])
            if not changed:
                return relevance
            same = len(changed) <= _UPDATE_MAX_FILES and all(
                _same_scan(cache.previous_scan(p, stats.get(p)), scans[p]) for p in changed)
            relevance = relevance.updated([scans[p] for p in changed], self.texts) \
                if same else None
        if relevance is None:
            scans.take(paths)
            relevance = judge(list(scans.values()), references=references, gradcheck=gradcheck,
                              module_names=self.module_names, jobs=self.jobs, texts=self.texts,
                              words=_kept_words(cache))
        cache.store_relevance(key, relevance.to_json(), paths, sorted(scans.unreadable()))
        return relevance

    def _lint(self, scans: ScanTable, paths: list[str], only: set[str] | None = None,
              context: Iterable[str] = ()) -> None:
        """Parse the relevant `paths` and analyse them; with `only`, parse
        those and `context` up front, analyse only those in `only`, and
        parse any other file that matters when a name leads there, as a
        whole run would have (so their findings are a whole run's)."""
        self._checking = only
        self._scans_by_path = scans
        wanted = None if only is None else only | set(context)
        relevant = []
        for path in paths:
            if wanted is None or path in wanted:
                source = self._by_path[path]
                matters = source.explicit or self.relevance.matters(path)
                relevant.append((source, scans[path], matters))
        # Sparse parses skip statements; a syntax error there must still be
        # reported as a whole parse would. Check those files whole, in the
        # background, while the sparse results are analysed. (Unchanged
        # context files were checked by the run that stored their results.)
        check = SyntaxCheck([s for s, _, _ in relevant if self._sparse_candidate(s) and (
            self._checking is None or s.path in self._checking)], self.jobs, self.cache)
        self._errors_before = len(self.result.errors)
        checked = {s.path for s in check.sources}
        self._analyse(relevant)
        broken = check.broken()
        # Files parsed sparsely because a name led there: a whole run checks
        # them whole too (in the background, with the others; the files too
        # large to parse whole are checked piece by piece as they are parsed).
        late = [self._by_path[p] for p, sparse in self._sparse_parsed.items()
                if sparse and p not in checked and self._sparse_candidate(self._by_path[p])]
        broken += SyntaxCheck(late, 1, self.cache).broken()
        self._broken = {s.path for s in broken}
        if any(self._sparse_parsed.get(s.path) for s in broken):
            # Rare: analyse again as the whole parses see it (those files fail).
            self._whole_only |= self._broken
            self._analyse(relevant)
        self.result.findings = sort_findings(
            [finding for findings in self._file_findings.values() for finding in findings])

    def _analyse(self, relevant: list[tuple[SourceInput, FileScan, bool]]) -> None:
        for source, _, _ in relevant:  # from an earlier pass (context files keep theirs)
            if self._checking is None or source.path in self._checking:
                self._file_findings.pop(source.path, None)
                self._reads.pop(source.path, None)
        self._sparse_parsed: dict[str, bool] = {}
        del self.result.errors[self._errors_before:]  # from an earlier pass
        self.result.functions = []
        parsed: list[ParsedFile] = []
        for source, scan, matters in relevant:
            entry = self._parse(source, scan, matters)
            if entry is not None:
                if entry.module is not None and self.prefilter:
                    entry.module.reach = self.relevance.reach.get(source.path, frozenset())
                parsed.append(entry)
        self._in_project = {p.source.path for p in parsed if p.module is not None}
        self.project = Project([p.module for p in parsed if p.module is not None],
                               scan_tree=self.scan_tree,
                               tested_projects=(self.project_roots, self.tested_projects),
                               loader=self,
                               candidates=self.relevance.candidates,
                               lazy=self._checking is not None)
        seed = self._gradchecked_seed
        if seed is not None:
            self.project.cache["gradchecked"] = (
                {(str(path), str(key)) for path, key in seed["keys"]}, frozenset(seed["reads"]))
        for entry in parsed:
            if self._checking is None or entry.source.path in self._checking:
                self._check(entry)

    def _sparse_candidate(self, source: SourceInput) -> bool:
        """Whether `_parse` will try a sparse parse of this file."""
        if not self._may_parse_sparsely(source):
            return False
        try:
            size = os.stat(source.path).st_size
        except OSError:
            return False
        return SPARSE_MIN_BYTES <= size < HUGE_BYTES

    def _may_parse_sparsely(self, source: SourceInput) -> bool:
        """Whether a file large enough may be parsed sparsely: never one named
        (always parsed whole) nor an editor's text (the whole-file syntax
        check reads the disk)."""
        return self.prefilter and not source.explicit and source.text is None

    def _parse(self, source: SourceInput, scan: object, matters: bool) -> ParsedFile | None:
        entry = ParsedFile(source)
        try:
            data = source.read()
            huge = len(data) >= HUGE_BYTES
            if huge or (self._may_parse_sparsely(source) and len(data) >= SPARSE_MIN_BYTES
                        and source.path not in self._whole_only):
                entry.text, entry.module = self._sparse(source, scan, data, huge)
                if huge and entry.text is not None:  # (undecodable: parse_text says so)
                    self._check_piecewise(entry, matters)
                    self._sparse_parsed[source.path] = entry.module is not None
                    return entry
                if entry.module is not None:
                    self._sparse_parsed[source.path] = True
                    return entry
            entry.text, tree, syntax = parse_text(source.display, data)
            if syntax is not None:
                # Only files that can involve Functions are ours to report.
                if "AGF000" in source.codes and matters:
                    entry.findings.append(syntax)
            elif tree is not None:
                entry.module = _module(source.display, source.path, tree, entry.text,
                                       module_names=self.module_names)
                self._whole[source.path] = entry.module
        except Exception as exc:
            self.result.errors.append((source.display, _describe(exc)))
            return None
        return entry

    def _check_piecewise(self, entry: ParsedFile, matters: bool) -> None:
        """The syntax check of a file too large to parse whole, statement
        by statement (see sparse.syntax_error): one that does not parse is
        reported (AGF000) and not analysed, as a smaller one would be."""
        from .sparse import syntax_error

        assert entry.text is not None
        error = syntax_error(entry.text, entry.source.display)
        if error is not None:
            entry.module = None
            if "AGF000" in entry.source.codes and matters:
                entry.findings.append(syntax_finding(entry.source.display, error))

    def _sparse(self, source: SourceInput, scan: object, data: bytes,
                huge: bool) -> tuple[str | None, ModuleInfo | None]:
        """Parse only the statements that can matter (see sparse.py); None
        when the file should be parsed whole instead."""
        from .relevance import statement_keeper
        from .sparse import parse_sparse

        try:
            text = decode_source(data)
        except (UnicodeDecodeError, LookupError, SyntaxError):
            return None, None
        keeper = statement_keeper(self.relevance, source.path, scan.aliases)  # type: ignore[attr-defined]
        tree = parse_sparse(text, keeper, source.display, piecewise=huge,
                            max_fraction=1.0 if huge else 0.5)
        if tree is None:
            return text, None
        return text, _module(source.display, source.path, tree, text, partial=True,
                             module_names=self.module_names)

    def _check(self, entry: ParsedFile) -> None:
        findings = entry.findings
        if entry.module is not None:
            with self.project.reads.frame() as reads:
                self.project.read(entry.module)  # and what deciding its classes read
                try:
                    checked = check_module(entry.module, self.project, entry.source.codes)
                except Exception as exc:
                    self.result.errors.append((entry.source.display, _describe(exc)))
                    checked = []
            reads.discard(entry.source.path)
            self._reads[entry.source.path] = reads
            findings = findings + filter_findings(checked, entry.text)
            if self.collect_functions and not entry.source.context:
                for fn in self.project.functions_in(entry.module):
                    target = _target(entry.source, fn, self.project)
                    if target is not None:
                        self.result.functions.append(target)
        self._file_findings[entry.source.path] = findings

    # -- ModuleLoader: modules parsed on demand ---------------------------------------
    def load(self, module_name: str, origin_path: str | None = None, *,
             relevant_only: bool = False) -> list[ModuleInfo]:
        """Every file of that module name that this pass did not parse (and,
        with `origin_path`, every file the name reaches through namespace
        packages from there); with `relevant_only`, only files that matter
        (an incremental run did not parse them all up front)."""
        if self._by_last_part is None:
            # By the name's last part, from the path alone: `pkg/ops.py` and
            # `ops/__init__.py` may be `ops`. Only those files are named.
            self._by_last_part = {}
            for source in self.inputs:
                head, filename = os.path.split(source.path)
                if filename.endswith(".py"):
                    last = filename[:-3] if filename != "__init__.py" else \
                        os.path.basename(os.path.abspath(head or os.curdir))
                    self._by_last_part.setdefault(last, []).append(source)
        found = []
        for source in self._by_last_part.get(module_name.rpartition(".")[2], ()):
            if source.path in self._in_project or not (
                    self.module_names(source.path)[0] == module_name if origin_path is None
                    else reachable_as(source.path, module_name, origin_path)):
                continue
            if self._checking is not None and source.path in self._context_paths:
                module = self._parse_context(source)  # as a whole run parses it
            elif relevant_only:
                continue
            else:
                module = self._parse_whole(source)
            if module is not None:
                found.append(module)
        return found

    def _parse_context(self, source: SourceInput) -> ModuleInfo | None:
        """A file that matters, parsed only when an incremental run's
        analysis leads to it, exactly as a whole run would have parsed it."""
        self._in_project.add(source.path)
        if source.path in self._broken_context:
            return None  # it does not parse: a whole run's project lacks it too
        assert self._scans_by_path is not None
        entry = self._parse(source, self._scans_by_path[source.path], True)
        if entry is None or entry.module is None:
            return None
        if self.prefilter:
            entry.module.reach = self.relevance.reach.get(source.path, frozenset())
        return entry.module

    def complete(self, module: ModuleInfo) -> ModuleInfo:
        source = next((s for s in self.inputs if s.display == module.path), None)
        whole = self._parse_whole(source) if source is not None else None
        return whole if whole is not None else module

    def _parse_whole(self, source: SourceInput) -> ModuleInfo | None:
        key = source.path
        if key not in self._whole:
            module = None
            try:
                text, tree, _ = parse_text(source.display, source.read())
                if tree is not None:
                    module = _module(source.display, key, tree, text,
                                     module_names=self.module_names)
            except OSError:
                pass
            self._whole[key] = module
        return self._whole[key]


class SyntaxCheck:
    """Whole-file parses of the files that will be parsed sparsely, only to
    learn which of them do not parse. They run in a worker process beside the
    analysis when there is a spare core, else when asked for. Answers the
    cache knows for a file's current stat are taken from it (a language
    server checks its project's files once, not on every lint)."""

    def __init__(self, sources: list[SourceInput], jobs: int | None,
                 cache: Cache | None = None) -> None:
        self.sources = sources
        self._cache = cache
        self._known: list[SourceInput] = []  # known not to parse
        if cache is not None:
            known = {s.path: cache.parses(s.path) for s in sources}
            self._known = [s for s in sources if known[s.path] is False]
            sources = [s for s in sources if known[s.path] is None]
        # A file Python itself compiled, unchanged since, parses: skip it.
        sources = [s for s in sources if not _compiled_by_this_python(s.path)]
        self._sources = sources
        self._futures: list = []
        self._pool = None
        cores = jobs if jobs is not None else (os.cpu_count() or 1)
        if cores > 1 and len(sources) >= _BACKGROUND_MIN_FILES:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            context = multiprocessing.get_context("fork" if os.name == "posix" else "spawn")
            # One worker per core: they share a core with the analysis at
            # first, and have them all once it is done.
            paths = [s.path for s in sources]
            try:
                self._pool = ProcessPoolExecutor(max_workers=cores, mp_context=context)
                self._futures = [self._pool.submit(_broken_files, paths[i::cores])
                                 for i in range(cores)]
            except OSError:  # no processes to be had: check in this one
                self._pool, self._futures = None, []

    def broken(self) -> list[SourceInput]:
        """The sources whose whole text does not parse."""
        if not self._sources:
            return self._known
        if self._futures:
            try:
                paths = set().union(*(future.result() for future in self._futures))
            finally:
                self._pool.shutdown()  # type: ignore[union-attr]
        else:
            paths = _broken_files([s.path for s in self._sources])
        if self._cache is not None:
            for source in self._sources:
                self._cache.store_parses(source.path, source.path not in paths)
        return self._known + [s for s in self._sources if s.path in paths]


# Fewer files than this are checked in-process: a worker costs more to start.
_BACKGROUND_MIN_FILES = 4


def _compiled_by_this_python(path: str) -> bool:
    """Whether the bytecode cache holds a compilation of this exact file by
    this Python version (the check the import system makes before it trusts
    a .pyc); only the 16-byte header is read, nothing is loaded."""
    import importlib.util

    try:
        with open(importlib.util.cache_from_source(path), "rb") as handle:
            header = handle.read(16)
        info = os.stat(path)
    except (OSError, ValueError, NotImplementedError):
        return False
    if len(header) < 16 or header[:4] != importlib.util.MAGIC_NUMBER:
        return False
    flags = int.from_bytes(header[4:8], "little")
    if flags & 1:  # hash-based: the header holds a hash of the source
        try:
            with open(path, "rb") as handle:
                return header[8:16] == importlib.util.source_hash(handle.read())
        except OSError:
            return False
    return (flags == 0 and int.from_bytes(header[8:12], "little") == int(info.st_mtime) & 0xFFFFFFFF
            and int.from_bytes(header[12:16], "little") == info.st_size & 0xFFFFFFFF)


def _broken_files(paths: list[str]) -> set[str]:
    broken = set()
    for path in paths:
        try:
            with open(path, "rb") as handle:
                data = handle.read()
        except OSError:
            continue  # reported when the file is read for analysis
        try:
            # Compiling to bytecode skips building Python objects for the tree,
            # so it is faster than ast.parse, and what compiles also parses.
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                compile(decode_source(data), path, "exec", dont_inherit=True)
            continue
        except Exception:
            pass
        _, tree, _ = parse_text(path, data)
        if tree is None:
            broken.add(path)
    return broken


# Every way to define a Function subclass in a module spells this: torch's
# `Function`, `InplaceFunction`, an alias imported `... Function as F`.
FUNCTION_WORD = "Function"


def lint_source(source: str | bytes, path: str = "<string>",
                codes: Iterable[str] | None = None, *, tree: ast.Module | None = None,
                module_name: tuple[str, bool] | None = None,
                context: Sequence[ModuleInfo] = ()) -> list[Finding]:
    """Check one module given as text (tests, editors, flake8/pylint adapters).

    tree: the module's syntax tree when the caller already parsed `source`
    (flake8 hands one over). module_name: (dotted name, is a package) when the
    caller knows it better than the file's location does (pylint does).
    context: other modules of its project (read, never reported)."""
    enabled = frozenset(codes) if codes is not None else default_codes()
    if tree is None:
        if "AGF000" not in enabled and isinstance(source, str) and FUNCTION_WORD not in source:
            return []  # nothing to report, not even a syntax error: skip the parse
        text, tree, syntax = parse_text(path, source)
        if syntax is not None:
            return [syntax] if "AGF000" in enabled else []
    else:
        text = source if isinstance(source, str) else decode_source(source)
    assert tree is not None and text is not None
    if FUNCTION_WORD not in text and not context:
        return []  # a lone module defines no Function without spelling the word
    if module_name is not None:
        module = build_module(path, module_name[0], module_name[1], tree, text)
    else:
        module = _module(path, path, tree, text)
    findings = check_module(module, Project([module, *context]), enabled)
    return sort_findings(filter_findings(findings, text))


def _module(display: str, fs_path: str, tree: ast.Module, text: str | None, *,
            partial: bool = False, module_names: ModuleNamer | None = None) -> ModuleInfo:
    namer = module_names or ModuleNamer()
    name, is_package = namer(fs_path) if fs_path.endswith(".py") else ("__main__", False)
    return build_module(display, name, is_package, tree, text or "", partial=partial,
                        import_root=namer.import_root(fs_path))


def _describe(exc: BaseException) -> str:
    return f"internal error: {type(exc).__name__}: {exc}"
