"""The pylint plugin: pylint.testutils for the checkers, real `pylint` runs
for loading, symbols, enabling and disabling."""
from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import astroid
import pytest
from pylint.testutils import CheckerTestCase, MessageTest

from autograd_lint.core.registry import RULES, TREE_ONLY_CODES, all_rules
from autograd_lint.engine.lint import lint_source
from autograd_lint.integrations import pylint_plugin

from .helpers import leaky_function

BUGGY = "import torch\n\n\n" + leaky_function("Leaky") + textwrap.dedent('''\


    class Legacy(torch.autograd.Function):
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad * 2, None


    def legacy(x):
        return Legacy(x)
    ''')
# BUGGY's findings: AGF105 at line 25 (correctness, on by default); AGF001 at 7
# (pedantic), AGF103 at 16 and AGF303 at 4 and 15 (style) are off by default.


def pylint(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pylint", "--load-plugins",
                           "autograd_lint.pylint_plugin", "--score=n", *args],
                          cwd=cwd, capture_output=True, text=True)


class TestCtxStateChecker(CheckerTestCase):
    CHECKER_CLASS = pylint_plugin.CtxStateChecker

    def test_reports_the_engines_finding_at_its_range(self) -> None:
        module = astroid.parse(BUGGY, module_name="ops")
        [finding] = lint_source(BUGGY, "ops.py", {"AGF001"})  # pedantic: off by default
        forward = module["Leaky"]["forward"]  # pylint's `obj`: Leaky.forward
        with self.assertAddsMessages(MessageTest(
                msg_id="ctx-tensor-attribute", line=7, node=forward, args=(finding.message,),
                col_offset=8, end_line=7, end_col_offset=17), ignore_position=False):
            self.checker.visit_module(module)

    def test_clean_module_adds_nothing(self) -> None:
        clean = BUGGY.replace("ctx.x = x", "ctx.save_for_backward(x)")
        clean = clean.replace("    def forward(ctx, x):\n        return x * 2",
                              "    @staticmethod\n    def forward(ctx, x):\n        return x * 2")
        with self.assertNoMessages():
            self.checker.visit_module(astroid.parse(clean, module_name="ops"))


class TestStructureChecker(CheckerTestCase):
    CHECKER_CLASS = pylint_plugin.StructureChecker

    def test_reports_only_its_own_codes(self) -> None:
        module = astroid.parse(BUGGY, module_name="ops")
        [finding] = lint_source(BUGGY, "ops.py", {"AGF103"})
        [instantiated] = lint_source(BUGGY, "ops.py", {"AGF105"})
        with self.assertAddsMessages(MessageTest(
                msg_id="not-staticmethod", line=finding.line, node=module["Legacy"]["forward"],
                args=(finding.message,),
                col_offset=4, end_line=finding.line, end_col_offset=15), MessageTest(
                msg_id="function-instantiated", line=instantiated.line, node=module,
                args=(instantiated.message,), col_offset=11, end_line=instantiated.line,
                end_col_offset=20),
                ignore_position=False):
            self.checker.visit_module(module)


def test_message_ids_are_stable_and_in_the_external_range() -> None:
    seen: dict[str, str] = {}
    for checker in pylint_plugin.CHECKERS:
        for msgid, (template, symbol, _, options) in checker.msgs.items():
            seen[symbol] = msgid
            if symbol == "ctx-tensor-attribute-intermediate":
                continue  # AGF001 rated a warning, below
            rule = RULES_BY_SYMBOL[symbol]
            assert re.fullmatch(r"[EWC](7[1-5])\d\d", msgid) and 51 <= int(msgid[1:3]) <= 99
            assert msgid[0] == {"error": "E", "warning": "W", "info": "C"}[rule.severity]
            assert msgid[3:] == rule.code[4:] and template == "%s"
            assert options["default_enabled"] is rule.default
    assert seen["ctx-tensor-attribute"] == "E7101" and seen["not-staticmethod"] == "W7203"
    assert seen["ctx-tensor-attribute-intermediate"] == "W7151"
    static = {r.name for r in all_rules() if r.family != "dynamic"}
    tree_only = {RULES[code].name for code in TREE_ONLY_CODES}  # project scans only
    assert set(seen) == static - {"syntax-error", "unused-noqa"} - tree_only | {
        "ctx-tensor-attribute-intermediate"}


RULES_BY_SYMBOL = {rule.name: rule for rule in RULES.values()}


