"""The parent side of the dynamic mode: one child process per module, with a
timeout, a few at a time; results become AGD findings and static findings
covered by a check get `confirmed`. Each worker runs under a guardian
(`guardian.py`) that ends whatever the checked code starts, in a scratch
folder; Ctrl-C stops them all (`Running`).

Nothing here imports torch or the checked code: the children do.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any, TextIO

from ..core.findings import Finding
from ..core.registry import DYNAMIC_CODES, RULES
from ..engine.lint import FunctionTarget

# Which dynamic checks settle which static rules (RULES.md, "confirmed").
COVERED_BY: dict[str, frozenset[str]] = {
    "AGF001": frozenset({"AGD006"}),
    "AGF005": frozenset({"AGD007"}),
    "AGF006": frozenset({"AGD005"}),
    "AGF007": frozenset({"AGD011"}),
    "AGF101": frozenset({"AGD003"}),
    "AGF102": frozenset({"AGD003"}),
    "AGF107": frozenset({"AGD003", "AGD013"}),
    "AGF108": frozenset({"AGD009"}),
    "AGF109": frozenset({"AGD008"}),
    "AGF114": frozenset({"AGD003"}),
    "AGF201": frozenset({"AGD010"}),
    "AGF204": frozenset({"AGD002"}),
    "AGF205": frozenset({"AGD003"}),
    "AGF209": frozenset({"AGD003"}),
}

DEFAULT_TIMEOUT = 60.0
# Address space a CPU worker's checked code may add to what importing torch
# mapped (about 0.7 GB for the CPU build, far more for a CUDA build): a module
# that allocates without bound fails with MemoryError instead of taking the
# machine down. CUDA workers get no limit.
DEFAULT_MEMORY_LIMIT_MB = 8192
# Seconds a guardian asked to stop (timeout, Ctrl-C) has to clear its tree.
STOP_SECONDS = 10.0


@dataclass(frozen=True)
class DynamicOptions:
    device: str = "auto"  # auto | cpu | cuda
    timeout: float = DEFAULT_TIMEOUT
    jobs: int = 1
    memory_limit_mb: int | None = DEFAULT_MEMORY_LIMIT_MB
    progress: bool = False
    triton_interpreter: bool = True  # on CPU, run Triton kernels through its interpreter
    recording: dict[str, Any] | None = None  # recorded calls (see recording.py)
    # "check": the dynamic checks; "plan": what a written test does
    # (`coverage --write-tests`, written_tests.py), nothing checked.
    purpose: str = "check"


@dataclass
class ModuleJob:
    path: str
    display: str
    module: str
    import_root: str
    functions: list[FunctionTarget]
    # By target key: the lines of its static findings a probe would confirm
    # (the worker records which of them the checks reach).
    watch: dict[str, list[int]] = field(default_factory=dict)


@dataclass(frozen=True)
class Probed:
    """What the checks of one Function ran: the codes whose probes could
    see their defect, and the watched lines the checked inputs reached."""

    codes: frozenset[str] = frozenset()
    lines: frozenset[int] = frozenset()


@dataclass
class DynamicResult:
    findings: list[Finding]
    checked: list[FunctionTarget]  # the Functions checked to the end
    probed: dict[str, Probed] = field(default_factory=dict)  # by target key

    def owner(self, finding: Finding) -> FunctionTarget | None:
        """The checked Function a static finding is about (see `owner_of`)."""
        return owner_of(finding, self.checked)


def owner_of(finding: Finding, functions: Iterable[FunctionTarget]) -> FunctionTarget | None:
    """The Function a static finding is about: same file and class name, the
    innermost class whose lines hold the finding (two classes may share a
    name in one file)."""
    owners = [t for t in functions if t.display == finding.path and
              t.name == finding.function and t.line <= finding.line <= t.end_line]
    return max(owners, key=lambda t: t.line, default=None)


def plan_jobs(functions: list[FunctionTarget],
              codes_for: Callable[[str], frozenset[str]]) -> list[ModuleJob]:
    """One job per module whose files have a dynamic rule selected."""
    jobs: dict[str, ModuleJob] = {}
    for target in functions:
        if not codes_for(target.path) & DYNAMIC_CODES:
            continue
        job = jobs.setdefault(target.path, ModuleJob(target.path, target.display, target.module,
                                                     target.import_root, []))
        job.functions.append(target)
    return list(jobs.values())


def run_dynamic(functions: list[FunctionTarget], codes_for: Callable[[str], frozenset[str]],
                options: DynamicOptions, progress_stream: TextIO | None = None,
                static: Iterable[Finding] = ()) -> DynamicResult:
    """The dynamic checks of `functions`; `static` are the run's static
    findings, whose lines the workers watch when a probe would confirm them."""
    findings: list[Finding] = []
    for target in functions:
        if target.skip_reason is not None and codes_for(target.path) & DYNAMIC_CODES:
            findings.extend(findings_for(target, [{"code": "AGD900",
                                                   "reason": target.skip_reason}],
                                         codes_for(target.path)))
    jobs = plan_jobs([t for t in functions if t.skip_reason is None], codes_for)
    _watch(jobs, static)
    note = scale_note(sum(len(job.functions) for job in jobs), options)
    if note is not None and progress_stream is not None:
        progress_stream.write(f"autograd-lint: note: {note}\n")
    checked: list[FunctionTarget] = []
    probed: dict[str, Probed] = {}
    progress = _Progress(len(jobs), progress_stream if options.progress else None)
    with contextlib.closing(job_outcomes(jobs, options, "autograd-lint-dynamic-")) as outcomes:
        for job, outcome in outcomes:
            progress.step(job.display)
            codes = codes_for(job.path)
            for target in job.functions:
                found, complete = outcome_findings(target, outcome, codes)
                findings.extend(found)
                if complete:
                    checked.append(target)
                    entry = outcome.get(target.key) or {}
                    probed[target.key] = Probed(frozenset(entry.get("probed", ())),
                                                frozenset(entry.get("reached", ())))
    progress.done()
    return DynamicResult(findings, checked, probed)


def _watch(jobs: list[ModuleJob], static: Iterable[Finding]) -> None:
    """Each job's lines to watch: those of the static findings of its
    Functions that a probe would confirm."""
    for finding in static:
        if finding.code not in COVERED_BY:
            continue
        for job in jobs:
            owner = owner_of(finding, job.functions)
            if owner is not None:
                job.watch.setdefault(owner.key, []).append(finding.line)


# A run whose Functions could take longer than this (each its whole timeout)
# on its jobs says how to spread them wider.
LONG_RUN_SECONDS = 1800.0


def scale_note(functions: int, options: DynamicOptions) -> str | None:
    """What to say when `functions` may take longer to check than a run should
    (each up to the timeout, `options.jobs` at a time); None when they fit."""
    jobs = max(1, options.jobs)
    rounds = -(-functions // jobs)
    if rounds * options.timeout <= LONG_RUN_SECONDS:
        return None
    minutes = rounds * options.timeout / 60
    return (f"{functions} Functions on {jobs} job{'s' if jobs > 1 else ''} can take up to "
            f"{minutes:.0f} minutes ({options.timeout:g} s each at most); to spread them "
            "over more cores or GPUs, run them as pytest items with pytest-xdist: "
            "`pytest --autograd-gradcheck -n auto` (one GPU per worker)")


def job_outcomes(jobs: list[ModuleJob], options: DynamicOptions,
                 prefix: str) -> Iterator[tuple[ModuleJob, dict[str, Any]]]:
    """Each job with its outcome, in order, `options.jobs` workers at a time
    (their files in a temporary folder whose name starts with `prefix`). Ctrl-C, or the
    caller closing this early, stops every worker now and starts no other
    (the command exits 130)."""
    running = Running()
    with tempfile.TemporaryDirectory(prefix=prefix) as workdir:
        pool = ThreadPoolExecutor(max_workers=max(1, options.jobs))
        try:
            futures = [pool.submit(run_job, job, options, workdir, n, running)
                       for n, job in enumerate(jobs)]
            for job, future in zip(jobs, futures, strict=True):
                yield job, future.result()
        except BaseException:
            running.stop_all()
            pool.shutdown(wait=True, cancel_futures=True)
            raise
        pool.shutdown()


def confirm(static: list[Finding], result: DynamicResult) -> list[Finding]:
    """Mark each static finding a dynamic check covers: confirmed (true) when
    the check found its defect; not (false) when the check ran and the
    checked inputs reached the finding's line; otherwise not probed (None:
    an earlier failure stopped the check, or the inputs never took the
    finding's branch)."""
    # Dynamic findings point at their class's line: that identifies the class.
    by_function: dict[tuple[str, int], set[str]] = {}
    for finding in result.findings:
        by_function.setdefault((finding.path, finding.line), set()).add(finding.code)
    marked = []
    for finding in static:
        covering = COVERED_BY.get(finding.code)
        owner = result.owner(finding) if covering is not None else None
        if covering is None or owner is None:
            marked.append(finding)
            continue
        found = by_function.get((owner.display, owner.line), set())
        probed = result.probed.get(owner.key, Probed())
        if covering & found:
            confirmed: bool | None = True
        elif covering & probed.codes and finding.line in probed.lines:
            confirmed = False
        else:
            confirmed = None
        marked.append(replace(finding, confirmed=confirmed))
    return marked


