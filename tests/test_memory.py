"""Memory stays bounded on a 50 MB source file.

A whole parse of such a file builds tens of millions of AST nodes (gigabytes,
minutes). The engine parses files that large one top-level statement at a
time and keeps only the statements that can matter, so the peak stays a few
times the size of the file's text, whether the file is named or found in a
directory walk.
"""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from .helpers import leaky_function

# The child measures its own peak (ru_maxrss is in KiB on Linux).
MEASURE = textwrap.dedent('''\
    import json, resource, sys
    from autograd_lint.cli.entry import main
    code = main(sys.argv[1:])
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"code": code, "peak_mib": peak / 1024}), file=sys.stderr)
    ''')


@pytest.fixture(scope="module")
def huge_module(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("huge")
    path = directory / "generated_tables.py"
    row = "    ({0}, {0}.5, 'entry_{0}', [{0}, {0}, {0}]),\n"
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("import torch\n\n\n" + leaky_function("First") + "\n\n")
        written = 0
        block = 0
        while written < 50 * 1024 * 1024:
            rows = "".join(row.format(i) for i in range(block * 2000, block * 2000 + 2000))
            text = f"TABLE_{block} = [\n{rows}]\n\n\ndef lookup_{block}(i):\n" \
                   f"    return TABLE_{block}[i]\n\n\n"
            handle.write(text)
            written += len(text)
            block += 1
        handle.write(leaky_function("Last"))
    return path


def run_measured(args: list[str], cwd: Path) -> tuple[subprocess.CompletedProcess[str], dict]:
    proc = subprocess.run([sys.executable, "-c", MEASURE, *args], capture_output=True,
                          text=True, cwd=cwd, timeout=300)
    return proc, json.loads(proc.stderr.strip().splitlines()[-1])


@pytest.mark.parametrize("how", ["named", "walked"])
def test_a_50_mb_file_is_checked_in_bounded_memory(huge_module: Path, how: str) -> None:
    assert huge_module.stat().st_size >= 50 * 1024 * 1024
    target = huge_module if how == "named" else huge_module.parent
    proc, measured = run_measured(["check", str(target), "--no-cache", "--isolated",
                                   "--select", "AGF001", "--format", "json"], huge_module.parent)
    assert measured["code"] == 1, proc.stderr[-2000:]
    findings = json.loads(proc.stdout)
    # Both Functions, at the very start and the very end of the file, were read.
    assert sorted(f["function"] for f in findings) == ["First", "Last"]
    assert findings[-1]["line"] > 500_000
    # A whole parse of this file peaks above 10 GiB; sparse parsing stays near
    # a few copies of the text. The bound leaves room for allocator noise.
    assert measured["peak_mib"] < 640, measured