def test_real_pylint_reports_symbols_and_honours_disable(tmp_path: Path) -> None:
    (tmp_path / "ops.py").write_text(BUGGY)
    proc = pylint(tmp_path, "--disable=all", "--enable=ctx-tensor-attribute,not-staticmethod",
                  "ops.py")
    assert proc.returncode != 0
    assert "ops.py:7:8: E7101: `ctx.x` holds input `x`" in proc.stdout
    assert "(ctx-tensor-attribute)" in proc.stdout and "(not-staticmethod)" in proc.stdout

    narrowed = pylint(tmp_path, "--disable=all", "--enable=not-staticmethod", "ops.py")
    assert "(not-staticmethod)" in narrowed.stdout
    assert "ctx-tensor-attribute" not in narrowed.stdout

    (tmp_path / "ops.py").write_text(BUGGY.replace(
        "ctx.x = x", "ctx.x = x  # pylint: disable=ctx-tensor-attribute"))
    inline = pylint(tmp_path, "--disable=all", "--enable=ctx-tensor-attribute", "ops.py")
    assert inline.returncode == 0, inline.stdout

    # autograd-lint's own comment works under every front end.
    (tmp_path / "ops.py").write_text(BUGGY.replace("ctx.x = x", "ctx.x = x  # noqa: AGF001"))
    noqa = pylint(tmp_path, "--disable=all", "--enable=ctx-tensor-attribute", "ops.py")
    assert noqa.returncode == 0, noqa.stdout


def test_severity_and_obj_match_the_command_line(tmp_path: Path) -> None:
    """AGF001 on an intermediate is a warning on the command line: W7151 in
    pylint, not E7101; `obj` names the Function's method."""
    (tmp_path / "ops.py").write_text(textwrap.dedent('''\
        import torch


        class Keep(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x: torch.Tensor):
                y = x * 2
                ctx.y = y
                ctx.x = x
                return y.sin()

            @staticmethod
            def backward(ctx, grad):
                return grad * 2
        '''))
    template = "--msg-template={line}:{msg_id}:{symbol}:{obj}"
    proc = pylint(tmp_path, "--disable=all", "--enable=ctx-tensor-attribute,"
                  "ctx-tensor-attribute-intermediate", template, "ops.py")
    assert proc.stdout.split("\n", 1)[1].split() == [
        "8:W7151:ctx-tensor-attribute-intermediate:Keep.forward",
        "9:E7101:ctx-tensor-attribute:Keep.forward"]
    only_errors = pylint(tmp_path, "--disable=all", "--enable=ctx-tensor-attribute", template,
                         "ops.py")
    assert "W7151" not in only_errors.stdout and "9:E7101" in only_errors.stdout
    cli = subprocess.run([sys.executable, "-m", "autograd_lint", "check", "--isolated",
                          "--no-cache", "--format", "json", "--extend-select", "AGF001", "ops.py"],
                         cwd=tmp_path, capture_output=True, text=True)
    assert '"severity": "warning"' in cli.stdout and '"severity": "error"' in cli.stdout


def test_a_linted_module_shadowing_the_standard_library_is_never_imported(
        tmp_path: Path) -> None:
    """pylint puts the linted folder first on sys.path while it lints: the
    engine's imports must still find the standard library, not the
    repository's own `hashlib.py` (importing it would run its code)."""
    marker = tmp_path / "marker.txt"
    (tmp_path / "hashlib.py").write_text(
        f"import pathlib\npathlib.Path({str(marker)!r}).write_text('imported')\n")
    (tmp_path / "ops.py").write_text(BUGGY)
    proc = pylint(tmp_path, "--disable=all", "--enable=ctx-tensor-attribute", str(tmp_path))
    assert not marker.exists()
    assert "E7101" in proc.stdout and "Traceback" not in proc.stdout + proc.stderr, \
        proc.stdout + proc.stderr


def test_info_rules_need_enabling(tmp_path: Path) -> None:
    (tmp_path / "ops.py").write_text(BUGGY)
    default = pylint(tmp_path, "ops.py")
    assert "(function-instantiated)" in default.stdout
    assert "ctx-style-not-functorch" not in default.stdout
    assert "(ctx-tensor-attribute)" not in default.stdout  # pedantic
    enabled = pylint(tmp_path, "--enable=ctx-style-not-functorch", "ops.py")
    assert "C7403" in enabled.stdout and "(ctx-style-not-functorch)" in enabled.stdout


