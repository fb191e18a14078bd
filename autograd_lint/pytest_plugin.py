"""pytest plugin: one test per Function, gradchecked by the dynamic mode.

    pytest --autograd-gradcheck src/            # every Function under src/
    pytest --autograd-gradcheck src/ -n auto    # spread over cores (pytest-xdist)

Each item runs the checks of RULES.md's dynamic rules for one Function in a
child process (so a hang is a timeout and a crash is a failure, not a dead
test run) and fails with the AGD findings, AGD900 (could not be checked)
included. Registered through the `pytest11` entry point; nothing happens
unless the option is given.
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
    from .engine import FunctionTarget


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("autograd-lint", "gradcheck custom autograd Functions")
    group.addoption("--autograd-gradcheck", action="append", default=[], metavar="PATH",
                    help="collect one gradcheck test per torch.autograd.Function under PATH")
    group.addoption("--autograd-gradcheck-device", default="auto",
                    choices=("auto", "cpu", "cuda"), help="device for those checks")
    group.addoption("--autograd-gradcheck-timeout", type=float, default=60.0,
                    metavar="SECONDS", help="per Function (default: 60)")


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config,
                                  items: list[pytest.Item]) -> None:
    paths = config.getoption("autograd_gradcheck")
    if not paths:
        return
    targets = list(_functions(paths))
    shared = Counter((t.display, t.qualname) for t in targets)
    for target in targets:
        # Two classes of one name in a file: the line tells their tests apart.
        label = target.qualname if shared[target.display, target.qualname] == 1 \
            else f"{target.qualname}@{target.line}"
        items.append(GradcheckItem.from_parent(
            session, name=f"gradcheck[{label}]",
            nodeid=f"{target.display}::gradcheck[{label}]", target=target))


def _functions(paths: list[str]) -> Iterator[FunctionTarget]:
    from .engine import SourceInput, lint_inputs
    from .files import iter_python_files
    from .registry import DYNAMIC_CODES

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
        from .dynamic.runner import (
            DEFAULT_MEMORY_LIMIT_MB,
            DynamicOptions,
            ModuleJob,
            outcome_findings,
            run_job,
        )
        from .registry import DYNAMIC_CODES

        config = self.config
        options = DynamicOptions(device=config.getoption("autograd_gradcheck_device"),
                                 timeout=config.getoption("autograd_gradcheck_timeout"),
                                 memory_limit_mb=DEFAULT_MEMORY_LIMIT_MB)
        target = self.target
        job = ModuleJob(target.path, target.display, target.module, target.import_root,
                        [target])
        with tempfile.TemporaryDirectory(prefix="autograd-gradcheck-") as workdir:
            outcome = run_job(job, options, workdir, 0)
        findings, _ = outcome_findings(target, outcome, DYNAMIC_CODES)
        if findings:
            raise GradcheckFailure("\n".join(f"{f.code} [{f.name}] {f.message}"
                                             for f in findings))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException],
                     style: Any = None) -> str:
        if isinstance(excinfo.value, GradcheckFailure):
            return f"{self.target.display}:{self.target.line}: {excinfo.value}"
        return str(super().repr_failure(excinfo, style=style))

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, self.target.line - 1, f"gradcheck {self.target.qualname}"