def outcome_findings(target: FunctionTarget, outcome: dict[str, Any],
                     codes: frozenset[str]) -> tuple[list[Finding], bool]:
    """A Function's findings from its worker's outcome, and whether it was
    checked to the end (False: AGD900 says why not)."""
    entry = outcome.get(target.key)
    if entry is None or entry.get("reason"):
        reason = (entry or {}).get("reason") or outcome.get("__reason__", "no result")
        return findings_for(target, [{"code": "AGD900", "reason": reason}], codes), False
    return findings_for(target, entry.get("findings", []), codes,
                        entry.get("context") or ()), True


def findings_for(target: FunctionTarget, raw: list[dict[str, Any]],
                 codes: frozenset[str], context: Iterable[str] = ()) -> list[Finding]:
    """Findings from a worker's raw ones; `context` says how the module was
    run where that differs from a user's run (a parent package left out,
    CUDA queries stood in for), so that each finding can be judged."""
    context = tuple(context)
    found = []
    name = target.name
    for item in raw:
        code = item.get("code")
        if code not in RULES or code not in codes:
            continue
        rule = RULES[code]
        fields = {k: v for k, v in item.items() if k != "code"}
        try:
            message = rule.format(**fields)
        except (KeyError, IndexError):
            message = rule.summary
        if item.get("note"):  # which path: "with `in_place=True`"
            message = f"{message} ({item['note']})"
        if context:
            message = f"{message} [{'; '.join(context)}]"
        found.append(Finding(path=target.display, line=target.line, column=0, code=code,
                             name=rule.name, severity=rule.severity,
                             message=f"{name}: {message}", function=name,
                             end_line=target.line, end_column=None))
    return found


