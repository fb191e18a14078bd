"""Fuzzing: whatever the source, the engine returns findings (or AGF000) and
never raises or reports an internal error.

Sources are Function-shaped programs assembled from fragments that exercise
every rule family, and real files (the rule fixtures, the examples), then
mutated: truncated, sprinkled with odd unicode, nested deeply, padded with
huge literals. Each one goes through `lint_source` (editors, flake8) and
through a project run (byte scan, relevance, sparse parsing).

A property over mutants of the rule fixtures (spellings the parser reads, or
fails on, alike: form feeds, line endings, continuations, comments, deep
nesting, 3.12+ syntax, padding past the sparse threshold): a directory scan
reports what a run without the prefilter reports, and, but for tree-only
rules, what the file reports named alone. `benchmarks/bench_fuzz.py` runs it
on tens of thousands of mutants.
"""
from __future__ import annotations

import random
import re
import tempfile
from collections.abc import Callable
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autograd_lint.core.findings import Finding
from autograd_lint.core.registry import RULES, TREE_ONLY_CODES
from autograd_lint.engine.lint import SPARSE_MIN_BYTES, SourceInput, lint_inputs, lint_source

from .helpers import FILLER, leaky_function

ALL_CODES = frozenset(RULES)
ROOT = Path(__file__).resolve().parent.parent
REAL_FILES = sorted([*(ROOT / "tests" / "fixtures").rglob("*.py"),
                     *(ROOT / "examples").glob("*.py")])

HEADERS = [
    "class F(torch.autograd.Function):",
    "class F(Function):",
    "class F(autograd.Function, Mixin):",
    "class F(Base):",
    "class F(\n    torch.autograd.function.InplaceFunction\n):",
]
PARAMS = ["ctx, x", "ctx, x, y=None", "ctx, x, bits: int = 8", "ctx, *args", "ctx, x, *, k",
          "", "x", "ctx, inputs, output", "ctx, x, weight, bias=None, /"]
DECORATORS = ["@staticmethod", "@classmethod", "@once_differentiable", "@staticmethod\n@jit"]
FORWARD = [
    "ctx.x = x", "ctx.save_for_backward(x, y)", "ctx.save_for_backward(*args)",
    "ctx.save_for_backward(x.shape)", "x.add_(1)", "y = x * 2", "ctx.mark_dirty(x)",
    "ctx.mark_non_differentiable(y)", "return x", "return x, y", "return (x,) * 3",
    "if flag:\n    return y", "for i in range(3):\n    x = x + i",
    "with torch.no_grad():\n    y = x.clone()", "ctx.set_materialize_grads(False)",
    "ctx.k, ctx.t = k, x", "setattr(ctx, 'w', x)", "del x", "torch.add(x, y, out=y)",
    "y = x.data", "x.data = y", "ctx.save_for_forward(x)", "x[0] = 1", "y = x.numpy()",
    "a, *b = ctx.saved_tensors", "dist.all_reduce(x)", "ctx.saved = [x, y]",
    "try:\n    y = x.exp()\nexcept RuntimeError:\n    raise", "while x:\n    break",
    "match x:\n    case 1:\n        return x", "y = lambda t: t.add_(1)", "global G",
    "return", "yield x", "x = (yield)", "assert x is not None", "y = x if x else None",
]
BACKWARD = [
    "grad.mul_(2)", "grad[grad < 0] = 0", "a, b = ctx.saved_tensors", "x, = ctx.saved_tensors",
    "return grad, None", "return grad * ctx.x", "return", "return None", "return 0",
    "if ctx.needs_input_grad[5]:\n    pass", "g = grad.view(-1)\ng.zero_()",
    "with torch.no_grad():\n    grad = grad * 2", "return grad.detach().numpy()",
    "x = ctx.saved_tensors[0]\nx.add_(grad)", "return (grad,) + (None,) * 2",
    "return grads", "grads = list(args)", "y = ctx.saved_tensors\nz = ctx.saved_tensors",
]
EXTRA = [
    "@staticmethod\ndef setup_context(ctx, inputs, output):\n    x, = inputs\n    ctx.x = x",
    "@staticmethod\ndef jvp(ctx, t):\n    return t * ctx.saved_tensors[0]",
    "@staticmethod\ndef vmap(info, in_dims, x):\n    return x, 0",
    "generate_vmap_rule = True",
    "@staticmethod\ndef vjp(ctx, g):\n    return g",
]
USES = ["F.apply(x)", "F()(x)", "F.forward(None, x)", "gradcheck(F.apply, (x,))",
        "fn = F.apply", "class G(F):\n    pass",
        "torch.autograd.gradcheck(lambda t: F.apply(t), x)"]


