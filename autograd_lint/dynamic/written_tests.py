"""`coverage --write-tests FILE`: one pytest file with a gradient test for
each Function and custom op it is given (the coverage report's unchecked
ones).

Each module's worker (`worker.py`, under its guardian, with the run's
timeout; nothing of the checked code is imported here) finds what its
test does (`written_plans.py`): the inputs the dynamic mode builds (recorded
calls first, else synthesized), the precision the code computes in, and
the check that fits it. The test is written with those inputs as plain
torch code (shapes, dtypes, seeded value ranges: `written_values.py`), so
that it runs without autograd-lint (Triton kernels on a CPU excepted: the
interpreter's gaps are autograd-lint's to fill). A Function no test can be
written for gets a test that is skipped and says why.

    written = write_tests(targets, "tests/test_gradients.py", recording=None)
    written.written, written.skipped, written.reasons   # 3, 1, {"Foo": "..."}
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import textwrap
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..engine.lint import FunctionTarget
from . import written_template as template
from .runner import DEFAULT_TIMEOUT, DynamicOptions, ModuleJob, job_outcomes

# How a skipped test words its reason: inputs that could not be built (or a
# module that would not import or run), and the rest.
NO_INPUTS = "could not build inputs for"
NO_TEST = "wrote no gradient test for"
LINE = 88


@dataclass(frozen=True)
class WrittenTests:
    """What `write_tests` wrote: the file, its tests that check gradients,
    those that skip, and why each skips (keyed by the Function's qualified
    name or the op's name; `name (path:line)` where two share one)."""

    path: str
    written: int
    skipped: int
    reasons: dict[str, str]


@dataclass(frozen=True)
class _Test:
    label: str
    source: str
    skip: str | None  # why it skips
    triton: bool = False
    device: str | None = None


def write_tests(targets: list[FunctionTarget], destination: str, *,
                recording: dict[str, Any] | None, device: str = "cpu",
                triton_interpreter: bool = True, timeout: float = DEFAULT_TIMEOUT,
                jobs: int = 1) -> WrittenTests:
    """Write one pytest file at `destination` with a test per target (in
    the order given); `device`: where the tests run ("cpu", "cuda", or
    "auto": CUDA when the workers see it); `timeout`: seconds per target
    for finding its inputs. Raises OSError when the file cannot be written."""
    from ..core.files import write_inside_project

    options = DynamicOptions(device=device, timeout=timeout, jobs=jobs,
                             triton_interpreter=triton_interpreter, recording=recording,
                             purpose="plan")
    entries = plan_entries(targets, options)
    labels = _labels(targets)
    names = _test_names(targets)
    tests = [_test(target, labels[i], names[i], entries[i]) for i, target in enumerate(targets)]
    text = render_file(tests, targets, destination, device)
    write_inside_project(destination, text.encode("utf-8"))
    reasons = {t.label: t.skip for t in tests if t.skip is not None}
    return WrittenTests(destination, len(tests) - len(reasons), len(reasons), reasons)


# ---------------------------------------------------------------------------
# Planning, in the workers
# ---------------------------------------------------------------------------
def plan_entries(targets: list[FunctionTarget], options: DynamicOptions
                 ) -> list[dict[str, Any]]:
    """Each target's worker entry (`plan`, or `reason`), in order."""
    jobs: dict[str, ModuleJob] = {}
    for target in targets:
        if target.skip_reason is None:
            jobs.setdefault(target.path, ModuleJob(target.path, target.display, target.module,
                                                   target.import_root, [])
                            ).functions.append(target)
    outcomes = dict(zip(jobs, _run_jobs(list(jobs.values()), options), strict=True))
    entries = []
    for target in targets:
        if target.skip_reason is not None:
            entries.append({"plan": {"skip": target.skip_reason}})
            continue
        outcome = outcomes[target.path]
        entry = outcome.get(target.key)
        if entry is None or entry.get("reason") or "plan" not in entry:
            reason = (entry or {}).get("reason") or outcome.get("__reason__", "no result")
            entry = {"reason": reason}
        entries.append(entry)
    return entries


def _run_jobs(jobs: list[ModuleJob], options: DynamicOptions) -> list[dict[str, Any]]:
    """Each job's outcome, `options.jobs` workers at a time; Ctrl-C stops them all."""
    with contextlib.closing(job_outcomes(jobs, options, "autograd-lint-tests-")) as outcomes:
        return [outcome for _, outcome in outcomes]


# ---------------------------------------------------------------------------
# One test
# ---------------------------------------------------------------------------
def _test(target: FunctionTarget, label: str, name: str, entry: dict[str, Any]) -> _Test:
    plan = entry.get("plan")
    if plan is None:
        return _skipped(target, label, name, NO_INPUTS, entry.get("reason") or "no result")
    if plan.get("skip"):
        return _skipped(target, label, name, NO_TEST, plan["skip"])
    if entry.get("context"):
        return _skipped(target, label, name, NO_TEST, "it runs here only with "
                        f"{'; '.join(entry['context'])}, which a test does not set up")
    if not plan.get("by_name") or not _dotted_name(target.module):
        return _skipped(target, label, name, NO_TEST, f"its module is not importable as "
                        f"`{target.module}` (the dynamic mode loaded the file itself)")
    return _Test(label, _checking_test(target, label, name, plan), None,
                 triton=bool(plan.get("triton")), device=plan.get("device"))


def _skipped(target: FunctionTarget, label: str, name: str, phrase: str, reason: str) -> _Test:
    message = f"autograd-lint {phrase} {label}: {reason}"
    pieces = textwrap.wrap(message, LINE - 12, drop_whitespace=False, break_long_words=False,
                           break_on_hyphens=False) or [""]
    source = "\n".join([f"def {name}() -> None:",
                        _docstring(f"{label}, {target.display}:{target.line}."),
                        "    pytest.skip(", *(f"        {piece!r}" for piece in pieces),
                        "    )"])
    return _Test(label, source, reason)


def _checking_test(target: FunctionTarget, label: str, name: str, plan: dict[str, Any]) -> str:
    callee, imports = _callee(target, plan)
    imports += [line for line in plan.get("imports", []) if line not in imports]
    lines = [f"def {name}() -> None:",
             _docstring(f"{label}, {target.display}:{target.line}: {plan['check']}, on "
                        f"{plan['describe']}."),
             *(f"    {line}" for line in imports), "",
             "    torch.manual_seed(0)", "    inputs = ("]
    lines += [f"        {source},  # {argument}" for argument, source in plan["arguments"]]
    lines.append("    )")
    if plan.get("reason"):
        lines += _comment(plan["reason"])
    if plan["kind"] == "gradcheck":
        lines.append(_gradcheck_call(callee, plan))
    elif plan["kind"] == "reference":
        lines += _reference_lines(target, callee, plan)
    if plan.get("op"):
        lines += _opcheck_lines(callee, plan)
    return "\n".join(lines)


def _comment(text: str) -> list[str]:
    return textwrap.wrap(text, LINE - 6, initial_indent="    # ", subsequent_indent="    # ",
                         break_long_words=False, break_on_hyphens=False)


def _callee(target: FunctionTarget, plan: dict[str, Any]) -> tuple[str, list[str]]:
    """What the test calls, and the imports that bring it."""
    if plan.get("op"):
        namespace, op_name, overload = plan["op"]
        return f"torch.ops.{namespace}.{op_name}.{overload}", \
            [f"import {target.module}  # noqa: F401 (it registers the op)"]
    top = target.qualname.split(".")[0]
    return f"{target.qualname}.apply", [f"from {target.module} import {top}"]


def _gradcheck_call(callee: str, plan: dict[str, Any]) -> str:
    arguments = [callee, "inputs"]
    if plan.get("clone_inputs"):
        arguments.append("clone_inputs=True")
    arguments += [f"{key}={value!r}" for key, value in plan["tolerances"].items()]
    return _call("_gradcheck", arguments)


def _reference_lines(target: FunctionTarget, callee: str, plan: dict[str, Any]) -> list[str]:
    """Outputs, then gradients for the same random incoming gradients,
    against the reference's in float64 (reference.py's check)."""
    reference = f"{target.qualname}.{plan['reference']}"
    tolerance = repr(plan["tolerance"])
    return [
        "    wide = _in_float64(inputs)",
        f"    outputs = _floating({callee}(*inputs), requiring_grad=True)",
        f"    expected = _floating({reference}(*wide))",
        f'    _assert_near(outputs, expected, {tolerance}, "output")',
        "    grads = _random_like(expected)",
        "    got = torch.autograd.grad(outputs, _leaves(inputs),",
        "                              [g.to(o.dtype) for g, o in zip(grads, outputs)], "
        "allow_unused=True)",
        "    want = torch.autograd.grad(expected, _leaves(wide), grads, allow_unused=True)",
        f'    _assert_near(got, want, {tolerance}, "gradient")']


def _opcheck_lines(callee: str, plan: dict[str, Any]) -> list[str]:
    tests = plan.get("opcheck")
    arguments = [callee, "inputs"] + ([f"test_utils={tuple(tests)!r}"] if tests else [])
    comment = "The op's registrations (schema, autograd, fake, compiled), as " \
        "`torch.library.opcheck` tests them" + \
        (": a run under Triton's interpreter cannot be traced." if tests and
         "test_faketensor" not in tests else
         ": a random op's compiled run differs from its eager one." if tests else ".")
    return _comment(comment) + [_call("torch.library.opcheck", arguments)]


def _call(function: str, arguments: list[str]) -> str:
    """`    function(a, b, ...)`, wrapped under its first argument past the line's end."""
    line = f"    {function}({', '.join(arguments)})"
    if len(line) <= LINE:
        return line
    indent = " " * (len(function) + 5)
    wrapped = textwrap.wrap(", ".join(arguments), LINE - len(indent) - 1,
                            break_long_words=False, break_on_hyphens=False)
    return f"    {function}(" + f"\n{indent}".join(wrapped) + ")"


def _docstring(text: str) -> str:
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    text = text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    wrapped = textwrap.wrap(text, LINE - 7, break_long_words=False, break_on_hyphens=False)
    if len(wrapped) == 1:
        return f'    """{wrapped[0]}"""'
    return '    """' + "\n    ".join(wrapped) + '\n    """'


def _dotted_name(module: str) -> bool:
    import keyword

    return all(part.isidentifier() and not keyword.iskeyword(part) for part in module.split("."))


# ---------------------------------------------------------------------------
# Names
# ---------------------------------------------------------------------------
def _labels(targets: list[FunctionTarget]) -> list[str]:
    """The name each target is reported by: its qualified name (an op's
    name), with its place where two targets share one."""
    plain = [t.op or t.qualname for t in targets]
    shared = Counter(plain)
    return [label if shared[label] == 1 else f"{label} ({t.display}:{t.line})"
            for label, t in zip(plain, targets, strict=True)]


def _test_names(targets: list[FunctionTarget]) -> list[str]:
    names: list[str] = []
    for target in targets:
        base = "test_" + _identifier(f"op_{target.op.lstrip(':')}" if target.op
                                     else target.qualname)
        name = base
        if name in names:
            name = f"{base}_line{target.line}"
        number = 2
        while name in names:
            name = f"{base}_line{target.line}_{number}"
            number += 1
        names.append(name)
    return names


def _identifier(text: str) -> str:
    text = re.sub(r"\W+", "_", text.replace("::", "_").replace(".", "_"))
    return text.strip("_") or "function"


# ---------------------------------------------------------------------------
# The file
# ---------------------------------------------------------------------------
def render_file(tests: list[_Test], targets: Iterable[FunctionTarget], destination: str,
                device: str) -> str:
    """The whole test file."""
    chosen = next((t.device for t in tests if t.device), None) or \
        ("cpu" if device == "auto" else device)
    triton = chosen == "cpu" and any(t.triton for t in tests)
    skipped = sum(t.skip is not None for t in tests)
    count = f"{len(tests)} test{'' if len(tests) == 1 else 's'}, {skipped} skipped"
    parts = [template.HEADER.format(count=count,
                                    triton_needs=template.TRITON_NEEDS if triton else "")]
    roots = _import_roots(targets, destination)
    if roots:
        parts.append(template.IMPORT_ROOTS.format(
            roots="(" + ", ".join(_string(root) for root in roots) + ",)"))
    if triton:
        parts.append(template.TRITON)
    parts.append(template.TORCH.format(device=_string(chosen)))
    if chosen.startswith("cuda"):
        parts.append(template.CUDA_ONLY)
    body = "\n\n\n".join(t.source for t in tests)
    parts.append(template.helpers(body))
    return "".join(parts) + ("\n\n" + body + "\n" if body else "")


def _string(text: str) -> str:
    """A double-quoted Python literal of the text."""
    return json.dumps(text, ensure_ascii=False)


def _import_roots(targets: Iterable[FunctionTarget], destination: str) -> list[str]:
    """Each target's import root, relative to the test file's folder where
    they share a folder below the file system's root."""
    folder = os.path.dirname(os.path.abspath(destination))
    roots: list[str] = []
    for target in targets:
        root = os.path.abspath(target.import_root)
        try:
            common = os.path.commonpath([root, folder])
        except ValueError:  # another drive
            common = ""
        shown = os.path.relpath(root, folder) if common and \
            os.path.dirname(common) != common else root
        if shown not in roots:
            roots.append(shown)
    return roots
