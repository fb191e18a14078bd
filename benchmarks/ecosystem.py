"""Ecosystem check, ruff's way: every rule on pinned real projects, two halves.

    python benchmarks/ecosystem.py [--dir benchmarks/.corpus] [--half tuning|held-out]
                                   [--before PYTHON] [--update] [--unjudged FILE] [PROJECT ...]

Downloads each pinned project from the package index (the source
distribution, else a wheel: the .py files are what matter), checks each
unpacked tree with every static rule (`--select ALL`, as `check TREE
--isolated` runs it), and compares every finding with the adjudication
committed in `benchmarks/ecosystem/verdicts.tsv` (a stable fingerprint of the
finding, tp / fp / debatable, one line of why).

The projects are split in two halves by a hash of their name. Refine the
analysis on the **tuning** half only; the **held-out** half is measured,
adjudicated and reported, never used to choose a fix (a fix that helps one
half and not the other is fitting).

Prints, from this one run, for each half:
- per tier: strict precision tp / (tp + fp + debatable) and lenient
  tp / (tp + fp), against the tier's bar (RULES.md, "Tiers": correctness
  strict >= 0.90 and lenient >= 0.97; every other tier lenient >= 0.90),
  with the findings not yet adjudicated counted apart (a change is not done
  while any is left);
- per rule, the same;
- the findings added and removed against `benchmarks/ecosystem/findings.tsv`
  (the committed list of the last accepted run), to read before a commit.

`--before PYTHON` also runs the same projects with the autograd-lint that
interpreter has installed (an earlier commit, `pip install -e` of a
worktree) and prints its tables first: before and after, in one run. Codes
are placed in tiers by this version's registry.

--update rewrites findings.tsv with this run's findings. A benchmark, not a
test: it downloads.
"""
from __future__ import annotations

import argparse
import csv
import hashlib
import json
import subprocess
import sys
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path

from _packages import download, unpack

HERE = Path(__file__).parent / "ecosystem"
VERDICTS = HERE / "verdicts.tsv"
FINDINGS = HERE / "findings.tsv"

KERNEL, TRAINING, INFERENCE, QUANTIZATION, RESEARCH, OPS = (
    "kernel", "training", "inference", "quantization", "research", "ops")

