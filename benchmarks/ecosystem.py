"""Ecosystem check, ruff's way: the default rules on pinned real projects.

    python benchmarks/ecosystem.py [--dir benchmarks/.corpus] [--update] [PROJECT ...]

Downloads each pinned project from the package index (`pip download
--no-deps`: the source distribution, else the wheel; the .py files are what
matter), checks each unpacked tree with the default rules (the custom-op
libraries, kind "ops", with the default custom-op rules only), and compares every
finding with the adjudication committed in `benchmarks/ecosystem/verdicts.tsv`
(a stable fingerprint of the finding, tp / fp / debatable, one line of why).

Prints, from this one run:
- precision per rule and overall: tp / (tp + fp + debatable), with the
  findings not yet adjudicated counted apart (they must be judged: a change
  is not done while any is left);
- AGF301 findings per Function on the kernel libraries;
- the findings added and removed against `benchmarks/ecosystem/findings.tsv`
  (the committed list of the last accepted run), to read before a commit.

--update rewrites findings.tsv with this run's findings. A benchmark, not a
test: it downloads.
"""
from __future__ import annotations

import argparse
import csv
import hashlib
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

from _packages import download, unpack

HERE = Path(__file__).parent / "ecosystem"
VERDICTS = HERE / "verdicts.tsv"
FINDINGS = HERE / "findings.tsv"

# (pinned requirement, kind). Chosen for breadth: kernel libraries (Triton and
# CUDA wrappers), research libraries, training frameworks, inference engines.
PROJECTS: list[tuple[str, str]] = [
    ("liger-kernel==0.8.5", "kernel"),
    ("fla-core==0.6.0", "kernel"),
    ("xformers==0.0.35", "kernel"),
    ("mamba-ssm==2.3.1", "kernel"),
    ("unsloth==2026.3.4", "kernel"),
    ("torchao==0.18.0", "kernel"),
    ("bitsandbytes==0.42.0", "kernel"),
    ("cut-cross-entropy==25.1.1", "kernel"),
    ("flag-gems==5.0.2", "kernel"),
    ("hqq==0.2.8.post1", "kernel"),
    ("optimum-quanto==0.2.7", "kernel"),
    ("nvidia-modelopt==0.47.0", "kernel"),
    ("spconv==2.3.8", "kernel"),
    ("e3nn==0.6.0", "research"),
    ("kornia==0.9.0", "research"),
    ("gpytorch==1.15.2", "research"),
    ("pyro-ppl==1.9.2", "research"),
    ("torchdiffeq==0.2.5", "research"),
    ("torchsde==0.2.6", "research"),
    ("rotary-embedding-torch==0.9.1", "research"),
    ("vector-quantize-pytorch==1.32.0", "research"),
    ("x-transformers==2.31.10", "research"),
    ("local-attention==1.11.2", "research"),
    ("geoopt==0.5.0", "research"),
    ("torch-harmonics==0.8.0", "research"),
    ("torch-geometric==2.8.1", "research"),
    ("deepspeed==0.19.8", "training"),
    ("colossalai==0.5.0", "training"),
    ("megatron-core==0.16.1", "training"),
    ("peft==0.21.2", "training"),
    ("sglang==0.5.10.post1", "inference"),
    # Custom-operator libraries, checked with the custom-op rules (AGF4xx) only.
    ("vllm==0.33.0", "ops"),
    ("flashinfer-python==0.7.2.post1", "ops"),
    ("transformer-engine==2.20.2", "ops"),
]

VERDICT_KINDS = ("tp", "fp", "debatable")


@dataclass(frozen=True)
class Found:
    project: str
    path: str  # relative to the unpacked tree
    line: int
    code: str
    function: str
    message: str
    fingerprint: str

    def row(self) -> list[str]:
        return [self.fingerprint, self.project, f"{self.path}:{self.line}", self.code,
                self.function, self.message]


def fingerprint(project: str, path: str, code: str, function: str, source_line: str,
                occurrence: int) -> str:
    """Stable across runs and tool versions: what is flagged, where, never the
    message (wording changes) or the line number alone (a pinned file does
    not move, but two findings may share a line)."""
    key = "\x1f".join((project, path, code, function, source_line.strip(), str(occurrence)))
    return hashlib.sha1(key.encode()).hexdigest()[:16]


def lint(project: str, tree: Path, kind: str = "") -> tuple[list[Found], int, str]:
    """The default rules over one tree, as `check TREE --isolated` runs them
    (one pass also lists the Functions found); the default custom-op rules
    only for an "ops" project."""
    from autograd_lint.engine import SourceInput, lint_inputs
    from autograd_lint.files import iter_python_files
    from autograd_lint.registry import default_codes, family_codes

    codes = default_codes()
    if kind == "ops":
        codes &= family_codes("custom_ops")
    inputs = [SourceInput(p, p, codes) for p in iter_python_files(tree, lambda p, d: False)]
    result = lint_inputs(inputs, scan_tree=True, functions=True)
    found: list[Found] = []
    seen: Counter[tuple[str, str, str, str]] = Counter()
    lines_of: dict[str, list[str]] = {}
    for finding in result.findings:  # sorted by path and position
        relative = Path(finding.path).resolve().relative_to(tree.resolve()).as_posix()
        if relative not in lines_of:
            lines_of[relative] = Path(finding.path).read_text(
                encoding="utf-8", errors="replace").splitlines()
        lines = lines_of[relative]
        source_line = lines[finding.line - 1] if 0 < finding.line <= len(lines) else ""
        key = (relative, finding.code, finding.function or "", source_line.strip())
        seen[key] += 1
        found.append(Found(project, relative, finding.line, finding.code, finding.function or "",
                           finding.message, fingerprint(project, *key, seen[key])))
    note = f"{len(result.errors)} files not checked" if result.errors else ""
    return found, len(result.functions), note


