"""Baselines: adopt the linter on an old codebase, fail only on new findings.

`--write-baseline FILE` records a fingerprint per current finding;
`--baseline FILE` drops the findings whose fingerprint is recorded. A
fingerprint is made of the rule, the file (relative to the baseline's
directory), the Function and the text of the finding's line with its
whitespace collapsed, plus its rank among findings that share all of those.
Line numbers are not part of it, so edits elsewhere in a file that shift
lines leave the baseline valid; editing the flagged line itself makes the
finding new, which is what a reviewer wants to see.
"""
from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from pathlib import Path

from .. import __version__
from ..core.config import ConfigError
from ..core.files import read_regular_file, write_inside_project
from ..core.findings import Finding
from ..core.lines import SourceLines

FORMAT_VERSION = 1


def fingerprints(findings: list[Finding], lines: SourceLines,
                 relative_to: str | os.PathLike[str]) -> list[str]:
    """One fingerprint per finding, in the findings' order."""
    root = os.path.abspath(relative_to)
    seen: Counter[str] = Counter()
    result = []
    for finding in findings:
        path = Path(os.path.relpath(os.path.abspath(finding.path), root)).as_posix()
        text = " ".join(lines.line(finding.path, finding.line).split())
        identity = "\0".join((finding.code, path, finding.function or "", text))
        rank = seen[identity]
        seen[identity] += 1
        key = f"{identity}\0{rank}".encode("utf-8", "surrogateescape")  # any file name
        digest = hashlib.sha256(key).hexdigest()[:20]
        result.append(digest)
    return result


def write_baseline(file: str, findings: list[Finding], lines: SourceLines) -> None:
    directory = os.path.dirname(os.path.abspath(file))
    prints = fingerprints(findings, lines, directory)
    entries = [{"fingerprint": fp, "code": f.code, "path": Path(os.path.relpath(
                   os.path.abspath(f.path), directory)).as_posix(),
                "line": f.line, "message": f.message}
               for f, fp in zip(findings, prints, strict=True)]
    data = {"tool": "autograd-lint", "tool_version": __version__,
            "format": FORMAT_VERSION, "findings": entries}
    try:
        write_inside_project(file, (json.dumps(data, indent=2) + "\n").encode("utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot write baseline {file}: {exc.strerror or exc}") from exc


def read_baseline(file: str) -> Counter[str]:
    """The recorded fingerprints (a multiset: identical lines may repeat)."""
    try:
        data = json.loads(read_regular_file(file).decode("utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"baseline not found: {file}") from None
    except OSError as exc:  # no permission, a FIFO or a device
        raise ConfigError(f"cannot read baseline {file}: {exc.strerror or exc}") from None
    except ValueError as exc:  # also bad UTF-8 and JSON, and overlong numbers
        raise ConfigError(f"cannot read baseline {file}: {exc}") from None
    except RecursionError:
        raise ConfigError(f"cannot read baseline {file}: it is nested too deeply "
                          "to be a baseline") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT_VERSION or \
            not isinstance(data.get("findings"), list) or \
            not all(isinstance(e, dict) and isinstance(e.get("fingerprint"), str)
                    for e in data["findings"]):
        raise ConfigError(f"{file} is not an autograd-lint baseline "
                          f"(format {FORMAT_VERSION}; write one with --write-baseline)")
    return Counter(entry["fingerprint"] for entry in data["findings"])


def new_findings(file: str, findings: list[Finding], lines: SourceLines) -> list[Finding]:
    """The findings the baseline does not record."""
    known = read_baseline(file)
    directory = os.path.dirname(os.path.abspath(file))
    fresh = []
    for finding, fp in zip(findings, fingerprints(findings, lines, directory), strict=True):
        if known[fp] > 0:
            known[fp] -= 1
        else:
            fresh.append(finding)
    return fresh