# (pinned requirement, domain). Chosen for breadth over six domains: kernel
# libraries (Triton and CUDA wrappers: attention, norms, losses, MoE, state
# spaces), LLM training and distributed stacks, inference engines,
# quantization, research and scientific code (vision, 3D and rendering,
# graphs, spiking networks, audio, geometry, optimisation layers), and
# custom-op libraries. Every project here defines Functions or custom ops.
PROJECTS: list[tuple[str, str]] = [
    # -- kernel libraries ------------------------------------------------------
    ("liger-kernel==0.8.5", KERNEL),
    ("fla-core==0.6.0", KERNEL),
    ("xformers==0.0.35", KERNEL),
    ("mamba-ssm==2.3.1", KERNEL),
    ("unsloth==2026.3.4", KERNEL),
    ("cut-cross-entropy==25.1.1", KERNEL),
    ("flag-gems==5.0.2", KERNEL),
    ("spconv==2.3.8", KERNEL),
    ("causal-conv1d==1.7.0", KERNEL),
    ("flash-attn==2.8.3.post2", KERNEL),
    ("natten==0.21.7", KERNEL),
    ("lightning-attn==0.0.5", KERNEL),
    ("native-sparse-attention-pytorch==0.2.3", KERNEL),
    ("pytorch-fast-transformers==0.4.0", KERNEL),
    ("memory-efficient-attention-pytorch==0.1.6", KERNEL),
    ("flash-cosine-sim-attention==0.2.2", KERNEL),
    ("ring-attention-pytorch==0.5.20", KERNEL),
    ("megablocks==0.10.0", KERNEL),
    ("grouped-gemm==0.3.0", KERNEL),
    ("stanford-stk==0.7.1", KERNEL),
    ("mlstm-kernels==2.0.6", KERNEL),
    ("pytorch-block-sparse==0.1.2", KERNEL),
    # -- LLM training and distributed stacks -----------------------------------
    ("deepspeed==0.19.8", TRAINING),
    ("colossalai==0.5.0", TRAINING),
    ("megatron-core==0.16.1", TRAINING),
    ("peft==0.21.2", TRAINING),
    ("unsloth-zoo==2026.10.9", TRAINING),
    ("nanotron==0.4", TRAINING),
    ("fairscale==0.4.13", TRAINING),
    ("horovod==0.28.1", TRAINING),
    ("bagua==0.9.2", TRAINING),
    ("torchrec==1.9.2", TRAINING),
    ("nemo-toolkit==3.0.0", TRAINING),
    ("verl==0.9.1", TRAINING),
    ("torchtitan==0.3.0", TRAINING),
    ("axolotl==0.21.0", TRAINING),
    # -- inference engines -------------------------------------------------------
    ("sglang==0.5.10.post1", INFERENCE),
    ("rwkv==0.8.32", INFERENCE),
    ("petals==2.2.0.post1", INFERENCE),
    ("vllm-flash-attn==2.6.2", INFERENCE),
    ("torch-tensorrt==2.14.0", INFERENCE),
    # -- quantization ------------------------------------------------------------
    ("torchao==0.18.0", QUANTIZATION),
    ("bitsandbytes==0.42.0", QUANTIZATION),
    ("hqq==0.2.8.post1", QUANTIZATION),
    ("optimum-quanto==0.2.7", QUANTIZATION),
    ("nvidia-modelopt==0.47.0", QUANTIZATION),
    ("auto-gptq==0.7.1", QUANTIZATION),
    ("gptqmodel==7.7.0", QUANTIZATION),
    ("autoawq==0.2.9", QUANTIZATION),
    ("aqlm==1.1.7", QUANTIZATION),
    ("gemlite==0.6.0.post2", QUANTIZATION),
    ("brevitas==0.13.4", QUANTIZATION),
    ("neural-compressor==3.10", QUANTIZATION),
    ("qtorch==0.3.0", QUANTIZATION),
    ("bitblas==0.1.0.post1", QUANTIZATION),
    # -- research and scientific code -------------------------------------------
    ("e3nn==0.6.0", RESEARCH),
    ("kornia==0.9.0", RESEARCH),
    ("gpytorch==1.15.2", RESEARCH),
    ("pyro-ppl==1.9.2", RESEARCH),
    ("torchdiffeq==0.2.5", RESEARCH),
    ("torchsde==0.2.6", RESEARCH),
    ("rotary-embedding-torch==0.9.1", RESEARCH),
    ("x-transformers==2.31.10", RESEARCH),
    ("torch-harmonics==0.8.0", RESEARCH),
    ("torch-geometric==2.8.1", RESEARCH),
    ("mmcv==2.2.0", RESEARCH),
    ("transformers==5.24.0", RESEARCH),
    ("diffusers==0.42.1", RESEARCH),
    ("timm==1.0.31", RESEARCH),
    ("efficientnet-pytorch==0.7.1", RESEARCH),
    ("lightly==1.6.0", RESEARCH),
    ("solo-learn==1.0.2", RESEARCH),
    ("fairseq==0.12.2", RESEARCH),
    ("speechbrain==1.1.2", RESEARCH),
    ("snntorch==1.0.0", RESEARCH),
    ("spikingjelly==2.0.0", RESEARCH),
    ("norse==1.1.0", RESEARCH),
    ("cvxpylayers==1.2.0", RESEARCH),
    ("qpth==0.0.18", RESEARCH),
    ("theseus-ai==0.2.3", RESEARCH),
    ("pypose==0.9.5", RESEARCH),
    ("nerfacc==0.5.3", RESEARCH),
    ("gsplat==1.5.3", RESEARCH),
    ("pytorch3d==0.7.4", RESEARCH),
    ("pykeops==2.3", RESEARCH),
    ("geomloss==0.3.1", RESEARCH),
    ("torchkbnufft==1.5.2", RESEARCH),
    ("pytorch-wavelets==1.3.0", RESEARCH),
    ("kymatio==0.3.0", RESEARCH),
    ("dgl==2.2.1", RESEARCH),
    ("torchdrug==0.2.1", RESEARCH),
    ("pytorch-tabnet==4.1.0", RESEARCH),
    ("entmax==1.3", RESEARCH),
    ("torchsort==0.1.10", RESEARCH),
    ("torchdyn==1.0.6", RESEARCH),
    ("monai==1.6.1", RESEARCH),
    ("warp-rnnt==0.7.0", RESEARCH),
    ("k2==1.24.1", RESEARCH),
    ("MinkowskiEngine==0.5.4", RESEARCH),
    ("xlstm==2.0.6", RESEARCH),
    ("torch-points-kernels==0.7.0", RESEARCH),
    ("neuraloperator==2.0.0", RESEARCH),
    ("espnet==202611", RESEARCH),
    # -- custom-op libraries -----------------------------------------------------
    ("vllm==0.33.0", OPS),
    ("flashinfer-python==0.7.2.post1", OPS),
    ("transformer-engine==2.20.2", OPS),
    ("quack-kernels==0.6.5", OPS),
]

