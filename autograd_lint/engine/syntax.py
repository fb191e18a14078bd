"""Whether a file's text parses: decoding as the interpreter does, the parse
itself, and the AGF000 finding of a file that does not parse. (A file the
run reads only in part is checked in the parts it reads: RULES.md, AGF000.)
"""
from __future__ import annotations

import ast
import io
import sys
import tokenize
import warnings

from ..core.findings import Finding
from ..core.registry import RULES

_PYTHON = "{}.{}".format(*sys.version_info[:2])


def decode_source(data: bytes) -> str:
    """Decode like the interpreter does: BOM, then a coding cookie, then UTF-8."""
    from ..core.scan import wide_encoding

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
