"""The byte scan, relevance judgement and sparse parsing behind the prefilter.

Each of them may only ever over-approximate: a file or statement they drop
must be one that cannot change a finding.
"""
from __future__ import annotations

import ast
import textwrap

from autograd_lint.core.scan import FileScan, scan_bytes
from autograd_lint.engine.relevance import judge, statement_keeper
from autograd_lint.engine.sparse import parse_sparse, top_level_chunks


def scan(text: str, path: str = "/proj/pkg/mod.py") -> FileScan:
    return scan_bytes(path, textwrap.dedent(text).encode())


# ---------------------------------------------------------------------------
# scan_bytes
# ---------------------------------------------------------------------------
def test_headers_cover_dotted_multiline_and_keyword_bases() -> None:
    found = scan('''
        class A(torch.autograd.Function):
            pass
        class B(
            Base,
            metaclass=Meta,
        ):
            pass
        if x: class C(A): pass
        def f():
            class Nested(F): pass
        subclass(Foo)
        myclass(Bar)
        ''').headers
    assert ("A", ("torch.autograd.Function",)) in found
    assert ("B", ("Base", "metaclass", "Meta")) in found
    assert ("C", ("A",)) in found
    assert ("Nested", ("F",)) in found
    assert [name for name, _ in found] == ["A", "B", "C", "Nested"]  # no `subclass(`


def test_aliases_of_function_and_its_modules() -> None:
    found = scan('''
        from torch.autograd import Function as AF
        import torch.autograd as ag
        from torch.autograd import function as fmod
        BaseFn = torch.autograd.Function
        unrelated = compute(Function)
        ''').aliases
    assert found == {"AF", "ag", "fmod", "BaseFn"}


def test_files_without_function_or_autograd_have_no_aliases() -> None:
    assert scan("import numpy as np\nX = np.zeros(3)\n").aliases == frozenset()


def test_imports_from_every_import_form() -> None:
    found = scan('''
        import os, torch.nn as nn
        from . import ops
        from ..pkg.ops import (
            Scale as S,  # a comment
            Shift,
        )
        from a.b import c; import d
        try:
            from fast import Kernel
        except ImportError:
            pass
        text = "from nowhere import Nothing"
        ''').imports
    found = set(found)
    assert {("os", ""), ("torch.nn", ""), (".", "ops"), ("..pkg.ops", "Scale"),
            ("..pkg.ops", "Shift"), ("a.b", "c"), ("fast", "Kernel")} <= found
    assert ("..pkg.ops", "S") not in found  # the alias is not an imported name
    assert ("nowhere", "Nothing") not in found  # inside a string, mid-line


def test_gradcheck_calls_with_and_without_space() -> None:
    assert scan("torch.autograd.gradcheck(f, x)\n").gradcheck
    assert scan("gradgradcheck (f, x)\n").gradcheck
    assert scan("opcheck(op, args)\n").gradcheck
    assert not scan("check(x)\nmygradcheck = 1\n").gradcheck


# ---------------------------------------------------------------------------
# judge
# ---------------------------------------------------------------------------
def test_function_subclasses_found_across_files_through_a_fixpoint() -> None:
    scans = [
        scan("import torch\nclass Base(torch.autograd.Function): pass\n", "/p/a.py"),
        scan("from a import Base\nclass Mid(Base): pass\n", "/p/b.py"),
        scan("from b import Mid\nclass Leaf(Mid): pass\n", "/p/c.py"),
        scan("class Plain(object): pass\n", "/p/d.py"),
    ]
    relevance = judge(scans, references=True, gradcheck=False)
    assert relevance.candidates == {"Base", "Mid", "Leaf"}
    assert relevance.defining == {"/p/a.py", "/p/b.py", "/p/c.py"}
    assert not relevance.matters("/p/d.py")