def read_verdicts() -> dict[str, tuple[str, str]]:
    verdicts: dict[str, tuple[str, str]] = {}
    if VERDICTS.exists():
        with VERDICTS.open(newline="") as handle:
            for row in csv.reader(handle, delimiter="\t"):
                if not row or row[0].startswith("#") or row[0] == "fingerprint":
                    continue
                if row[1] not in VERDICT_KINDS:
                    raise SystemExit(f"{VERDICTS}: unknown verdict {row[1]!r} for {row[0]}")
                verdicts[row[0]] = (row[1], row[-1])
    return verdicts


def read_previous() -> dict[str, list[str]]:
    if not FINDINGS.exists():
        return {}
    with FINDINGS.open(newline="") as handle:
        return {row[0]: row for row in csv.reader(handle, delimiter="\t")
                if row and row[0] != "fingerprint"}


def write_findings(found: list[Found]) -> None:
    HERE.mkdir(parents=True, exist_ok=True)
    with FINDINGS.open("w", newline="") as handle:
        writer = csv.writer(handle, delimiter="\t", lineterminator="\n")
        writer.writerow(["fingerprint", "project", "where", "code", "function", "message"])
        for item in sorted(found, key=lambda f: (f.project, f.path, f.line, f.code)):
            writer.writerow(item.row())


def precision_table(found: list[Found], verdicts: dict[str, tuple[str, str]]) -> list[str]:
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for item in found:
        verdict = verdicts.get(item.fingerprint, ("unjudged", ""))[0]
        counts[item.code][verdict] += 1
        counts["all"][verdict] += 1
    out = [f"{'rule':<8} {'findings':>8} {'tp':>5} {'fp':>5} {'debat.':>6} {'unjudged':>8} "
           f"{'precision':>9}"]
    for code in sorted(counts, key=lambda c: (c == "all", c)):
        c = counts[code]
        judged = c["tp"] + c["fp"] + c["debatable"]
        share = f"{c['tp'] / judged:.2f}" if judged else "-"
        out.append(f"{code:<8} {sum(c.values()):>8} {c['tp']:>5} {c['fp']:>5} "
                   f"{c['debatable']:>6} {c['unjudged']:>8} {share:>9}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("projects", nargs="*", help="names from the pinned list (default: all)")
    parser.add_argument("--dir", type=Path, default=Path(__file__).parent / ".corpus")
    parser.add_argument("--update", action="store_true",
                        help="rewrite ecosystem/findings.tsv with this run's findings")
    parser.add_argument("--unjudged", type=Path, metavar="FILE",
                        help="write the findings without a verdict to FILE (TSV)")
    args = parser.parse_args()
    chosen = [(req, kind) for req, kind in PROJECTS
              if not args.projects or req.split("==")[0] in args.projects]
    found: list[Found] = []
    kernel_functions = kernel_agf301 = 0
    print(f"{'project':<36} {'kind':<9} {'files':>6} {'Functions':>9} {'findings':>8}  notes")
    for requirement, kind in chosen:
        archive = download(requirement, args.dir / "downloads")
        if archive is None:
            print(f"{requirement:<36} {kind:<9} (could not download)")
            continue
        tree = unpack(archive, args.dir / "src")
        name = requirement.split("==")[0]
        items, functions, note = lint(name, tree, kind)
        found += items
        if kind == "kernel":
            kernel_functions += functions
            kernel_agf301 += sum(item.code == "AGF301" for item in items)
        files = sum(1 for _ in tree.rglob("*.py"))
        print(f"{requirement:<36} {kind:<9} {files:>6} {functions:>9} {len(items):>8}  {note}")
    verdicts = read_verdicts()
    print()
    print("\n".join(precision_table(found, verdicts)))
    if kernel_functions:
        print(f"\nAGF301 on kernel libraries: {kernel_agf301} findings / {kernel_functions} "
              f"Functions = {kernel_agf301 / kernel_functions:.2f} per Function")
    previous = read_previous()
    if args.projects:  # compare only the projects that ran
        previous = {k: v for k, v in previous.items() if v[1] in args.projects}
    now = {item.fingerprint: item for item in found}
    added = [now[k] for k in now if k not in previous]
    removed = [previous[k] for k in previous if k not in now]
    print(f"\nagainst {FINDINGS.name}: {len(added)} added, {len(removed)} removed")
    for item in added:
        verdict = verdicts.get(item.fingerprint, ("unjudged", ""))[0]
        print(f"  + {item.fingerprint} {verdict:<9} {item.project} {item.path}:{item.line} "
              f"{item.code} {item.message[:100]}")
    for row in removed:
        verdict = verdicts.get(row[0], ("unjudged", ""))[0]
        print(f"  - {row[0]} {verdict:<9} {row[1]} {row[2]} {row[3]} {row[5][:100]}")
    if args.unjudged:
        with args.unjudged.open("w", newline="") as handle:
            writer = csv.writer(handle, delimiter="\t", lineterminator="\n")
            for item in found:
                if item.fingerprint not in verdicts:
                    writer.writerow([*item.row(), str(args.dir / "src")])
    if args.update:
        write_findings(found)


if __name__ == "__main__":
    main()
