"""`autograd-lint check`: which files and rules (the plan), the run, fixes,
the dynamic mode, and the report."""
from __future__ import annotations

import argparse
import gc
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from ..core.config import (
    ConfigError,
    ConfigFinder,
    FileConfig,
    Selection,
    drop_matching,
    load_config_file,
    matches_any,
    parse_torch_version,
    resolve_codes,
    validate_selector,
)
from ..core.findings import Finding, shown_finding, shown_text
from .arguments import COMMANDS, EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS

if TYPE_CHECKING:  # the engine loads only when a check runs
    import tempfile

    from ..core.lines import SourceLines
    from ..engine.lint import LintResult


def _flatten(groups: list[list[str]] | None) -> list[str]:
    return [item for group in groups or [] for item in group]


# ---------------------------------------------------------------------------
# check
# ---------------------------------------------------------------------------
class _Plan:
    """Configuration for each file of a `check` run."""

    def __init__(self, args: argparse.Namespace, err: TextIO) -> None:
        self.cwd = Path(os.getcwd())
        self.err = err
        self.finder: ConfigFinder | None = None
        self.fixed: FileConfig | None = None
        if args.isolated:
            self.fixed = FileConfig(root=self.cwd)
        elif args.config:
            self.fixed = load_config_file(Path(args.config))
        else:
            self.finder = ConfigFinder(
                self.cwd, warn=lambda message: err.write(f"autograd-lint: warning: {message}\n"))
        select = _flatten(args.select) if args.select is not None else None
        self.cli = Selection(
            select=None if select is None else [validate_selector(s, "--select") for s in select],
            extend_select=[validate_selector(s, "--extend-select")
                           for s in _flatten(args.extend_select)],
            ignore=[validate_selector(s, "--ignore") for s in _flatten(args.ignore)],
        )
        self.target_torch = parse_torch_version(args.target_torch, "--target-torch") \
            if args.target_torch else None
        self.exclude = _flatten(args.exclude) if args.exclude is not None else None
        self.extend_exclude = _flatten(args.extend_exclude)
        self.respect_gitignore: bool | None = args.respect_gitignore  # None: as configured
        self._codes: dict[tuple[int, frozenset[str]], frozenset[str]] = {}
        # The directory holding stdin's text, for `-`, and the file holding
        # it by the name shown (what the output reads).
        self.temporary: tempfile.TemporaryDirectory[str] | None = None
        self.shown_text: dict[str, str] = {}

    def config_for(self, path: str | Path, is_dir: bool | None = None) -> FileConfig:
        if self.fixed is not None:
            return self.fixed
        assert self.finder is not None
        return self.finder.for_path(path, is_dir=is_dir)

    def excluded(self, path: str | Path, is_dir: bool | None = None, *,
                 parents: bool = True) -> bool:
        config = self.config_for(path, is_dir)
        if self.exclude is not None:
            patterns = [*self.exclude, *config.extend_exclude, *self.extend_exclude]
            return bool(patterns) and matches_any(path, patterns, config.root, parents=parents)
        return config.is_excluded(path, self.extend_exclude, parents=parents)

    def walk_excluded(self, path: str, is_dir: bool) -> bool:
        """What a directory walk skips: the entry itself, not the folders the
        walk started from (`check examples/` lints what `examples` excludes)."""
        return self.excluded(path, is_dir, parents=False)

    def unreadable_folder(self, path: str, error: OSError) -> None:
        """A folder of the tree the user cannot list: skipped, as ruff skips it."""
        self.err.write(f"autograd-lint: warning: {shown_text(path)}: cannot read folder: "
                       f"{error.strerror or error}; skipped\n")

    def respects_gitignore(self, directory: str) -> bool:
        """Whether a scan of `directory` skips what git ignores (the command
        line, else the configuration that applies to it, as ruff reads it)."""
        if self.respect_gitignore is not None:
            return self.respect_gitignore
        return self.config_for(directory, is_dir=True).respect_gitignore

    def target_for(self, path: str | Path) -> tuple[int, int] | None:
        """The oldest torch the file's project supports: the command line's,
        else its configuration's (None: the newest known)."""
        return self.target_torch or self.config_for(path, is_dir=False).target_torch

    def codes_for(self, path: str | Path) -> frozenset[str]:
        config = self.config_for(path, is_dir=False)
        ignored = frozenset(config.ignored_for(path))
        key = (id(config), ignored)
        if key not in self._codes:
            codes = resolve_codes([config.selection, self.cli])
            self._codes[key] = drop_matching(codes, ignored)
        return self._codes[key]


