"""pytest plugin: gradcheck every Function, and record the calls tests make.

    pytest --autograd-gradcheck src/            # one gradcheck test per Function under src/
    pytest --autograd-gradcheck src/ -n auto    # spread over cores (pytest-xdist)
    pytest --autograd-record                     # record Function calls for `check --dynamic`

`--autograd-gradcheck` is a flag: the Functions checked are those under the
paths given to pytest (`--autograd-gradcheck-path PATH`, or the ini option
`autograd_gradcheck_paths`, choose others); each custom op there gets an
`opcheck[ns::name]` item (torch.library.opcheck, the compiled comparison).
Each item runs the checks of RULES.md's dynamic rules for one Function or
op in a child process (so a hang is a timeout and a crash is a failure, not
a dead test run); it fails with the AGD findings, and is skipped, with the
reason, when it could not be checked (AGD900).

`--autograd-record` observes `torch.autograd.Function.apply` and custom ops
while the tests run and writes a few distinct calls per Function and op to
recorded-calls.json in the cache directory (or `--autograd-record-file
FILE`); the dynamic mode rebuilds its inputs from them. Registered through
the `pytest11` entry point; nothing happens unless an option is given.
"""
from __future__ import annotations

import os
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:  # loaded by every pytest run: keep the import light
    from ..engine.lint import FunctionTarget

_RECORDER = pytest.StashKey[Any]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("autograd-lint", "gradcheck custom autograd Functions")
    group.addoption("--autograd-gradcheck", action="store_true",
                    help="add one gradcheck test per torch.autograd.Function under the paths "
                         "given to pytest (or --autograd-gradcheck-path)")
    group.addoption("--autograd-gradcheck-path", action="append", default=[], metavar="PATH",
                    help="where to look for Functions instead (repeatable)")
    group.addoption("--autograd-gradcheck-device", default="auto",
                    choices=("auto", "cpu", "cuda"), help="device for those checks")
    group.addoption("--autograd-gradcheck-timeout", type=float, default=60.0,
                    metavar="SECONDS", help="per Function (default: 60)")
    group.addoption("--autograd-record", action="store_true",
                    help="record the calls of every Function for `autograd-lint check "
                         "--dynamic` (recorded-calls.json in the cache directory)")
    group.addoption("--autograd-record-file", metavar="FILE",
                    help="record into this file instead (implies --autograd-record)")
    parser.addini("autograd_gradcheck_paths", type="paths", default=[],
                  help="where --autograd-gradcheck looks for Functions")


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("autograd_gradcheck"):
        # What the machine lacks (torch, CUDA for `cuda`) is one usage error,
        # not a skipped item per Function.
        from ..dynamic.environment import missing_for_dynamic

        missing = missing_for_dynamic(config.getoption("autograd_gradcheck_device"), True)
        if missing is not None:
            raise pytest.UsageError(missing.replace("--dynamic", "--autograd-gradcheck")
                                    .replace("--device", "--autograd-gradcheck-device"))
    file = config.getoption("autograd_record_file")
    if not (config.getoption("autograd_record") or file):
        return
    from ..core.config import ConfigError
    from ..dynamic.recording import Recorder, default_path

    try:
        path = Path(file) if file else default_path(config.rootpath)
    except ConfigError as exc:
        raise pytest.UsageError(f"--autograd-record: {exc}") from None
    recorder = Recorder(path)
    recorder.install()
    config.stash[_RECORDER] = recorder


def pytest_unconfigure(config: pytest.Config) -> None:
    recorder = config.stash.get(_RECORDER, None)
    if recorder is not None:
        recorder.uninstall()
        recorder.save()


@pytest.hookimpl(tryfirst=True)  # before `-k`/`-m` deselect: they see these items too
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config,
                                  items: list[pytest.Item]) -> None:
    if not config.getoption("autograd_gradcheck"):
        return
    paths = config.getoption("autograd_gradcheck_path") or \
        [str(p) for p in config.getini("autograd_gradcheck_paths")] or \
        [arg.split("::", 1)[0] for arg in config.args]
    targets = list(_functions(paths))
    if not targets:
        _say(config, f"--autograd-gradcheck: no custom autograd Function in "
                     f"{', '.join(paths)}; name the folder that defines them "
                     "(`--autograd-gradcheck-path src/`)")
    added = list(_items(session, config, targets))
    _report_collected(config, added)
    items.extend(added)