def test_pylint_lists_the_rules_with_our_names() -> None:
    proc = subprocess.run([sys.executable, "-m", "pylint", "--load-plugins",
                           "autograd_lint.pylint_plugin", "--list-msgs-enabled"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "ctx-tensor-attribute (E7101)" in proc.stdout
    disabled = proc.stdout.split("Disabled messages:")[1]
    assert "builtin-reimplementation (C7402)" in disabled


@pytest.mark.parametrize("rule", [r for r in all_rules() if r.code not in
                                  pylint_plugin.NOT_IN_PYLINT and r.family != "dynamic"],
                         ids=lambda r: r.code)
def test_every_rule_has_a_message(rule) -> None:  # type: ignore[no-untyped-def]
    assert pylint_plugin.message_id(rule) in {
        msgid for checker in pylint_plugin.CHECKERS for msgid in checker.msgs}


# pylint's own messages that autograd-lint silences on Functions, and the same
# messages on other classes, which it keeps.
SIGNATURE_AND_ABSTRACT = ("--disable=all", "--enable=abstract-method,arguments-differ,"
                          "arguments-renamed,signature-differs",
                          "--msg-template={symbol} {obj} {msg}")
FUNCTIONS_PYLINT_MISREADS = textwrap.dedent('''\
    """Functions as torch documents them, and other classes."""
    import abc

    import torch
    from torch import autograd
    from torch.autograd import Function as Fn

    Alias = autograd.Function


    class Cube(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x ** 3

        @staticmethod
        def backward(ctx, grad):
            return grad * 3


    class Split(Fn):
        @staticmethod
        def forward(x):
            return x * 2

        @staticmethod
        def setup_context(ctx, inputs, outputs):
            return None

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

        @staticmethod
        def jvp(ctx, x_t):
            return x_t * 2


    class ByVjp(Alias):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def vjp(ctx, grad):
            return grad

        @staticmethod
        def vmap(info, in_dims, x):
            return x, in_dims[0]


    class Twice(Cube):
        @staticmethod
        def forward(ctx, x, scale):
            return x * scale


    class Legacy(torch.autograd.Function):
        def forward(self, x):
            return x

        def backward(self, grad):
            return grad


    class NoForward(torch.autograd.Function):
        @staticmethod
        def backward(ctx, grad):
            return grad


    class Shape(abc.ABC):
        @abc.abstractmethod
        def area(self):
            """Area."""

        def scale(self, factor):
            return factor


    class Square(Shape):
        def scale(self, size, extra):
            return size + extra


    class Plain:
        def forward(self, x):
            return x

        def jvp(self, x):
            raise NotImplementedError


    class NotAFunction(Plain):
        def forward(self, x, y):
            return x + y
    ''')


def bare_pylint(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """pylint without autograd-lint."""
    return subprocess.run([sys.executable, "-m", "pylint", "--score=n", *args],
                          cwd=cwd, capture_output=True, text=True)


def reported(proc: subprocess.CompletedProcess[str]) -> set[tuple[str, str, str]]:
    """(symbol, obj, the method named) of each message; an abstract-method
    message's obj is the class, the method is in its text."""
    found = set()
    for line in proc.stdout.splitlines():
        if line.startswith("*"):
            continue
        symbol, obj, text = line.split(" ", 2)
        abstract = re.match(r"Method '(\w+)' is abstract", text)
        found.add((symbol, obj, abstract.group(1) if abstract else obj.rsplit(".", 1)[-1]))
    return found


def test_pylints_noise_on_functions_is_silenced_and_kept_elsewhere(tmp_path: Path) -> None:
    (tmp_path / "ops.py").write_text(FUNCTIONS_PYLINT_MISREADS)
    bare = reported(bare_pylint(tmp_path, *SIGNATURE_AND_ABSTRACT, "ops.py"))
    # The noise is real on this pylint: torch's optional methods are
    # "abstract", every forward and backward "differs" from torch's.
    assert {("abstract-method", "Cube", "jvp"), ("abstract-method", "Cube", "setup_context"),
            ("abstract-method", "Cube", "vjp"), ("abstract-method", "Cube", "vmap"),
            ("abstract-method", "ByVjp", "backward"), ("abstract-method", "Twice", "jvp"),
            ("arguments-differ", "Cube.forward", "forward"),
            ("arguments-differ", "Cube.backward", "backward"),
            ("arguments-differ", "Split.jvp", "jvp"), ("arguments-differ", "ByVjp.vmap", "vmap"),
            ("arguments-renamed", "Split.setup_context", "setup_context"),
            ("arguments-differ", "Twice.forward", "forward"),
            ("arguments-differ", "Legacy.forward", "forward")} <= bare
    kept = {("abstract-method", "NoForward", "forward"),  # a Function must define forward
            ("abstract-method", "Square", "area"), ("arguments-differ", "Square.scale", "scale"),
            ("abstract-method", "NotAFunction", "jvp"),
            ("arguments-differ", "NotAFunction.forward", "forward")}
    assert kept <= bare

    proc = pylint(tmp_path, *SIGNATURE_AND_ABSTRACT, "ops.py")
    assert reported(proc) == kept, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr


def test_functions_are_known_by_their_bases_names_where_torch_is_not_found(
        tmp_path: Path) -> None:
    """A `torch` package astroid cannot follow (here, an empty one in the
    linted folder): pylint still compares a Function's forward with its
    parent Function's; the bases' names, aliases followed, tell Functions."""
    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "__init__.py").write_text("")
    (tmp_path / "ops.py").write_text(textwrap.dedent('''\
        import torch
        import torch.autograd as ag
        from torch.autograd import Function as Fn

        Alias = ag.Function


        class Plain:
            def forward(self, x):
                return x


        class NotAFunction(Plain):
            def forward(self, x, y):
                return x + y
        ''') + "".join(textwrap.dedent(f'''\


        class Parent{n}({base}):
            @staticmethod
            def forward(ctx, x):
                return x


        class Child{n}(Parent{n}):
            @staticmethod
            def forward(ctx, x, y):
                return x + y
        ''') for n, base in enumerate(("torch.autograd.Function", "ag.Function", "Fn", "Alias"))))
    bare = reported(bare_pylint(tmp_path, *SIGNATURE_AND_ABSTRACT, "ops.py"))
    assert {("arguments-differ", f"Child{n}.forward", "forward") for n in range(4)} <= bare
    proc = pylint(tmp_path, *SIGNATURE_AND_ABSTRACT, "ops.py")
    assert reported(proc) == {("arguments-differ", "NotAFunction.forward", "forward")}, \
        proc.stdout + proc.stderr


def test_parallel_workers_silence_the_noise_too(tmp_path: Path) -> None:
    """With --jobs, pylint pickles the linter and registers the plugin again
    in each worker."""
    for name in ("first.py", "second.py"):
        (tmp_path / name).write_text(FUNCTIONS_PYLINT_MISREADS)
    proc = pylint(tmp_path, *SIGNATURE_AND_ABSTRACT, "--jobs=2", "first.py", "second.py")
    assert reported(proc) == {("abstract-method", "NoForward", "forward"),
                              ("abstract-method", "Square", "area"),
                              ("arguments-differ", "Square.scale", "scale"),
                              ("abstract-method", "NotAFunction", "jvp"),
                              ("arguments-differ", "NotAFunction.forward", "forward")}
    assert proc.stdout.count("abstract-method") == 2 * 3, proc.stdout + proc.stderr


def test_the_checker_name_turns_every_message_on_or_off(tmp_path: Path) -> None:
    (tmp_path / "ops.py").write_text(BUGGY)
    ours = re.compile(r": [EWC]7[1-5]\d\d: ")
    on = pylint(tmp_path, "ops.py")
    assert ours.search(on.stdout) and "C0114" in on.stdout  # ours and pylint's

    off = pylint(tmp_path, "--disable=autograd-lint", "ops.py")
    assert not ours.search(off.stdout), off.stdout
    assert "C0114" in off.stdout and "unknown" not in (off.stdout + off.stderr).lower()

    only = pylint(tmp_path, "--disable=all", "--enable=autograd-lint",
                  "--msg-template={msg_id} {symbol}", "ops.py")
    ids = {line.split()[0] for line in only.stdout.splitlines() if not line.startswith("*")}
    assert {"E7101", "W7203", "C7403"} <= ids  # info rules too, once named
    assert all(re.fullmatch(r"[EWC]7[1-5]\d\d", msgid) for msgid in ids), only.stdout
    assert {checker.name for checker in pylint_plugin.CHECKERS} == {"autograd-lint"}