def run_job(job: ModuleJob, options: DynamicOptions, workdir: str,
            number: int, running: Running | None = None) -> dict[str, Any]:
    """Run one module's worker; returns {target key: entry}, plus `__reason__`
    when the worker died. The worker runs under its guardian (`guardian.py`)
    in a scratch folder of its own, removed afterwards; `running` holds the
    run's guardians so that Ctrl-C stops them all."""
    request = os.path.join(workdir, f"request{number}.json")
    result = os.path.join(workdir, f"result{number}.json")
    status = os.path.join(workdir, f"status{number}.json")
    log = os.path.join(workdir, f"log{number}.txt")
    _write_request(job, options, request)
    worker = [sys.executable, "-m", "autograd_lint.dynamic.worker", request, result]
    command = [sys.executable, "-m", "autograd_lint.dynamic.guardian", str(os.getpid()),
               status, "--", *worker] if hasattr(os, "fork") else worker
    # The budget is per Function: a module of three kernels gets three.
    limit = options.timeout * max(1, len(job.functions))
    scratch = tempfile.mkdtemp(prefix="autograd-lint-scratch-")
    try:
        reason = _run_guarded(command, log, scratch, limit, options.timeout, status,
                              running or Running())
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return _outcome(job, _read(result), reason)


def _write_request(job: ModuleJob, options: DynamicOptions, request: str) -> None:
    functions = []
    for target in job.functions:
        spec = target.to_json()
        if options.recording:
            from .recording import calls_for, calls_for_op

            spec["recorded"] = calls_for_op(options.recording, target.op) if target.op else \
                calls_for(options.recording, target.module, target.qualname, target.line,
                          target.end_line)
        if job.watch.get(target.key):
            spec["watch"] = sorted(set(job.watch[target.key]))
        functions.append(spec)
    with open(request, "w", encoding="utf-8") as handle:
        json.dump({"module": job.module, "path": os.path.abspath(job.path),
                   # absolute: the worker's working directory is a scratch folder
                   "import_root": os.path.abspath(job.import_root), "device": options.device,
                   "memory_limit_mb": options.memory_limit_mb,  # CPU workers only
                   "triton_interpreter": options.triton_interpreter,
                   "timeout": options.timeout,  # per Function: the extra probes fit in it
                   "purpose": options.purpose,
                   "functions": functions}, handle)