def _command_hint(raw_path: str) -> str:
    """`chek`: a mistyped command rather than a missing path (ruff suggests so too)."""
    import difflib

    close = difflib.get_close_matches(raw_path, COMMANDS, n=1, cutoff=0.6)
    return f" (did you mean the command `{close[0]}`?)" if close else ""


def _collect_inputs(args: argparse.Namespace, plan: _Plan) -> list:
    from ..core.files import iter_python_files
    from ..engine.lint import SourceInput

    raw = args.paths or ["."]
    if "-" in raw:
        return _stdin_inputs(args, plan)
    if args.stdin_filename:
        raise ConfigError("--stdin-filename is for `-` (reading the file from stdin)")
    for raw_path in raw:
        if not os.path.exists(raw_path):
            raise ConfigError(f"path not found: {raw_path}{_command_hint(raw_path)}")
        if not os.path.isdir(raw_path) and not os.path.isfile(raw_path):
            # A FIFO or a device: reading it could wait forever.
            raise ConfigError(f"not a regular file or directory: {raw_path}")
    inputs: list[SourceInput] = []
    seen: set[str] = set()
    here = os.getcwd()

    # One folder's walk meets each file once: no key to make per file.
    one_walk = len(raw) == 1 and os.path.isdir(raw[0])

    def add(path: str, explicit: bool) -> None:
        # (one file named twice is one input)
        key = path if one_walk else os.path.normpath(os.path.join(here, path))
        if key not in seen:
            seen.add(key)
            inputs.append(SourceInput(path, path, plan.codes_for(path), explicit,
                                      target_torch=plan.target_for(path)))

    for raw_path in raw:
        path = os.fspath(Path(raw_path))  # as pathlib shows it: no "./" prefix
        if os.path.isdir(path):
            for found in iter_python_files(path, plan.walk_excluded, notebooks=True,
                                           respect_gitignore=plan.respects_gitignore(path),
                                           unreadable=plan.unreadable_folder):
                add(found, explicit=False)
        elif not (args.force_exclude and plan.excluded(path, False)):
            add(path, explicit=True)
    if inputs and all(i.explicit for i in inputs) and not args.no_project_context:
        from ..engine.context import context_inputs

        inputs += context_inputs(inputs, plan.excluded, seen)
    return inputs




def _stdin_inputs(args: argparse.Namespace, plan: _Plan) -> list:
    """`-`: the source comes from stdin, as ruff reads it, shown as
    --stdin-filename or `-`. It is checked under --stdin-filename's name (its
    module name, relative imports, configuration and project context are that
    file's), and kept in a temporary file (removed with the plan) that the
    output reads and the dynamic mode imports."""
    import tempfile

    from ..engine.lint import SourceInput

    if args.paths != ["-"]:
        raise ConfigError("`-` reads one file from stdin: name no other path with it")
    if args.fix or args.add_noqa:
        flag = "--fix" if args.fix else "--add-noqa"
        raise ConfigError(f"{flag} cannot write back to stdin; use --diff, or name the file")
    shown = args.stdin_filename or "-"
    plan.temporary = tempfile.TemporaryDirectory(prefix="autograd-lint-stdin-")
    name = os.path.basename(args.stdin_filename or "") or "stdin.py"
    path = os.path.join(plan.temporary.name, name)
    text = sys.stdin.buffer.read()
    with open(path, "wb") as handle:
        handle.write(text)
    where = args.stdin_filename or os.path.join(os.getcwd(), "stdin.py")
    plan.shown_text = {shown: path}
    if args.stdin_filename and not args.dynamic:
        inputs = [SourceInput(where, shown, plan.codes_for(where), explicit=True, text=text,
                              target_torch=plan.target_for(where))]
    else:  # the dynamic mode imports what it checks: the text, from its file
        inputs = [SourceInput(path, shown, plan.codes_for(where), explicit=True,
                              target_torch=plan.target_for(where))]
    if args.stdin_filename and not args.no_project_context:
        from ..engine.context import context_inputs

        # The file on disk under that name is the old text: not context.
        seen = {os.path.normpath(os.path.abspath(args.stdin_filename))}
        inputs += context_inputs([SourceInput(where, shown, frozenset())], plan.excluded, seen)
    return inputs


