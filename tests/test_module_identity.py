"""Every file and every class definition keeps its own identity.

Two files may claim one module name (projects side by side, test folders
without `__init__.py`), and a name may be bound to two classes in one scope
(`class Func` twice in one test). Each file's findings stay on that file, each
class is analysed, and imports resolve the way Python would from the
importing file. Every scenario runs with and without the prefilter, with one
and two jobs, from a cold and a warm cache, and with its files padded past
the size where sparse parsing starts.
"""
from __future__ import annotations

import json
import textwrap
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autograd_lint.cli.entry import main
from autograd_lint.core.files import iter_python_files
from autograd_lint.core.registry import default_codes
from autograd_lint.engine.lint import SPARSE_MIN_BYTES, SourceInput, lint_inputs

from .helpers import expectations, forbid_analysis

# -- scenarios: files, with the findings each must get marked `# expect:` -----------
FLAT_A = '''\
import torch
from torch.autograd import Function


class F(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.x = x  # expect: AGF001
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * 2
'''

FLAT_B = '''\
# A second project's module of the same name,
# with a different Function F
# at different lines.
import torch
from torch.autograd import Function


class F(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        g.mul_(2)  # expect: AGF006
        return g
'''

TWO_DIRECTORIES = {"a/pkg/ce.py": FLAT_A, "b/pkg/ce.py": FLAT_B}

TWO_PACKAGES = {
    "a/pkg/__init__.py": "",
    "a/pkg/ce.py": FLAT_A,
    "a/main.py": '''\
        from pkg.ce import F

        layer = F(2)  # expect: AGF105
        ''',
    "b/pkg/__init__.py": "from .ce import F as F\n",
    "b/pkg/ce.py": FLAT_B,
    "b/main.py": '''\
        import torch
        from pkg import F

        y = F.apply(torch.ones(2))
        ''',
}

TEST_FOLDERS = {
    "one/tests/test_ops.py": '''\
        import torch
        from torch.autograd import Function, gradcheck


        class Scale(Function):
            @staticmethod
            def forward(ctx, x):
                ctx.x = x  # expect: AGF001
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g * 2


        def test_scale():
            x = torch.randn(3, dtype=torch.double, requires_grad=True)
            assert gradcheck(Scale.apply, (x,))
        ''',
    "two/tests/test_ops.py": '''\
        import torch
        from torch.autograd import Function


        # Another project's tests: a Function of the same name, never gradchecked.
        class Scale(Function):  # expect: AGF301
            @staticmethod
            def forward(ctx, x):
                return x * 3

            @staticmethod
            def backward(ctx, g):
                g.mul_(3)  # expect: AGF006
                return g


        def test_scale():
            x = torch.randn(3, requires_grad=True)
            Scale.apply(x).sum().backward()
        ''',
}

DERIVED = '''\
    from base import Base


    class Derived(Base):{mark}
        @staticmethod
        def forward(ctx, x):
            ctx.x = x{inner}
            return x.exp()
    '''

BASES_ELSEWHERE = {
    # A complete Function base: Derived inherits backward.
    "one/base.py": '''\
        import torch


        class Base(torch.autograd.Function):
            @staticmethod
            def backward(ctx, g):
                return g * 2
        ''',
    "one/derived.py": DERIVED.format(mark="", inner="  # expect: AGF001"),
    # A plain class of the same name: Derived is no Function at all.
    "two/base.py": '''\
        class Base:
            @staticmethod
            def backward(ctx, g):
                return g
        ''',
    "two/derived.py": DERIVED.format(mark="", inner=""),
    # Tests importing `base` from a sibling folder of their project: the
    # nearest root's `base`, a Function base without backward.
    "three/src/base.py": '''\
        from torch.autograd import Function


        class Base(Function):
            pass
        ''',
    "three/tests/test_derived.py": DERIVED.format(mark="  # expect: AGF106",
                                                  inner="  # expect: AGF001"),
}