def _run_guarded(command: list[str], log: str, scratch: str, limit: float, timeout: float,
                 status: str, running: Running) -> str | None:
    """Run the guardian to its end; why the worker did not finish, or None."""
    with open(log, "wb") as output:
        process = running.start(command, stdout=output, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=_worker_environment(),
                                cwd=scratch, start_new_session=True)
    if process is None:
        return "the run was interrupted"
    try:
        code = process.wait(timeout=limit)
    except subprocess.TimeoutExpired:
        _stop(process)
        return f"timed out after {limit:g} s ({timeout:g} s per Function, --timeout)"
    except BaseException:  # Ctrl-C in the calling thread (the pytest plugin's item)
        _stop(process)
        raise
    finally:
        running.finished(process)
    ended = _read(status)
    if isinstance(ended.get("shield"), int):
        return _parent_reason(ended["shield"])
    code = ended["worker"] if isinstance(ended.get("worker"), int) else code
    return _exit_reason(code, log) if code != 0 else None


def _worker_environment() -> dict[str, str]:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    if env.get("PYTHONPATH"):
        # The worker runs in a scratch folder: relative entries still mean here.
        env["PYTHONPATH"] = os.pathsep.join(os.path.abspath(entry or os.curdir)
                                            for entry in env["PYTHONPATH"].split(os.pathsep))
    return env


def _outcome(job: ModuleJob, data: dict[str, Any], reason: str | None) -> dict[str, Any]:
    outcome: dict[str, Any] = dict(data.get("functions", {}))
    if data.get("module_error"):
        outcome = {t.key: {"reason": data["module_error"]} for t in job.functions}
    elif reason is None and data == {}:
        reason = "the worker wrote no result"
    if reason is not None:
        outcome["__reason__"] = reason
        # The Function being checked when it died did not finish.
        for key, entry in list(outcome.items()):
            if key != "__reason__" and isinstance(entry, dict) and \
                    entry.get("inputs") is None and not entry.get("reason"):
                entry["reason"] = reason
    return outcome


class Running:
    """The guardians of a run's jobs: `stop_all` (Ctrl-C) stops each, and no
    job starts one after it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._processes: set[subprocess.Popen[bytes]] = set()
        self._stopped = False

    def start(self, command: list[str], **kwargs: Any) -> subprocess.Popen[bytes] | None:
        with self._lock:
            if self._stopped:
                return None
            process = subprocess.Popen(command, **kwargs)
            self._processes.add(process)
            return process

    def finished(self, process: subprocess.Popen[bytes]) -> None:
        with self._lock:
            self._processes.discard(process)

    def stop_all(self) -> None:
        with self._lock:
            self._stopped = True
            processes = list(self._processes)
        for process in processes:  # all asked first: they clear their trees at once
            _ask_to_stop(process)
        for process in processes:
            _stop(process)


def _ask_to_stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM: the guardian kills everything the check started, then exits."""
    try:
        process.send_signal(signal.SIGTERM)
    except OSError:
        pass


def _stop(process: subprocess.Popen[bytes]) -> None:
    _ask_to_stop(process)
    try:
        process.wait(timeout=STOP_SECONDS)
        return
    except subprocess.TimeoutExpired:
        pass
    try:  # not reaped yet: its group id cannot be anyone else's
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        process.kill()
    process.wait()


def _parent_reason(code: int) -> str:
    """The shield (the worker's parent) died before the worker's end was known."""
    how = f"killed by {_signal_name(-code)}" if code < 0 else f"ended with status {code}"
    return f"the worker's parent process was {how} (does the checked code signal " \
           "`os.getppid()`?)"


def _signal_name(number: int) -> str:
    return signal.Signals(number).name if number in signal.Signals._value2member_map_ \
        else str(number)


def _exit_reason(status: int, log: str) -> str:
    if status < 0:
        name = _signal_name(-status)
        hint = " (out of memory?)" if -status == signal.SIGKILL else ""
        return f"the worker was killed by {name}{hint}"
    tail = _tail(log)
    return f"the worker exited with status {status}" + (f": {tail}" if tail else "")


def _tail(log: str) -> str:
    try:
        with open(log, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - 2000))
            lines = handle.read().decode("utf-8", "replace").strip().splitlines()
    except OSError:
        return ""
    return lines[-1][:300] if lines else ""


def _read(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


class _Progress:
    """`[3/10] path` on one terminal line, rewritten as modules finish."""

    def __init__(self, total: int, stream: TextIO | None) -> None:
        self.total = total
        self.count = 0
        self.stream = stream

    def step(self, label: str) -> None:
        self.count += 1
        if self.stream is not None:
            self.stream.write(f"\r\x1b[2K[{self.count}/{self.total}] {label}"[:200])
            self.stream.flush()

    def done(self) -> None:
        if self.stream is not None and self.total:
            self.stream.write("\r\x1b[2K")
            self.stream.flush()