def indent(text: str, levels: int = 1) -> str:
    return "\n".join("    " * levels + line if line else line for line in text.split("\n"))


@st.composite
def function_sources(draw: st.DrawFn) -> str:
    def method(name: str, body: list[str]) -> str:
        decorator = draw(st.sampled_from(["", *DECORATORS]))
        lines = [decorator] if decorator else []
        lines.append(f"def {name}({draw(st.sampled_from(PARAMS))}):")
        lines.append(indent("\n".join(body) or "pass"))
        return "\n".join(lines)

    forward = draw(st.lists(st.sampled_from(FORWARD), max_size=6))
    backward = draw(st.lists(st.sampled_from(BACKWARD), max_size=5))
    members = [method("forward", forward), method("backward", backward),
               *draw(st.lists(st.sampled_from(EXTRA), max_size=2))]
    parts = ["import torch", "from torch.autograd import Function, gradcheck",
             draw(st.sampled_from(HEADERS)), indent("\n\n".join(members))]
    parts += draw(st.lists(st.sampled_from(USES), max_size=3))
    if draw(st.booleans()):  # the whole class nested in a function or a branch
        parts[2:4] = [draw(st.sampled_from(["def make():", "if torch.cuda.is_available():"])),
                      indent("\n".join(parts[2:4]))]
    return "\n".join(parts) + "\n"


def real_sources() -> st.SearchStrategy[str]:
    return st.sampled_from(REAL_FILES).map(lambda p: p.read_text(encoding="utf-8"))


@st.composite
def mutated(draw: st.DrawFn, sources: st.SearchStrategy[str]) -> str:
    text = draw(sources)
    kind = draw(st.sampled_from(["none", "truncate", "unicode", "nest", "parens",
                                 "literal", "chain", "indent", "bytes"]))
    at = draw(st.integers(0, len(text)))
    if kind == "truncate":
        return text[:at]
    if kind == "unicode":
        odd = draw(st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=8))
        return text[:at] + odd + text[at:]
    if kind == "nest":  # deep blocks, past the parser's limit of 100 levels
        depth = draw(st.integers(1, 120))
        block = "".join("    " * i + "if x:\n" for i in range(depth))
        block += "    " * depth + "F.apply(x)\n"
        return text + "\ndef deep(x):\n" + indent(block)
    if kind == "parens":  # deep expressions, past the parser's limit too
        depth = draw(st.integers(1, 400))
        return text + f"\ny = {'(' * depth}F.apply(x){')' * depth}\n"
    if kind == "literal":
        size = draw(st.integers(1, 60_000))
        return text + f"\nTABLE = [{', '.join(['1.5'] * size)}]\n"
    if kind == "chain":  # a long binary chain: a deep tree for recursive visitors
        size = draw(st.integers(1, 20_000))
        return text + "\ndef chain(ctx, x):\n    ctx.y = x" + " + x" * size + "\n"
    if kind == "indent":
        return text.replace("    ", "\t", draw(st.integers(0, 3)))
    if kind == "bytes":
        return text.encode("utf-8", "surrogatepass").decode("latin-1")
    return text