def run_check(args: argparse.Namespace, out: TextIO, err: TextIO,
              keep: list[object] | None = None) -> int:
    if args.watch:
        from .watch import watch

        if args.diff or args.add_noqa or args.output_file or "-" in (args.paths or []):
            raise ConfigError("--watch cannot be combined with --diff, --add-noqa, "
                              "--output-file or `-`")
        args.watch = False  # each run a fresh one: the configuration may change too
        return watch(lambda: _run_watched(args, out, err), args.paths or ["."], out)
    plan = _Plan(args, err)
    try:
        if not args.output_file:
            return _check(args, plan, out, err, keep)
        import io

        report = io.StringIO()  # the file is written once the run has a report
        code = _check(args, plan, report, err, keep)
        _write_output_file(args.output_file, report.getvalue())
        return code
    finally:
        if plan.temporary is not None:
            plan.temporary.cleanup()


def _run_watched(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """One run of --watch: a configuration broken while editing is said,
    and the next change checks again."""
    try:
        return run_check(args, out, err)
    except ConfigError as exc:
        err.write(f"autograd-lint: error: {exc}\n")
        return EXIT_ERROR


def _write_output_file(path: str, report: str) -> None:
    """--output-file: the report, in a file (its folder made as needed), never
    through a link of the project leading out of it (files.write_inside_project)."""
    from ..core.files import write_inside_project

    try:
        write_inside_project(path, report.encode("utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot write --output-file {path}: {exc.strerror or exc}") from None


def _check(args: argparse.Namespace, plan: _Plan, out: TextIO, err: TextIO,
           keep: list[object] | None) -> int:
    from ..core.lines import SourceLines
    from ..engine.lint import lint_inputs

    if args.add_noqa and (args.fix or args.diff or args.dynamic):
        raise ConfigError("--add-noqa cannot be combined with --fix, --diff or --dynamic")
    if args.dynamic:
        from ..dynamic.environment import missing_for_dynamic

        missing = missing_for_dynamic(args.device, not args.no_triton_interpreter)
        if missing is not None:
            raise ConfigError(missing)
    else:
        _warn_dynamic_selection(args, err)
    if args.baseline:
        from ..reporting.baseline import read_baseline

        read_baseline(args.baseline)  # a bad baseline fails before the run, not after
    if args.show_settings:
        return _show_settings(args, plan, out)
    inputs = _collect_inputs(args, plan)
    if args.show_files:
        from .show import show_files

        show_files(inputs, out)
        return EXIT_CLEAN
    paths = args.paths or ["."]
    scan_tree = any(os.path.isdir(p) for p in paths)
    cache = None
    if not args.no_cache and paths != ["-"]:  # stdin's text has no file to key it by
        from ..engine.cache import Cache

        cache = Cache(_cache_directory(args, plan))
    if keep is not None:
        gc.disable()  # the process ends right after: no collection is worth it
    result = lint_inputs(inputs, scan_tree=scan_tree, prefilter=not args.no_prefilter,
                         jobs=args.jobs, cache=cache, keep=keep, functions=args.dynamic)
    _set_aside_newer_syntax(result, inputs)
    paths = {i.display: i.path for i in inputs} | plan.shown_text
    if args.diff:
        return _show_diff(args, result, paths, out, err)
    if args.add_noqa:
        return _add_noqa(args, result, err)
    fixed = 0
    if args.fix:
        result, fixed = _apply_fixes(args, inputs, result, paths, err, keep, scan_tree)
        _set_aside_newer_syntax(result, inputs)
    findings = result.findings
    if args.dynamic:
        findings = _run_dynamic(args, result, plan, err)
    lines = SourceLines(paths)
    if args.write_baseline:
        from ..reporting.baseline import write_baseline

        write_baseline(args.write_baseline, findings, lines)
        write_problems(result, err)
        err.write(f"autograd-lint: wrote {len(findings)} finding"
                  f"{'' if len(findings) == 1 else 's'} to {args.write_baseline}\n")
        return EXIT_ERROR if result.errors else EXIT_CLEAN
    return _report(args, findings, result, lines, fixed, out, err)


def _apply_fixes(args: argparse.Namespace, inputs: list, result: LintResult,
                 paths: dict[str, str], err: TextIO, keep: list[object] | None,
                 scan_tree: bool) -> tuple[LintResult, int]:
    """--fix: rounds of fixes until none applies; the last run's result and
    how many findings were fixed."""
    from ..engine.lint import lint_inputs

    fixed = 0
    from ..core.files import fix_roots, fix_target, write_atomically
    from ..reporting.fixes import MAX_FIX_ROUNDS, plan_changes

    roots = fix_roots(args.paths or ["."])
    refused: set[str] = set()  # links leading outside: warned about once, never written
    for _ in range(MAX_FIX_ROUNDS):
        changes = [change for change in plan_changes(
            result.findings, unsafe=args.unsafe_fixes, paths=paths)
            if change.path not in refused]
        written = False
        for change in changes:
            # Through a symlink: write the file it leads to (the link stays
            # a link), and only inside the scanned roots and project.
            destination, why_not = fix_target(change.path, roots)
            if destination is None:
                refused.add(change.path)
                err.write(f"autograd-lint: warning: {shown_text(change.display)}: not fixed: "
                          f"{shown_text(why_not)}\n")
                continue
            write_atomically(destination, change.encoded())
            fixed += len(change.applied)
            written = True
        if not written:
            break
        # Check again: what remains, and fixes that waited for an overlapping one.
        result = lint_inputs(inputs, scan_tree=scan_tree, prefilter=not args.no_prefilter,
                             jobs=args.jobs, cache=None, keep=keep, functions=args.dynamic)
    return result, fixed


def _show_settings(args: argparse.Namespace, plan: _Plan, out: TextIO) -> int:
    """--show-settings: for each path named, its configuration and rules."""
    from ..core.config import resolve_codes
    from .show import show_settings

    how = "none (--isolated: the defaults)" if args.isolated else "none found (the defaults)"
    for number, path in enumerate(args.paths or ["."]):
        if not os.path.exists(path):
            raise ConfigError(f"path not found: {path}")
        is_dir = os.path.isdir(path)
        config = plan.config_for(path, is_dir)
        codes = resolve_codes([config.selection, plan.cli]) if is_dir else plan.codes_for(path)
        cache = None if args.no_cache else _cache_directory(args, plan)
        if number:
            out.write("\n")
        target = plan.target_torch or config.target_torch
        show_settings(path, config, how, codes, plan.respects_gitignore(
            path if is_dir else os.path.dirname(path) or "."), cache, out, target)
    return EXIT_CLEAN


def _add_noqa(args: argparse.Namespace, result: LintResult, err: TextIO) -> int:
    """--add-noqa: each finding's code in a noqa comment on its line."""
    from collections import defaultdict

    from ..core.files import fix_roots, fix_target, read_regular_file, write_atomically
    from ..core.notebooks import is_notebook
    from ..reporting.fixes import utf8_text
    from ..reporting.noqa_writer import add_noqa_codes

    by_file: dict[str, list] = defaultdict(list)
    for finding in result.findings:
        by_file[finding.path].append(finding)
    roots = fix_roots(args.paths or ["."])
    added, skipped = 0, []
    for path, findings in by_file.items():
        # A notebook's lines are its cells' (its file is JSON): not written.
        destination = None if is_notebook(path) else fix_target(path, roots)[0]
        try:
            decoded = utf8_text(read_regular_file(path)) if destination else None
        except OSError:
            decoded = None
        if decoded is None:  # a notebook, not UTF-8, unreadable, read-only, a link leading out
            skipped += findings
            continue
        text, bom = decoded
        edits = add_noqa_codes(text, findings)
        if edits.added:
            write_atomically(destination, ("\ufeff" if bom else "").encode() +
                             edits.text.encode("utf-8"))
        added += edits.added
        skipped += edits.skipped
    for finding in skipped:
        err.write(f"autograd-lint: warning: {shown_text(finding.path)}:{finding.line}: "
                  f"{finding.code} not silenced: no comment can be written there\n")
    write_problems(result, err)
    if not args.quiet:
        err.write(f"Added {added} noqa directive{'' if added == 1 else 's'}.\n")
    return EXIT_ERROR if result.errors else EXIT_CLEAN


def _set_aside_newer_syntax(result: LintResult, inputs: list) -> None:
    """A file this Python cannot parse, in a project that requires a newer
    one (`requires-python = ">=3.12"`: PEP 695 generics, PEP 701 f-strings),
    is not the user's syntax error: it is skipped with a warning line, not
    reported as AGF000."""
    if not any(f.code == "AGF000" for f in result.findings):
        return
    from ..core.config import PythonRequirements

    running = sys.version_info[:2]
    requirements = PythonRequirements()
    where = {i.display: i.path for i in inputs}
    kept = []
    for finding in result.findings:
        required = requirements.of(where.get(finding.path, finding.path)) \
            if finding.code == "AGF000" else None
        if required is not None and required > running:
            result.skipped.append((finding.path, (
                f"Python {running[0]}.{running[1]} cannot parse it, and its "
                f"project requires Python >={required[0]}.{required[1]} (run autograd-lint "
                "under that Python)")))
        else:
            kept.append(finding)
    result.findings = kept


def write_problems(result: LintResult, err: TextIO) -> None:
    """What a run could not do: files it skipped (a warning each: the rest is
    reported as usual) and internal errors (exit 2)."""
    for path, reason in result.skipped:
        err.write(f"autograd-lint: warning: {shown_text(path)}: {reason}; skipped\n")
    for path, message in result.errors:
        err.write(f"autograd-lint: error: {shown_text(path)}: {shown_text(message)}\n")


def _report(args: argparse.Namespace, findings: list, result: LintResult, lines: SourceLines,
            fixed: int, out: TextIO, err: TextIO) -> int:
    """Print the findings in the chosen format; the exit status."""
    from ..reporting.output import (
        MORE_HINT,
        fix_hint,
        render_statistics,
        render_text,
        statistics,
        summary_line,
        text_style,
    )

    hidden = 0
    if args.baseline:
        from ..reporting.baseline import new_findings

        kept = new_findings(args.baseline, findings, lines)
        hidden, findings = len(findings) - len(kept), kept
    findings = _shown(findings, lines)
    if args.statistics and args.format == "json":
        import json

        json.dump(statistics(findings), out, indent=2)
        out.write("\n")
    elif not _render_for_programs(args, findings, lines, out):
        style = text_style(args.format, out)
        if args.statistics:
            render_statistics(findings, out)
        else:
            render_text(findings, out, lines, style)
        if not args.quiet:
            out.write(summary_line(findings, result.files_checked, fixed=fixed if args.fix
                                   else None) + "\n")
            if args.baseline:
                out.write(f"{hidden} finding{'' if hidden == 1 else 's'} hidden by the "
                          f"baseline {args.baseline}.\n")
            hint = fix_hint(findings, unsafe=args.unsafe_fixes)
            if hint:
                out.write(hint + "\n")
            if findings and not args.statistics and not style.full:
                out.write(MORE_HINT + "\n")
    write_problems(result, err)
    if result.errors:
        return EXIT_ERROR
    if args.exit_zero:
        return EXIT_CLEAN
    return EXIT_FINDINGS if findings or (args.exit_non_zero_on_fix and fixed) else EXIT_CLEAN


def _shown(findings: list[Finding], lines: SourceLines) -> list[Finding]:
    """The findings as every format shows them (findings.shown_finding: no
    text of the linted code reaches the output raw); `lines` finds a file by
    the name shown as well."""
    shown = [shown_finding(f) for f in findings]
    for finding, showing in zip(findings, shown, strict=True):
        if showing.path != finding.path:
            lines.alias(showing.path, finding.path)
    return shown


def _render_for_programs(args: argparse.Namespace, findings: list, lines: SourceLines,
                         out: TextIO) -> bool:
    """The formats read by programs: the findings only, never a summary line.
    False for a format people read (text, full, concise)."""
    from ..reporting import ci_reports, output

    render = {
        "json": lambda: output.render_json(findings, lines, out, dynamic=args.dynamic),
        "json-lines": lambda: ci_reports.render_json_lines(findings, lines, out,
                                                           dynamic=args.dynamic),
        "sarif": lambda: output.render_sarif(findings, lines, out),
        "github": lambda: output.render_github(findings, lines, out),
        "gitlab": lambda: ci_reports.render_gitlab(findings, lines, out),
        "junit": lambda: ci_reports.render_junit(findings, lines, out),
        "pylint": lambda: ci_reports.render_pylint(findings, lines, out),
    }
    if args.format not in render:
        return False
    render[args.format]()
    return True


def _cache_directory(args: argparse.Namespace, plan: _Plan) -> Path:
    """--cache-dir, else AUTOGRAD_LINT_CACHE_DIR, else the project's root
    (where its configuration lives, else the directory run in)."""
    from ..engine.cache import cache_directory

    return cache_directory(plan.config_for(Path((args.paths or ["."])[0])).root, args.cache_dir)


def _warn_dynamic_selection(args: argparse.Namespace, err: TextIO) -> None:
    """`--select AGD001` without `--dynamic` selects a rule that cannot run."""
    named = [c for c in _flatten(args.select) + _flatten(args.extend_select)
             if c.upper().startswith("AGD")]
    if named:
        err.write(f"autograd-lint: warning: {', '.join(named)}: the AGD rules run only with "
                  "--dynamic; this selection has no effect without it\n")


def _run_dynamic(args: argparse.Namespace, result: LintResult, plan: _Plan,
                 err: TextIO) -> list:
    """Run the dynamic checks on the Functions found; static findings they
    cover get `confirmed`."""
    from ..core.findings import sort_findings
    from ..dynamic.recording import RECORDING_FILE, RecordingError, read_recording
    from ..dynamic.runner import DEFAULT_MEMORY_LIMIT_MB, DynamicOptions, confirm, run_dynamic

    memory = DEFAULT_MEMORY_LIMIT_MB if args.memory_limit is None else args.memory_limit
    try:
        recording = read_recording(args.recorded) if args.recorded else read_recording(
            _cache_directory(args, plan) / RECORDING_FILE, strict=False)
    except RecordingError as exc:
        raise ConfigError(str(exc)) from None
    options = DynamicOptions(
        device=args.device, timeout=args.timeout, jobs=args.jobs or os.cpu_count() or 1,
        memory_limit_mb=memory or None,
        progress=args.format in ("text", "full", "concise") and err.isatty(),
        triton_interpreter=not args.no_triton_interpreter, recording=recording or None)
    dynamic = run_dynamic(result.functions, plan.codes_for, options, err,
                          static=result.findings)
    static = confirm(result.findings, dynamic)
    return sort_findings(static + dynamic.findings)


def _show_diff(args: argparse.Namespace, result: LintResult, paths: dict[str, str],
               out: TextIO, err: TextIO) -> int:
    """--diff: the first round of fixes as a unified diff; nothing is written."""
    from ..reporting.fixes import plan_changes, unified_diff

    changes = plan_changes(result.findings, unsafe=args.unsafe_fixes,
                           paths=paths)
    for change in changes:
        out.write(unified_diff(change))
    count = sum(len(change.applied) for change in changes)
    write_problems(result, err)
    if not args.quiet:
        from ..reporting.output import fix_counts

        unsafe = 0 if args.unsafe_fixes else fix_counts(result.findings)[1]
        more = f" ({unsafe} more with `--unsafe-fixes`)" if unsafe else ""
        if count:
            err.write(f"Would fix {count} finding{'' if count == 1 else 's'}{more}.\n")
        elif unsafe:
            err.write(f"No safe fixes available ({unsafe} with `--diff --unsafe-fixes`).\n")
        else:
            err.write("No fixes available.\n")
    if result.errors:
        return EXIT_ERROR
    return EXIT_FINDINGS if count and not args.exit_zero else EXIT_CLEAN