def test_importers_of_a_function_or_its_module_are_referencing(tmp_path, monkeypatch) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    files = {
        "pkg/__init__.py": "",
        "pkg/ops.py": "import torch\nclass Scale(torch.autograd.Function): pass\n",
        "pkg/api.py": "from .ops import Scale\nLegacy = Scale\n",
        "pkg/relative.py": "from .ops import Scale\n",
        "by_name.py": "from pkg.ops import Scale\n",
        "by_module.py": "import pkg.ops\nx = pkg.ops.Scale()\n",
        "by_submodule.py": "from pkg import ops\nops.Scale.forward(None, 1)\n",
        "by_package.py": "import pkg as p\np . ops.Scale()\n",
        "reexport.py": "from pkg import Scale\n",
        "by_alias.py": "from pkg.api import Legacy\n",
        "module_unused.py": "import pkg.ops\nprint(pkg.ops.__name__)\n",
        "unrelated.py": "import os\nfrom pkg.ops import helper\nos.Scale = 1\n",
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    scans = [scan_bytes(str(tmp_path / name), text.encode()) for name, text in files.items()]
    relevance = judge(scans, references=True, gradcheck=False)
    referencing = {p.rsplit("/", 1)[-1] for p in relevance.referencing}
    assert referencing == {"api.py", "relative.py", "by_name.py", "by_module.py",
                           "by_submodule.py", "by_package.py", "reexport.py", "by_alias.py"}
    assert relevance.reach[str(tmp_path / "by_alias.py")] == {"Legacy"}
    assert relevance.reach[str(tmp_path / "by_package.py")] == {"Scale"}
    # Worker processes search the files for attributes the same way.
    import autograd_lint.engine.relevance as relevance_module

    monkeypatch.setattr(relevance_module, "_PARALLEL_MIN_FILES", 1)
    assert judge(scans, references=True, gradcheck=False, jobs=2) == relevance
    assert "Legacy" in relevance.candidates  # an alias may be a base or be imported
    # Without reference rules selected, only definitions matter.
    assert judge(scans, references=False, gradcheck=False).referencing == frozenset()


def test_gradcheck_files_matter_only_for_tree_scans_of_agf301() -> None:
    scans = [scan("torch.autograd.gradcheck(f, x)\n", "/p/test_f.py")]
    assert judge(scans, references=True, gradcheck=True).matters("/p/test_f.py")
    assert not judge(scans, references=True, gradcheck=False).matters("/p/test_f.py")


# ---------------------------------------------------------------------------
# top_level_chunks / parse_sparse
# ---------------------------------------------------------------------------
def chunk_texts(source: str) -> list[str]:
    lines = source.split("\n")
    return ["\n".join(lines[a:b]).strip() for a, b in top_level_chunks(source)]


def test_chunks_follow_statements_not_lines() -> None:
    source = textwrap.dedent('''\
        import torch
        X = """
        class Fake(torch.autograd.Function):
            pass
        """
        @decorator
        @other
        def f(a,
        b):
            return (a
        + b)
        try:
            import fast
        except ImportError:
            fast = None
        else:
            pass
        finally:
            pass
        Y = 1 + \\
        2
        # a comment at column 0
        class Real(torch.autograd.Function):
            pass
        ''')
    texts = chunk_texts(source)
    assert texts[0] == "import torch"
    assert texts[1].startswith('X = """') and texts[1].endswith('"""')  # string kept whole
    assert texts[2].startswith("@decorator") and texts[2].endswith("+ b)")
    assert texts[3].startswith("try:") and texts[3].endswith("pass")
    assert texts[4] == "Y = 1 + \\\n2\n# a comment at column 0"
    assert texts[5].startswith("class Real")
    assert len(texts) == 6


def test_sparse_parse_keeps_original_positions() -> None:
    source = "import torch\n\n" + "def filler():\n    return 1\n\n" * 50 + textwrap.dedent('''\
        class Scale(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.x = x
                return x
        ''')
    tree = parse_sparse(source, lambda chunk: "Function" in chunk or "import" in chunk, "m.py")
    assert tree is not None
    names = [type(node).__name__ for node in tree.body]
    assert names == ["Import", "ClassDef"]
    whole = ast.parse(source)
    assert ast.dump(tree.body[1], include_attributes=True) == \
        ast.dump(whole.body[-1], include_attributes=True)


def test_sparse_parse_gives_up_when_most_of_the_file_is_kept() -> None:
    assert parse_sparse("import a\nimport b\nx = 1\n", lambda chunk: True, "m.py") is None


def test_sparse_parse_handles_form_feeds_and_carriage_returns() -> None:
    body = "def filler():\n    return 1\n\n" * 20
    for newline in ("\n", "\r\n", "\r"):
        source = ("import torch\n\x0c\n" + body + "# \x0c\u2028 odd separators\n"
                  "class Scale(torch.autograd.Function):\n    pass\n").replace("\n", newline)
        tree = parse_sparse(source, lambda chunk: "Function" in chunk, "m.py")
        assert tree is not None
        [node] = tree.body
        assert node.lineno == 2 + 60 + 2, repr(newline)


def test_statement_keeper_keeps_what_the_rules_read() -> None:
    scans = [scan("import torch\nclass Scale(torch.autograd.Function): pass\n", "/p/ops.py")]
    relevance = judge(scans, references=True, gradcheck=True)
    keep = statement_keeper(relevance, "/p/ops.py", frozenset())
    assert keep("import torch")
    assert keep("try:\n    from fast import k\nexcept ImportError:\n    k = None")
    assert keep("ALIAS = Scale")
    assert keep("class Scale(torch.autograd.Function):\n    pass")
    assert keep("class Child(Scale):\n    pass")
    assert keep("def test():\n    torch.autograd.gradcheck(f, x)")
    assert keep("def run(x):\n    return Scale.apply(x)")
    assert not keep("def helper(x):\n    return x + 1")
    assert not keep("try:\n    import a\n    def f(): pass\nexcept ImportError:\n    pass")
    assert not keep("class subclassing(object):\n    pass")


def test_column_zero_lines_inside_expressions_stay_in_their_statement() -> None:
    source = textwrap.dedent('''\
        x = foo(
        a,
        Scale.forward(None, y),
        b)
        y = (a
        + b)
        z = [f(v)
        for v in values
        if v]
        w = (a and
        not b)
        if ready:
            pass
        for item in items:
            pass
        ''')
    texts = chunk_texts(source)
    assert texts[0] == "x = foo(\na,\nScale.forward(None, y),\nb)"
    assert texts[1] == "y = (a\n+ b)"
    assert texts[2] == "z = [f(v)\nfor v in values\nif v]"
    assert texts[3] == "w = (a and\nnot b)"
    assert texts[4].startswith("if ready:") and texts[5].startswith("for item in items:")


def test_long_classes_are_split_into_the_members_that_matter() -> None:
    methods = "".join(f"    def test_{n}(self):\n        return {n}\n\n" for n in range(40))
    inner = textwrap.indent(textwrap.dedent('''\
        @decorated
        def test_with_function(self):
            class Scale(torch.autograd.Function):
                pass
            return Scale

        class Nested:
            x = """
        class NotReal(torch.autograd.Function):
            """
        '''), "    ")
    source = ("import torch\n\n\nclass TestOps(\n    Base,\n):  # header over 3 lines\n"
              '    """Docstring."""\n\n' + methods + inner
              + "\n\ndef filler():\n    return 1\n" * 30)
    tree = parse_sparse(source, lambda chunk: "class Scale" in chunk or "import" in chunk, "m.py")
    assert tree is not None
    [_, cls] = tree.body
    assert isinstance(cls, ast.ClassDef) and [type(n).__name__ for n in cls.body] == ["FunctionDef"]
    whole = ast.parse(source)
    [original] = [n for n in whole.body[1].body if getattr(n, "name", "") == "test_with_function"]
    assert ast.dump(cls.body[0], include_attributes=True) == \
        ast.dump(original, include_attributes=True)


def test_a_class_kept_for_its_header_is_never_split() -> None:
    body = "".join(f"    def method_{n}(self):\n        return {n}\n\n" for n in range(40))
    source = "import torch\n\n\nclass Scale(torch.autograd.Function):\n" + body + \
        "\ndef filler():\n    return 1\n" * 60
    tree = parse_sparse(source, lambda chunk: "Function)" in chunk or "import" in chunk, "m.py")
    assert tree is not None
    assert len(tree.body[1].body) == 40


def test_imports_from_outside_the_tree_reach_no_function() -> None:
    scans = [scan("import torch\nclass Type(torch.autograd.Function): pass\n", "/p/pkg/ops.py"),
             scan("from typing import Type\n\ndef f(x: Type): pass\n", "/p/pkg/hints.py"),
             scan("from .ops import Type\n", "/p/pkg/user.py")]
    relevance = judge(scans, references=True, gradcheck=False)
    assert "/p/pkg/user.py" in relevance.referencing
    assert "/p/pkg/hints.py" not in relevance.referencing


def test_reachable_names_are_kept_as_words() -> None:
    scans = [scan("import torch\nclass Type(torch.autograd.Function): pass\n", "/p/ops.py"),
             scan("from ops import Type\n", "/p/user.py")]
    relevance = judge(scans, references=True, gradcheck=False)
    keep = statement_keeper(relevance, "/p/user.py", frozenset())
    assert keep("def run(x):\n    return Type.apply(x)")
    assert not keep("def run(x):\n    return DataType(x)")


# ---------------------------------------------------------------------------
# Headers and statements the parser accepts in unusual spellings
# ---------------------------------------------------------------------------
def test_headers_after_any_whitespace_the_parser_reads() -> None:
    source = b"import torch\nclass A(torch.autograd.Function): pass\n"
    spellings = {
        "form feed before": source.replace(b"class A", b"\x0cclass A"),
        "form feeds inside": source.replace(b"class A(", b"class\x0cA\x0c("),
        # A syntax error: found, so that the file is reported (AGF000).
        "vertical tab before": source.replace(b"class A", b"\x0bclass A"),
        "lone carriage returns": source.replace(b"\n", b"\r"),
        "mixed line endings": b"import torch\r\nx = 1\rclass A(torch.autograd.Function): pass\n",
        "backslash continuations": source.replace(b"class A(", b"class \\\n A \\\r\n("),
        "type parameters (3.12+)": source.replace(b"class A(", b"class A[T: (int, str), *Ts]("),
        "comment in the bases": source.replace(
            b"class A(", b"class A(  # see f(): it matters\n    "),
    }
    for label, data in spellings.items():
        found = scan_bytes("/p/mod.py", data).headers
        assert any(name == "A" and "torch.autograd.Function" in bases
                   for name, bases in found), label


def test_lone_carriage_returns_end_lines_for_imports_and_aliases() -> None:
    found = scan_bytes("/p/mod.py", b"import os\rfrom torch.autograd import Function as AF\r"
                                    b"Fn = torch.autograd.Function\r")
    assert ("torch.autograd", "Function") in found.imports and ("os", "") in found.imports
    assert found.aliases == {"AF", "Fn"}


def test_a_backslash_line_never_starts_a_statement() -> None:
    # A line holding only a backslash joins the next one: here, the class body goes on.
    source = textwrap.dedent('''\
        class Scale(torch.autograd.Function):
            def forward(ctx, x):
                return x
        \\
            def backward(ctx, grad):
                return grad
        x = 1
        ''')
    texts = chunk_texts(source)
    assert texts[0].startswith("class Scale") and texts[0].endswith("return grad")
    assert texts[1:] == ["x = 1"]
    tree = parse_sparse(source + "\ndef filler():\n    return 1\n" * 20,
                        lambda chunk: "class Scale" in chunk, "m.py")
    assert tree is not None
    assert [method.name for method in tree.body[0].body] == ["forward", "backward"]


def test_a_form_feed_sets_the_column_back_to_zero() -> None:
    source = "x = 1\n  \x0cimport torch\nclass A:\n    a = 1\n  \x0c    b = 2\n"
    assert chunk_texts(source) == ["x = 1", "import torch",
                                   "class A:\n    a = 1\n  \x0c    b = 2"]
    found = scan_bytes("/p/mod.py", b"x = 1\n\x0cfrom torch.autograd import Function as F\n"
                                    b"\x0cimport os\n")
    assert set(found.imports) == {("torch.autograd", "Function"), ("os", "")}


def test_piecewise_syntax_check_gives_the_whole_parse_error(monkeypatch) -> None:
    import autograd_lint.engine.sparse as sparse

    monkeypatch.setattr(sparse, "_CHECK_PIECE_CHARS", 1)  # a piece per statement
    sources = [
        "x = 1\n\n\ndef f():\n    return 1\n",  # parses
        "x = foo(a\nb)\n",  # a split inside brackets: the joined piece's error
        "x = [1,\n2]\ny = (\n",  # never closed, at the end
        "if x:\n\n# comment\n\nx = 1\n",  # a block never opened: the next line says so
        "def f(:\n    pass\nx = '''\n",  # a later tokenizer error wins, as in a whole parse
        "x = 1\n  y = 2\n",
        "class A:\n    a = 1\n\\\n    b = 2\n",  # a backslash line goes on the class
        "x = 1\nreturn 2\n",  # the compiler's error, not the parser's
        "x = 1\n\x00\n",
    ]
    for source in sources:
        try:
            ast.parse(source)
            whole = None
        except SyntaxError as exc:
            whole = (exc.msg, exc.lineno, exc.offset)
        error = sparse.syntax_error(source, "<unknown>")
        assert (None if error is None else (error.msg, error.lineno, error.offset)) == whole, \
            source