def assert_well_formed(findings: list[Finding], text: str) -> None:
    assert isinstance(findings, list)
    lines = max(text.count("\n") + 1, 1)
    for finding in findings:
        assert finding.code in RULES
        assert 1 <= finding.line <= lines + 1, finding
        assert finding.column >= 0


FUZZ = settings(max_examples=150, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@FUZZ
@given(mutated(function_sources()))
def test_generated_functions_never_crash_lint_source(text: str) -> None:
    assert_well_formed(lint_source(text, path="fuzz.py", codes=ALL_CODES), text)


@FUZZ
@given(mutated(real_sources()))
def test_mutated_real_files_never_crash_lint_source(text: str) -> None:
    assert_well_formed(lint_source(text, path="fuzz.py", codes=ALL_CODES), text)


@settings(FUZZ, max_examples=60)
@given(st.lists(mutated(st.one_of(function_sources(), real_sources())), min_size=1, max_size=3),
       st.booleans())
def test_project_runs_never_report_internal_errors(texts: list[str], pad: bool) -> None:
    filler = "def filler():\n    return 1\n\n\n" * (SPARSE_MIN_BYTES // 30) if pad else ""
    with tempfile.TemporaryDirectory() as directory:
        inputs = []
        for index, text in enumerate(texts):
            path = Path(directory) / f"mod{index}.py"
            path.write_text(filler + text, encoding="utf-8", errors="surrogatepass")
            inputs.append(SourceInput(path, str(path), ALL_CODES))
        for prefilter in (True, False):
            result = lint_inputs(inputs, scan_tree=True, prefilter=prefilter, jobs=1)
            assert result.errors == []
            for finding in result.findings:
                assert finding.code in RULES and finding.line >= 1


def test_deeply_nested_expressions_keep_every_finding(tmp_path: Path) -> None:
    """A thousand unary minus signs nest the tree past Python's recursion
    limit in the analysis: the Function's findings must not vanish."""
    source = ("import torch\n\n\nclass Deep(torch.autograd.Function):\n"
              "    @staticmethod\n    def forward(ctx, x):\n        ctx.x = x\n"
              "        return " + "-" * 1000 + "x\n")
    expected = [(4, "AGF106"), (4, "AGF303")]  # no backward; ctx-style forward
    assert [(f.line, f.code) for f in lint_source(source, "deep.py", ALL_CODES)] == expected
    path = tmp_path / "deep.py"
    path.write_text(source)
    result = lint_inputs([SourceInput(path, str(path), ALL_CODES)], scan_tree=True, jobs=1)
    assert result.errors == []
    assert [(f.line, f.code) for f in result.findings] == expected


def test_code_deeper_than_the_analysis_allows_is_an_internal_error(tmp_path: Path,
                                                                   monkeypatch) -> None:
    """Past the recursion the checks are given, the file says so (an
    internal error: the run goes on, and fails), never silently less."""
    from autograd_lint.engine import lint as engine

    monkeypatch.setattr(engine, "_CHECK_FRAMES", 1_500)
    deep = tmp_path / "deep.py"
    deep.write_text("import torch\n\n\nclass Deep(torch.autograd.Function):\n"
                    "    @staticmethod\n    def forward(ctx, x):\n"
                    "        return " + "-" * 1000 + "x\n")
    other = tmp_path / "other.py"
    other.write_text("import torch\n\n\n" + leaky_function())
    result = lint_inputs([SourceInput(p, str(p), ALL_CODES) for p in (deep, other)],
                         scan_tree=True, jobs=1)
    assert [(display, message.split(":")[0]) for display, message in result.errors] == \
        [(str(deep), "internal error")]
    assert (str(other), 7, "AGF001") in [(f.path, f.line, f.code) for f in result.findings]


# ---------------------------------------------------------------------------
# A directory scan reports what the file reports named alone
# ---------------------------------------------------------------------------
# Function sources the rule tests use (each defines Functions: the scan
# must find them however they are spelled).
SEED_FILES = sorted([*(ROOT / "tests" / "fixtures" / "rules").glob("*.py"),
                     *(ROOT / "tests" / "fixtures" / "discovery").glob("*.py")])
_CLASS_HEADER = re.compile(r"^([ \t]*)class (\w+)\(", re.M)
_RETURN = re.compile(r"^([ \t]+)return (?=\S)", re.M)


def _line_starts(text: str) -> list[int]:
    return [0] + [m.end() for m in re.finditer("\n", text) if m.end() < len(text)]


def _at_random_line(text: str, rng: random.Random, insert: str) -> str:
    at = rng.choice(_line_starts(text))
    return text[:at] + insert + text[at:]


def _in_a_header(text: str, rng: random.Random, spell: Callable[[re.Match[str]], str]) -> str:
    headers = list(_CLASS_HEADER.finditer(text))
    if not headers:
        return text
    header = rng.choice(headers)
    return text[:header.start()] + spell(header) + text[header.end():]


def _form_feeds(text: str, rng: random.Random) -> str:
    where = rng.randrange(4)
    if where == 0:  # before a line's indentation, or on a line of its own
        return _at_random_line(text, rng, rng.choice(["\x0c", "\x0c\n", "\x0c\x0c"]))
    if where == 1:
        return _in_a_header(text, rng, lambda m: f"{m[1]}\x0cclass {m[2]}(")
    if where == 2:
        return _in_a_header(text, rng, lambda m: f"{m[1]}class\x0c{m[2]}\x0c(")
    # A vertical tab is no space to the parser (a syntax error, reported alike).
    return _in_a_header(text, rng, lambda m: f"{m[1]}\x0bclass {m[2]}(")


def _line_endings(text: str, rng: random.Random) -> str:
    ending = rng.choice(["\r", "\r\n", "mixed"])
    if ending != "mixed":
        return text.replace("\n", ending)
    return "".join(line + rng.choice(["\n", "\r", "\r\n"])
                   for line in text.split("\n")[:-1]) + text.split("\n")[-1]


def _continuations(text: str, rng: random.Random) -> str:
    where = rng.randrange(3)
    if where == 0:  # a line holding only a backslash (at column 0 it takes the next line's indent)
        return _at_random_line(text, rng, rng.choice(["\\\n", "\\\n", "    \\\n"]))
    if where == 1:
        return _in_a_header(text, rng, lambda m: f"{m[1]}class \\\n    {m[2]} \\\n(")
    return _in_a_header(text, rng, lambda m: f"{m[1]}class\\\n{m[2]}(")


def _comments(text: str, rng: random.Random) -> str:
    where = rng.randrange(3)
    if where == 0:
        line = rng.choice(["\n", "# a comment\n", "    # an indented comment\n",
                           "# class Fake(torch.autograd.Function):\n", "        \n",
                           "#: ) ] } ( [ {\n"])
        return _at_random_line(text, rng, line)
    if where == 1:  # a comment among the bases
        note = rng.choice(["  # noqa: E501", "  # see f(): it matters", "  # ([{"])
        return _in_a_header(text, rng, lambda m: f"{m[1]}class {m[2]}({note}\n{m[1]}    ")
    return text + rng.choice(["\n# trailing comment", "\n\n\n", "\n#"])


def _deep_nesting(text: str, rng: random.Random) -> str:
    returns = list(_RETURN.finditer(text))
    if not returns:
        return text
    site = rng.choice(returns)
    depth = rng.choice([10, 100, 900, 1000, 2000])
    if rng.random() < 0.5:  # `return ------x`: the parser's deepest trees
        return text[:site.end()] + rng.choice("-+~") * depth + text[site.end():]
    chain = f"{site[1]}_deep = 0{' + 0' * depth}\n"  # a long binary chain before it
    return text[:site.start()] + chain + text[site.start():]


def _new_syntax(text: str, rng: random.Random) -> str:
    """Python 3.12+ syntax: a syntax error before 3.12, alike everywhere."""
    where = rng.randrange(3)
    if where == 0:
        return _in_a_header(text, rng, lambda m: f"{m[1]}class {m[2]}[T](")
    if where == 1:
        return text + "\ntype Alias = list[int]\n"
    return text + "\n\ndef first[T](items: list[T]) -> T:\n    return items[0]\n"


def _tabs(text: str, rng: random.Random) -> str:
    return text.replace("    ", "\t")


MUTATIONS: dict[str, Callable[[str, random.Random], str]] = {
    "form feeds": _form_feeds, "line endings": _line_endings,
    "continuations": _continuations, "comments": _comments, "deep nesting": _deep_nesting,
    "3.12 syntax": _new_syntax, "tabs": _tabs,
}


def _padded(text: str, rng: random.Random) -> str:
    """Past SPARSE_MIN_BYTES (the sparse parse), before, after or between
    the top-level statements: code no rule reads, and a few blocks that
    look like Functions only to a scan of lines (column-0 lines in strings
    and brackets)."""
    plain = [f"def filler_{n}(x):\n    return x + {n}\n\n\n" for n in range(SPARSE_MIN_BYTES // 30)]
    for n in range(rng.randrange(4)):
        plain.insert(rng.randrange(len(plain)), FILLER.format(n=n))
    filler = "".join(plain)
    where = rng.randrange(3)
    if where == 0:
        return filler + text
    if where == 1:
        return text + ("" if text.endswith("\n") else "\n") + filler
    tops = [m.start() for m in re.finditer(r"^(?:class|def|@|if|try) ", text, re.M)]
    at = rng.choice(tops) if tops else len(text)
    return text[:at] + filler + text[at:]


def mutant(seed: int) -> tuple[str, str]:
    """(what was done, the source) of the seed-th mutant: a seed file with
    one to three mutations, padded past the sparse threshold half the time."""
    rng = random.Random(seed)
    path = rng.choice(SEED_FILES)
    text = path.read_text(encoding="utf-8")
    done = [path.name]
    for name in rng.sample(sorted(MUTATIONS), rng.randint(1, 3)):
        text = MUTATIONS[name](text, rng)
        done.append(name)
    if rng.random() < 0.5:
        text = _padded(text, rng)
        done.append("padded")
    return " + ".join(done), text


# A test suite beside the mutant: tree scans apply AGF301 to its Functions.
_TEST_FILE = "def test_nothing():\n    assert True\n"


def disagreement(text: str, directory: Path) -> str | None:
    """How the findings for `text` (as a file of `directory`) differ between
    a directory scan, a scan without the prefilter, and the file named
    alone (tree-only rules left out); None when they agree."""
    path = directory / "mutant.py"
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    (directory / "test_suite.py").write_text(_TEST_FILE)
    inputs = [SourceInput(p, str(p), ALL_CODES) for p in sorted(directory.glob("*.py"))]
    runs = {
        "scan": lint_inputs(inputs, scan_tree=True, jobs=1),
        "--no-prefilter": lint_inputs(inputs, scan_tree=True, prefilter=False, jobs=1),
        "named": lint_inputs([SourceInput(path, str(path), ALL_CODES, explicit=True)], jobs=1),
    }
    for label, result in runs.items():
        if result.errors:
            return f"{label}: {result.errors}"
    rows = {label: [(f.line, f.column, f.code, f.message) for f in result.findings
                    if f.path == str(path)]
            for label, result in runs.items()}
    if rows["scan"] != rows["--no-prefilter"]:
        if not _unread_syntax_error(text, directory, rows["scan"], rows["--no-prefilter"]):
            return _difference("scan", "--no-prefilter", rows)
        # A file named alone is parsed whole: it fails as the whole parse does.
        return None if rows["named"] == rows["--no-prefilter"] else \
            _difference("named", "--no-prefilter", rows)
    for label in ("scan", "named"):
        rows[label] = [row for row in rows[label] if row[2] not in TREE_ONLY_CODES]
    if rows["scan"] != rows["named"]:
        return _difference("scan", "named", rows)
    return None


def _unread_syntax_error(text: str, directory: Path, scanned: list[tuple],
                         whole: list[tuple]) -> bool:
    """Whether the runs differ only as RULES.md lets them: the whole parse
    fails on a syntax error in a top-level statement the sparse parse did
    not read (AGF000 covers what the run reads), and without the statements
    that hold the errors the whole parse reports what the scan reported, or
    more (the broken statements' text, such as a fake's registration, may
    leave the scan unsure: unknown is silent)."""
    from autograd_lint.engine.sparse import top_level_chunks

    if any(row[2] == "AGF000" for row in scanned):
        return False
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    path = directory / "mutant.py"
    for _ in range(5):  # one statement's error at a time, as the parser meets them
        if [row[2] for row in whole] != ["AGF000"]:
            return set(scanned) <= set(whole)
        error_line = whole[0][0] - 1
        chunk = next(((start, end) for start, end in top_level_chunks("\n".join(lines))
                      if start <= error_line < end), None)
        if chunk is None:
            return False
        lines[chunk[0]:chunk[1]] = [""] * (chunk[1] - chunk[0])
        path.write_bytes("\n".join(lines).encode("utf-8", "surrogatepass"))
        inputs = [SourceInput(p, str(p), ALL_CODES) for p in sorted(directory.glob("*.py"))]
        result = lint_inputs(inputs, scan_tree=True, prefilter=False, jobs=1)
        whole = [(f.line, f.column, f.code, f.message) for f in result.findings
                 if f.path == str(path)]
    return False


def _difference(one: str, other: str, rows: dict[str, list[tuple]]) -> str:
    missing = [row[:3] for row in rows[other] if row not in rows[one]]
    extra = [row[:3] for row in rows[one] if row not in rows[other]]
    return f"{one} != {other}: missing {missing}, extra {extra}"


MUTANTS = 300


def test_scans_report_what_the_file_named_alone_reports(tmp_path: Path) -> None:
    failures = []
    for seed in range(MUTANTS):
        done, text = mutant(seed)
        problem = disagreement(text, tmp_path)
        if problem is not None:
            failures.append(f"seed {seed} ({done}): {problem}")
    assert not failures, f"{len(failures)} of {MUTANTS} mutants disagree:\n" + \
        "\n".join(failures[:10])


def test_piecewise_syntax_check_agrees_with_a_whole_parse(monkeypatch) -> None:
    """Files too large to parse whole are checked statement by statement
    (sparse.syntax_error): the same error, where a whole parse puts it."""
    import ast
    import warnings

    from autograd_lint.engine import sparse

    monkeypatch.setattr(sparse, "_CHECK_PIECE_CHARS", 1)  # a piece per statement

    def described(error: Exception | None) -> tuple | None:
        return None if error is None else (type(error).__name__, str(error))

    for seed in range(MUTANTS):
        done, text = mutant(seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                ast.parse(text)
                whole = None
            except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
                whole = exc
        assert described(sparse.syntax_error(text, "<unknown>")) == described(whole), \
            f"seed {seed} ({done})"


def test_a_form_feed_line_does_not_shift_the_lines_calls_are_read_from(tmp_path: Path) -> None:
    # str.splitlines breaks at \f (and \v, \x1c-\x1e, \x85, \u2028/9) where
    # the parser sees a space: a scan that cut lines so read the wrong ones
    # and lost the legacy-call findings after it.
    text = (Path(__file__).parent / "fixtures" / "rules" / "AGF105.py").read_text()
    text = text.replace("\n\n\ndef legacy_call", "\n\x0c\n\ndef legacy_call", 1)
    assert disagreement(text, tmp_path) is None
    named = lint_inputs([SourceInput(tmp_path / "mutant.py", str(tmp_path / "mutant.py"),
                                     frozenset({"AGF105"}), explicit=True)], jobs=1)
    assert [f.line for f in named.findings] == [19, 23, 27, 31]