def _items(session: pytest.Session, config: pytest.Config,
           targets: list[FunctionTarget]) -> Iterator[GradcheckItem]:
    shared = Counter((t.display, t.qualname) for t in targets)
    for target in targets:
        # Two classes of one name in a file: the line tells their tests apart.
        label = target.qualname if shared[target.display, target.qualname] == 1 \
            else f"{target.qualname}@{target.line}"
        if target.op:
            label = target.op
        kind = "opcheck" if target.op else "gradcheck"  # a custom op: torch.library.opcheck
        yield GradcheckItem.from_parent(
            session, name=f"{kind}[{label}]",
            nodeid=f"{_node_path(target.path, config)}::{kind}[{label}]", target=target)


def _report_collected(config: pytest.Config, items: list[GradcheckItem]) -> None:
    """Tell pytest's reporters these items were collected, as a collector's
    report does: its counts ("collected N items", "N selected" after `-k`)
    are made from those reports, not from the final list of items."""
    for item in items:
        item.ihook.pytest_itemcollected(item=item)
    if items:
        config.hook.pytest_collectreport(report=pytest.CollectReport(
            "", "passed", None, items))


def _node_path(path: str, config: pytest.Config) -> str:
    """A node id's path, relative to pytest's rootdir as its own are (with no
    path given, pytest hands plugins absolute ones)."""
    absolute = os.path.abspath(path)
    root = str(config.rootpath)
    if os.path.commonpath([absolute, root]) != root:
        return path
    return Path(os.path.relpath(absolute, root)).as_posix()


def _say(config: pytest.Config, line: str) -> None:
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(line, yellow=True)


def _functions(paths: list[str]) -> Iterator[FunctionTarget]:
    from ..core.files import iter_python_files
    from ..core.registry import DYNAMIC_CODES
    from ..engine.lint import SourceInput, lint_inputs

    inputs = []
    for path in paths:
        if not os.path.exists(path):
            raise pytest.UsageError(f"--autograd-gradcheck: path not found: {path}")
        found = list(iter_python_files(path, lambda *_: False)) if os.path.isdir(path) \
            else [path]
        inputs.extend(SourceInput(p, p, DYNAMIC_CODES, explicit=True) for p in found)
    result = lint_inputs(inputs, functions=True)
    yield from sorted(result.functions, key=lambda t: (t.display, t.line))


class GradcheckFailure(Exception):
    """The dynamic findings of one Function."""


class GradcheckItem(pytest.Item):
    def __init__(self, *, target: FunctionTarget, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.target = target
        self.path = Path(target.path).resolve()

    def runtest(self) -> None:
        from ..core.registry import DYNAMIC_CODES
        from ..dynamic.runner import (
            DEFAULT_MEMORY_LIMIT_MB,
            DynamicOptions,
            ModuleJob,
            outcome_findings,
            run_job,
        )

        target = self.target
        if target.skip_reason is not None:
            pytest.skip(f"not checked: {target.skip_reason}")
        config = self.config
        options = DynamicOptions(device=config.getoption("autograd_gradcheck_device"),
                                 timeout=config.getoption("autograd_gradcheck_timeout"),
                                 memory_limit_mb=DEFAULT_MEMORY_LIMIT_MB)
        job = ModuleJob(target.path, target.display, target.module, target.import_root,
                        [target])
        with tempfile.TemporaryDirectory(prefix="autograd-gradcheck-") as workdir:
            outcome = run_job(job, options, workdir, 0)
        findings, complete = outcome_findings(target, outcome, DYNAMIC_CODES)
        if not complete:
            pytest.skip("; ".join(f.message for f in findings))
        if findings:
            raise GradcheckFailure("\n".join(f"{f.code} [{f.name}] {f.message}"
                                             for f in findings))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException],
                     style: Any = None) -> str:
        if isinstance(excinfo.value, GradcheckFailure):
            return f"{self.target.display}:{self.target.line}: {excinfo.value}"
        return str(super().repr_failure(excinfo, style=style))

    def reportinfo(self) -> tuple[Path, int, str]:
        if self.target.op:
            return self.path, self.target.line - 1, f"opcheck {self.target.op}"
        return self.path, self.target.line - 1, f"gradcheck {self.target.qualname}"