ONE_SCOPE = {
    "tests/test_twice.py": '''\
        import torch
        from torch.autograd import Function, gradcheck


        def test_twice():
            class Func(Function):
                @staticmethod
                def forward(ctx, x):
                    ctx.x = x  # expect: AGF001
                    return x * 2

                @staticmethod
                def backward(ctx, g):
                    return g * 2

            x = torch.randn(3, dtype=torch.double, requires_grad=True)
            assert gradcheck(Func.apply, (x,))

            class Func(Function):  # expect: AGF301
                @staticmethod
                def forward(ctx, x):
                    return x * 3

                @staticmethod
                def backward(ctx, g):
                    g.mul_(3)  # expect: AGF006
                    return g

            Func.apply(x).sum().backward()


        class Legacy(Function):  # expect: AGF106
            @staticmethod
            def forward(ctx, x):
                return x * 2


        class Legacy(Function):
            @staticmethod
            def forward(ctx, x):
                ctx.y = x  # expect: AGF001
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g * 2


        if torch.cuda.is_available():
            class Either(Function):
                @staticmethod
                def forward(ctx, x):
                    return x * 2

                @staticmethod
                def backward(ctx, g):
                    return g * 2
        else:
            class Either(Function):
                @staticmethod
                def forward(ctx, x):
                    return x * 2

                @staticmethod
                def backward(ctx, g):
                    return g * 2


        def test_either_and_legacy():
            x = torch.randn(3, dtype=torch.double, requires_grad=True)
            assert gradcheck(Either.apply, (x,))
            assert gradcheck(Legacy.apply, (x,))
        ''',
}

SCENARIOS = {
    "two-directories": (TWO_DIRECTORIES, ["--ignore", "AGF301"]),
    "two-packages": (TWO_PACKAGES, ["--ignore", "AGF301"]),
    "same-named-test-files": (TEST_FOLDERS, []),
    "base-in-another-project": (BASES_ELSEWHERE, ["--ignore", "AGF301"]),
    "same-name-in-one-scope": (ONE_SCOPE, []),
}

FILLER = '''\
def helper_{n}(values, scale=1.0):
    """Padding. Not a Function:
class Pad_{n}(torch.autograd.Function):
    pass
"""
    return [value * scale for value in values]


'''


def padded(text: str) -> str:
    """Push a module past the size where sparse parsing starts."""
    if "class " not in text:
        return text
    count = SPARSE_MIN_BYTES // len(FILLER) + 2
    return "".join(FILLER.format(n=n) for n in range(count)) + text


def write_tree(root: Path, files: dict[str, str], pad: bool = False) -> None:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        text = textwrap.dedent(text)
        path.write_text(padded(text) if pad else text)


def expected(root: Path) -> Counter[tuple[str, int, str]]:
    found: Counter[tuple[str, int, str]] = Counter()
    for path in sorted(root.rglob("*.py")):
        for (line, code), count in expectations(path).items():
            found[(path.relative_to(root).as_posix(), line, code)] += count
    return found


def check(root: Path, capsys: pytest.CaptureFixture[str], *args: str) -> Counter:
    # The scenarios expect AGF001, AGF006, AGF106 (pedantic) and AGF301 (coverage),
    # which are off by default.
    code = main(["check", str(root), "--isolated", "--format", "json",
                 "--extend-select", "AGF001,AGF006,AGF106,AGF301", *args])
    out = capsys.readouterr()
    assert code in (0, 1), out.err
    return Counter((Path(f["path"]).relative_to(root).as_posix(), f["line"], f["code"])
                   for f in json.loads(out.out))


MODES = [pytest.param(prefilter, jobs, pad, id=f"{'prefilter' if prefilter else 'whole'}-"
                      f"jobs{jobs}{'-padded' if pad else ''}")
         for prefilter in (True, False) for jobs in (1, 2) for pad in (False, True)]


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
@pytest.mark.parametrize(("prefilter", "jobs", "pad"), MODES)
def test_each_file_and_class_keeps_its_findings(scenario: str, prefilter: bool, jobs: int,
                                                pad: bool, tmp_path: Path, capsys,
                                                monkeypatch) -> None:
    files, options = SCENARIOS[scenario]
    root = tmp_path / "tree"
    write_tree(root, files, pad)
    want = expected(root)
    assert want, "a scenario must expect something"
    args = [*options, "--jobs", str(jobs), "--cache-dir", str(tmp_path / "cache")]
    if not prefilter:
        args.append("--no-prefilter")
    assert check(root, capsys, *args) == want  # cold cache
    forbid_analysis(monkeypatch)
    assert check(root, capsys, *args) == want  # warm: answered from the cache


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_each_project_alone_gets_the_same_findings(scenario: str, tmp_path: Path,
                                                   capsys) -> None:
    """The scenarios' projects checked one by one: what each file gets in the
    shared tree is what it gets alone."""
    files, options = SCENARIOS[scenario]
    write_tree(tmp_path, files)
    together = check(tmp_path, capsys, "--no-cache", *options)
    alone: Counter = Counter()
    for project in sorted({relative.split("/")[0] for relative in files}):
        for (path, line, code), count in check(tmp_path / project, capsys, "--no-cache",
                                               *options).items():
            alone[(f"{project}/{path}", line, code)] += count
    assert together == alone