VERDICT_KINDS = ("tp", "fp", "debatable")
TUNING, HELD_OUT = "tuning", "held-out"
TIERS = ("correctness", "pedantic", "coverage", "style")
# RULES.md, "Tiers": (strict bar, lenient bar) of each tier.
BARS: dict[str, tuple[float | None, float]] = {
    "correctness": (0.90, 0.97), "pedantic": (None, 0.90), "coverage": (None, 0.90),
    "style": (None, 0.90),
}


def project_name(requirement: str) -> str:
    return requirement.split("==")[0]


def half_of(name: str) -> str:
    """Which half a project is in: a hash of its name, fixed for good."""
    return TUNING if int(hashlib.sha256(name.encode()).hexdigest(), 16) % 2 == 0 else HELD_OUT


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


def lint(project: str, tree: Path) -> tuple[list[Found], int, str]:
    """Every static rule over one tree, as `check TREE --isolated --select ALL`
    runs them (one pass also lists the Functions found)."""
    from autograd_lint.core.files import iter_python_files
    from autograd_lint.core.registry import RULES
    from autograd_lint.engine.lint import SourceInput, lint_inputs

    codes = frozenset(code for code, rule in RULES.items() if rule.family != "dynamic")
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


def _share(numerator: int, denominator: int) -> str:
    return f"{numerator / denominator:.3f}" if denominator else "-"


def _meets(counts: Counter[str], tier: str) -> str:
    strict_bar, lenient_bar = BARS[tier]
    judged = counts["tp"] + counts["fp"] + counts["debatable"]
    decided = counts["tp"] + counts["fp"]
    if counts["unjudged"] or not judged:
        return "?" if counts["unjudged"] else "-"
    ok = (not decided or counts["tp"] / decided >= lenient_bar) and (
        strict_bar is None or counts["tp"] / judged >= strict_bar)
    return "yes" if ok else "NO"


def precision_tables(found: list[Found], verdicts: dict[str, tuple[str, str]]) -> list[str]:
    """Per tier (with its bar), then per rule: strict and lenient precision."""
    from autograd_lint.core.registry import RULES

    by_tier: dict[str, Counter[str]] = defaultdict(Counter)
    by_rule: dict[str, Counter[str]] = defaultdict(Counter)
    for item in found:
        verdict = verdicts.get(item.fingerprint, ("unjudged", ""))[0]
        tier = RULES[item.code].tier if item.code in RULES else "?"
        by_tier[tier][verdict] += 1
        by_rule[item.code][verdict] += 1
    head = (f"{'':<12} {'findings':>8} {'tp':>5} {'fp':>5} {'debat.':>6} {'unjudged':>8} "
            f"{'strict':>7} {'lenient':>7}")
    out = [head.replace("            ", "tier        ", 1) + "  bar met"]
    for tier in TIERS:
        c = by_tier.get(tier, Counter())
        out.append(_row(tier, c) + f"  {_meets(c, tier)}")
    out.append("")
    out.append(head.replace("            ", "rule        ", 1))
    for code in sorted(by_rule):
        out.append(_row(code, by_rule[code]))
    return out


def _row(label: str, c: Counter[str]) -> str:
    judged = c["tp"] + c["fp"] + c["debatable"]
    return (f"{label:<12} {sum(c.values()):>8} {c['tp']:>5} {c['fp']:>5} {c['debatable']:>6} "
            f"{c['unjudged']:>8} {_share(c['tp'], judged):>7} "
            f"{_share(c['tp'], c['tp'] + c['fp']):>7}")


def run_projects(chosen: list[tuple[str, str]], corpus: Path, quiet: bool = False
                 ) -> list[Found]:
    """Lint every chosen project with the autograd-lint this Python imports."""
    found: list[Found] = []
    if not quiet:
        print(f"{'project':<42} {'domain':<12} {'half':<8} {'files':>6} {'Functions':>9} "
              f"{'findings':>8}  notes")
    for requirement, domain in chosen:
        archive = download(requirement, corpus / "downloads")
        name = project_name(requirement)
        if archive is None:
            print(f"{requirement:<42} {domain:<12} (could not download)", file=sys.stderr)
            continue
        tree = unpack(archive, corpus / "src")
        items, functions, note = lint(name, tree)
        found += items
        if not quiet:
            files = sum(1 for _ in tree.rglob("*.py"))
            print(f"{requirement:<42} {domain:<12} {half_of(name):<8} {files:>6} "
                  f"{functions:>9} {len(items):>8}  {note}", flush=True)
    return found