def test_the_old_failure_findings_moved_between_files(tmp_path: Path, capsys) -> None:
    """The report's exact case: b's AGF006 at its own line, not a's AGF001."""
    write_tree(tmp_path, TWO_DIRECTORIES)
    found = check(tmp_path, capsys, "--no-cache", "--ignore", "AGF301")
    assert found == Counter({("a/pkg/ce.py", 8, "AGF001"): 1, ("b/pkg/ce.py", 15, "AGF006"): 1})


# -- which definition a reference means ---------------------------------------------
REFERENCES = textwrap.dedent('''\
    class F: ...
    first = F
    class F: ...
    second = F
    if flag:
        class G: ...
        inside = G
    else:
        class G: ...
    either = G


    def later():
        return F, G


    def test():
        class H: ...
        gradcheck(lambda: H)
        class H: ...
        gradcheck(lambda: H)
    ''')


def references() -> dict[str, list[int]]:
    """For each reference in REFERENCES (by its line), the lines of the class
    statements it may mean."""
    import ast

    from autograd_lint.core.model import build_module

    tree = ast.parse(REFERENCES)
    module = build_module("refs.py", "refs", False, tree, REFERENCES)
    line_of = {info.key: info.line for info in module.classes}
    found: dict[str, list[int]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in "FGH" and isinstance(node.ctx, ast.Load):
            scope = module.scope
            for definition in ast.walk(tree):  # the innermost def or lambda holding it
                if isinstance(definition, (ast.FunctionDef, ast.Lambda)) and \
                        definition.lineno <= node.lineno <= definition.end_lineno:
                    scope = module.scopes.get(id(definition), scope)
            keys = scope.resolve_all(node)
            found[f"{node.id}@{node.lineno}"] = [line_of[key] for key in keys]
    return found


def test_a_reference_means_the_class_defined_above_it() -> None:
    assert references() == {
        "F@2": [1], "F@4": [3],  # straight-line code: the latest above
        "G@7": [6], "G@10": [9, 6],  # inside a branch; after if/else: either
        "F@14": [3], "G@14": [9, 6],  # a function body runs later: the final bindings
        "H@19": [18], "H@21": [20],  # a lambda called in place: its test's latest
    }


# -- the cache: what a result depends on ---------------------------------------------
def test_a_module_read_only_to_resolve_an_import_invalidates_when_edited(
        tmp_path: Path, capsys) -> None:
    """b/derived.py's base comes from b/ce.py, a file that matters to no rule
    by itself (it is parsed only to resolve the import). Editing it changes
    b's findings, and a cached result must not hide that."""
    write_tree(tmp_path, {"a/ce.py": FLAT_A.replace("class F(", "class Fn("),
                          "b/ce.py": "Fn = object\n",
                          "b/derived.py": DERIVED.replace("base import Base", "ce import Fn")
                          .replace("(Base)", "(Fn)").format(mark="", inner="")})
    args = ["--ignore", "AGF301", "--cache-dir", str(tmp_path / "cache")]
    assert ("b/derived.py", 7, "AGF001") not in check(tmp_path, capsys, *args)
    (tmp_path / "b/ce.py").write_text("from torch.autograd import Function as Fn\n")
    assert ("b/derived.py", 7, "AGF001") in check(tmp_path, capsys, *args)


def test_a_new_file_that_takes_an_imported_module_name_invalidates(tmp_path: Path,
                                                                   capsys) -> None:
    """b/use.py's `from ce import Fn` reaches a's Function until b gets a
    `ce` of its own, which is no Function and matters to no rule by itself."""
    write_tree(tmp_path, {"a/ce.py": FLAT_A.replace("class F(", "class Fn("),
                          "b/use.py": "from ce import Fn\n\nlayer = Fn(1)\n"})
    args = ["--ignore", "AGF301", "--cache-dir", str(tmp_path / "cache")]
    assert ("b/use.py", 3, "AGF105") in check(tmp_path, capsys, *args)
    (tmp_path / "b/ce.py").write_text("def Fn():\n    return 1\n")
    assert ("b/use.py", 3, "AGF105") not in check(tmp_path, capsys, *args)


# -- property: a tree split into folders ---------------------------------------------
_DEFECTS = {
    "ctx": ("        ctx.x = x\n        return x * 2\n", "        return g * 2\n"),
    "grad": ("        return x * 2\n", "        g.mul_(2)\n        return g\n"),
    "clean": ("        return x * 2\n", "        return g * 2\n"),
}


@st.composite
def projects(draw: st.DrawFn) -> list[dict[str, str]]:
    """Small self-contained projects whose module, class and test names collide."""
    made = []
    for _ in range(draw(st.integers(2, 5))):
        module = draw(st.sampled_from(["ce", "ops"]))
        package = draw(st.booleans())
        forward, backward = _DEFECTS[draw(st.sampled_from(sorted(_DEFECTS)))]
        has_backward = draw(st.booleans())
        comments = "# padding\n" * draw(st.integers(0, 3))  # findings on other lines
        source = (f"{comments}import torch\nfrom torch.autograd import Function\n\n\n"
                  f"class Fn(Function):\n    @staticmethod\n    def forward(ctx, x):\n"
                  f"{forward}")
        if has_backward:
            source += f"\n    @staticmethod\n    def backward(ctx, g):\n{backward}"
        where = f"pkg/{module}" if package else module
        files = {f"{where}.py": source}
        if package:
            files["pkg/__init__.py"] = ""
        if draw(st.booleans()):  # a Function of the project deriving from Fn
            home = "pkg/derived.py" if package else "derived.py"
            files[home] = (f"from {'.' if package else ''}{module} import Fn\n\n\n"
                           "class Derived(Fn):\n    @staticmethod\n    def forward(ctx, x):\n"
                           "        ctx.y = x\n        return x * 3\n")
        if draw(st.booleans()):  # tests in their own folder, importing the module
            imported = f"pkg.{module}" if package else module
            call = "gradcheck(Fn.apply, (x,))" if draw(st.booleans()) else "Fn()"
            files[f"tests/test_{module}.py"] = (
                f"import torch\nfrom torch.autograd import gradcheck\n"
                f"from {imported} import Fn\n\n\ndef test_fn():\n"
                f"    x = torch.randn(2, dtype=torch.double, requires_grad=True)\n"
                f"    {call}\n")
        made.append(files)
    return made


def lint_folder(folder: Path, prefilter: bool) -> set[tuple]:
    paths = list(iter_python_files(folder, lambda path, is_dir: False))
    inputs = [SourceInput(p, p, default_codes() | {"AGF106", "AGF301"}) for p in paths]
    result = lint_inputs(inputs, scan_tree=True, prefilter=prefilter, jobs=1)
    assert not result.errors, result.errors
    return {(Path(f.path).resolve().as_posix(), f.line, f.column, f.code, f.message)
            for f in result.findings}


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(made=projects(), split=st.lists(st.integers(0, 2), min_size=5, max_size=5),
       prefilter=st.booleans())
def test_a_tree_split_into_folders_reports_the_union_of_the_folders(
        made: list[dict[str, str]], split: list[int], prefilter: bool,
        tmp_path_factory: pytest.TempPathFactory) -> None:
    """No rule here crosses a project, so which projects share a folder (and
    so a run) must not change any file's findings."""
    root = tmp_path_factory.mktemp("split")
    for number, files in enumerate(made):
        project = root / f"folder{split[number]}" / f"project{number}"
        write_tree(project, files)
        # Marked as a project, as real ones are: AGF301 asks whether a
        # project's own tests were scanned.
        (project / "pyproject.toml").write_text("")
    whole = lint_folder(root, prefilter)
    union = set().union(*(lint_folder(folder, prefilter)
                          for folder in sorted(root.iterdir())))
    assert whole == union