def run_before(python: str, chosen: list[tuple[str, str]], corpus: Path) -> list[Found]:
    """The same projects through another installed autograd-lint (a child
    process of that interpreter runs this script with `--emit`)."""
    names = [project_name(requirement) for requirement, _ in chosen]
    proc = subprocess.run([python, __file__, "--emit", "--dir", str(corpus), *names],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"the --before run failed:\n{proc.stderr[-3000:]}")
    return [Found(**row) for row in json.loads(proc.stdout)]


def print_halves(title: str, found: list[Found], verdicts: dict[str, tuple[str, str]]) -> None:
    for half in (TUNING, HELD_OUT):
        items = [item for item in found if half_of(item.project) == half]
        projects = len({item.project for item in items})
        print(f"\n== {title}: {half} half ({len(items)} findings in {projects} projects "
              f"with findings) ==")
        print("\n".join(precision_tables(items, verdicts)))


def print_changes(found: list[Found], previous: dict[str, list[str]],
                  verdicts: dict[str, tuple[str, str]]) -> None:
    now = {item.fingerprint: item for item in found}
    added = [now[k] for k in now if k not in previous]
    removed = [previous[k] for k in previous if k not in now]
    print(f"\nagainst {FINDINGS.name}: {len(added)} added, {len(removed)} removed")
    for item in added:
        verdict = verdicts.get(item.fingerprint, ("unjudged", ""))[0]
        print(f"  + {item.fingerprint} {verdict:<9} {half_of(item.project):<8} {item.project} "
              f"{item.path}:{item.line} {item.code} {item.message[:90]}")
    for row in removed:
        verdict = verdicts.get(row[0], ("unjudged", ""))[0]
        print(f"  - {row[0]} {verdict:<9} {half_of(row[1]):<8} {row[1]} {row[2]} {row[3]} "
              f"{row[5][:90]}")


def save_findings(path: Path, found: list[Found]) -> None:
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle, delimiter="\t", lineterminator="\n")
        for item in found:
            writer.writerow([*item.row(), half_of(item.project)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("projects", nargs="*", help="names from the pinned list (default: all)")
    parser.add_argument("--dir", type=Path, default=Path(__file__).parent / ".corpus")
    parser.add_argument("--half", choices=(TUNING, HELD_OUT),
                        help="only the projects of one half")
    parser.add_argument("--before", metavar="PYTHON",
                        help="also run an interpreter with an earlier autograd-lint installed")
    parser.add_argument("--update", action="store_true",
                        help="rewrite ecosystem/findings.tsv with this run's findings")
    parser.add_argument("--unjudged", type=Path, metavar="FILE",
                        help="write the findings without a verdict to FILE (TSV)")
    parser.add_argument("--save", type=Path, metavar="FILE",
                        help="write this run's findings to FILE (TSV, with each one's half); "
                             "with --before, that run's beside it (NAME.before.tsv)")
    parser.add_argument("--emit", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    chosen = [(req, domain) for req, domain in PROJECTS
              if (not args.projects or project_name(req) in args.projects)
              and (args.half is None or half_of(project_name(req)) == args.half)]
    if args.emit:  # the child of --before: findings as JSON, nothing else
        json.dump([asdict(item) for item in run_projects(chosen, args.dir, quiet=True)],
                  sys.stdout)
        return
    before = run_before(args.before, chosen, args.dir) if args.before else None
    found = run_projects(chosen, args.dir)
    verdicts = read_verdicts()
    domains = Counter(domain for _, domain in chosen)
    halves = Counter(half_of(project_name(req)) for req, _ in chosen)
    print(f"\n{len(chosen)} projects: " + ", ".join(f"{n} {d}" for d, n in domains.items()) +
          f"; {halves[TUNING]} tuning, {halves[HELD_OUT]} held-out")
    if before is not None:
        print_halves("before", before, verdicts)
    print_halves("after" if before is not None else "this run", found, verdicts)
    previous = read_previous()
    names = {project_name(req) for req, _ in chosen}
    previous = {k: v for k, v in previous.items() if v[1] in names}
    print_changes(found, previous, verdicts)
    if args.unjudged:
        with args.unjudged.open("w", newline="") as handle:
            writer = csv.writer(handle, delimiter="\t", lineterminator="\n")
            pool = found + (before or [])
            done: set[str] = set()
            for item in pool:
                if item.fingerprint not in verdicts and item.fingerprint not in done:
                    done.add(item.fingerprint)
                    writer.writerow([*item.row(), half_of(item.project), str(args.dir / "src")])
    if args.save:
        save_findings(args.save, found)
        if before is not None:  # beside it: what the earlier install found
            save_findings(args.save.with_name(f"{args.save.stem}.before{args.save.suffix}"),
                          before)
    if args.update:
        write_findings(found)


if __name__ == "__main__":
    main()
