"""Parsing a run's files: whole, or only the statements that can matter
(sparse.py) for a large file, or statement by statement for one too large to
parse whole; and parsing on demand the files a name leads to (the run is the
project's `ModuleLoader`). What a file that does not parse reports (AGF000)
is engine_syntax's.
"""
from __future__ import annotations

import ast
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..core.files import NotebookError, is_notebook
from ..core.findings import Finding
from ..core.model import ModuleInfo, ModuleNamer, build_module
from .run_io import _describe
from .syntax import decode_source, parse_text, syntax_finding

if TYPE_CHECKING:
    from .relevance import Relevance
    from .run_io import LintResult, SourceInput
    from .scope import ScanTable


# Files below this size are parsed whole: sparse parsing pays off for big ones.
SPARSE_MIN_BYTES = 16_384
# Files above this size are never parsed whole, even when named explicitly: a
# whole parse of a 50 MB data module takes minutes and gigabytes.
HUGE_BYTES = 4_000_000


@dataclass
class ParsedFile:
    source: SourceInput
    text: str | None = None
    module: ModuleInfo | None = None
    findings: list[Finding] = field(default_factory=list)


class _Parsing:
    """The run's parsing (a mixin of engine._Run): `_parse` for each file the
    run parses up front, `load` and `complete` for the project."""

    # The run's, read here.
    inputs: list[SourceInput]
    prefilter: bool
    result: LintResult
    relevance: Relevance
    module_names: ModuleNamer
    _checking: set[str] | None
    _scans_by_path: ScanTable | None
    _context_paths: set[str]
    _broken_context: set[str]

    def _init_parsing(self) -> None:
        self._by_last_part: dict[str, list[SourceInput]] | None = None
        self._in_project: set[str] = set()  # paths parsed by the current pass
        self._whole: dict[str, ModuleInfo | None] = {}  # whole-file parses, by path
        # Files whose whole text does not parse: the text, and the statements that do.
        self._unparsed: dict[str, str] = {}
        self._statements: dict[str, ModuleInfo | None] = {}

    def _sparse_candidate(self, source: SourceInput) -> bool:
        """Whether `_parse` will try a sparse parse of this file."""
        if not self._may_parse_sparsely(source):
            return False
        try:
            size = os.stat(source.path).st_size
        except OSError:
            return False
        return SPARSE_MIN_BYTES <= size < HUGE_BYTES

    def _may_parse_sparsely(self, source: SourceInput) -> bool:
        """Whether a file large enough may be parsed sparsely: never one named
        (always parsed whole), an editor's text or a notebook (the whole-file
        syntax check reads the file on disk as Python)."""
        return self.prefilter and not source.explicit and source.text is None and \
            not is_notebook(source.path)

    def _parse(self, source: SourceInput, scan: object, matters: bool) -> ParsedFile | None:
        entry = ParsedFile(source)
        try:
            data = source.read()
            huge = len(data) >= HUGE_BYTES
            if huge or (self._may_parse_sparsely(source) and len(data) >= SPARSE_MIN_BYTES):
                entry.text, entry.module = self._sparse(source, scan, data, huge)
                if huge and entry.text is not None:  # (undecodable: parse_text says so)
                    self._check_piecewise(entry, matters)
                    return entry
                if entry.module is not None:
                    return entry
            entry.text, tree, syntax = parse_text(source.display, data)
            if syntax is not None:
                # Only files that can involve Functions are ours to report.
                if "AGF000" in source.codes and matters:
                    entry.findings.append(syntax)
            elif tree is not None:
                entry.module = _module(source.display, source.path, tree, entry.text,
                                       module_names=self.module_names)
                self._whole[source.path] = entry.module
        except NotebookError as exc:  # not JSON, not nbformat 4: as ruff, a syntax error
            if "AGF000" in source.codes:
                entry.findings.append(syntax_finding(source.display, exc))
        except Exception as exc:
            self.result.errors.append((source.display, _describe(exc)))
            return None
        return entry

    def _check_piecewise(self, entry: ParsedFile, matters: bool) -> None:
        """The syntax check of a file too large to parse whole, statement
        by statement (see sparse.syntax_error): one that does not parse is
        reported (AGF000) and not analysed, as a smaller one would be."""
        from .sparse import syntax_error

        assert entry.text is not None
        error = syntax_error(entry.text, entry.source.display)
        if error is not None:
            entry.module = None
            if "AGF000" in entry.source.codes and matters:
                entry.findings.append(syntax_finding(entry.source.display, error))

    def _sparse(self, source: SourceInput, scan: object, data: bytes,
                huge: bool) -> tuple[str | None, ModuleInfo | None]:
        """Parse only the statements that can matter (see sparse.py); None
        when the file should be parsed whole instead."""
        from .relevance import statement_keeper
        from .sparse import parse_sparse

        try:
            text = decode_source(data)
        except (UnicodeDecodeError, LookupError, SyntaxError):
            return None, None
        keeper = statement_keeper(self.relevance, source.path, scan.aliases)  # type: ignore[attr-defined]
        tree = parse_sparse(text, keeper, source.display, piecewise=huge,
                            max_fraction=1.0 if huge else 0.5)
        if tree is None:
            return text, None
        return text, _module(source.display, source.path, tree, text, partial=True,
                             module_names=self.module_names)

    # -- ModuleLoader: modules parsed on demand ---------------------------------------
    def load(self, module_name: str, origin_path: str | None = None, *,
             relevant_only: bool = False) -> list[ModuleInfo]:
        """Every file of that module name that this pass did not parse (and,
        with `origin_path`, every file the name reaches through namespace
        packages from there); with `relevant_only`, only files that matter
        (an incremental run did not parse them all up front)."""
        if self._by_last_part is None:
            # By the name's last part, from the path alone: `pkg/ops.py` and
            # `ops/__init__.py` may be `ops`. Only those files are named.
            self._by_last_part = {}
            for source in self.inputs:
                head, filename = os.path.split(source.path)
                if filename.endswith(".py"):
                    last = filename[:-3] if filename != "__init__.py" else \
                        os.path.basename(os.path.abspath(head or os.curdir))
                    self._by_last_part.setdefault(last, []).append(source)
        from ..core.project import reachable_as

        found = []
        for source in self._by_last_part.get(module_name.rpartition(".")[2], ()):
            if source.path in self._in_project or not (
                    self.module_names(source.path)[0] == module_name if origin_path is None
                    else reachable_as(source.path, module_name, origin_path)):
                continue
            if self._checking is not None and source.path in self._context_paths:
                module = self._parse_context(source)  # as a whole run parses it
            elif relevant_only:
                continue
            else:
                module = self._parse_whole(source)
            if module is not None:
                found.append(module)
        return found

    def _parse_context(self, source: SourceInput) -> ModuleInfo | None:
        """A file that matters, parsed only when an incremental run's
        analysis leads to it, exactly as a whole run would have parsed it."""
        self._in_project.add(source.path)
        if source.path in self._broken_context:
            return None  # it does not parse: a whole run's project lacks it too
        assert self._scans_by_path is not None
        entry = self._parse(source, self._scans_by_path[source.path], True)
        if entry is None or entry.module is None:
            return None
        if self.prefilter:
            entry.module.reach = self.relevance.reach.get(source.path, frozenset())
        return entry.module

    def complete(self, module: ModuleInfo) -> ModuleInfo:
        source = next((s for s in self.inputs if s.display == module.path), None)
        whole = self._parse_whole(source, by_statements=True) if source is not None else None
        return whole if whole is not None else module

    def _parse_whole(self, source: SourceInput, *,
                     by_statements: bool = False) -> ModuleInfo | None:
        """The file parsed whole (None: it does not parse). With
        `by_statements`, a file whose whole text does not parse (a syntax
        error in a statement no rule reads, which AGF000 leaves out) gives
        its top-level statements that parse, each on its own, as the rest of
        the file is when the error is mended."""
        key = source.path
        if key not in self._whole:
            module = None
            try:
                text, tree, _ = parse_text(source.display, source.read())
                if tree is not None:
                    module = _module(source.display, key, tree, text,
                                     module_names=self.module_names)
                elif text is not None:
                    self._unparsed[key] = text  # (read once, for `by_statements`)
            except (OSError, NotebookError):
                pass
            self._whole[key] = module
        if self._whole[key] is not None or not by_statements or key not in self._unparsed:
            return self._whole[key]
        if key not in self._statements:
            from .sparse import parse_sparse

            tree = parse_sparse(self._unparsed[key], lambda _: True, source.display,
                                max_fraction=1.0, piecewise=True)
            self._statements[key] = None if tree is None else _module(
                source.display, key, tree, self._unparsed[key], module_names=self.module_names)
        return self._statements[key]


def _module(display: str, fs_path: str, tree: ast.Module, text: str | None, *,
            partial: bool = False, module_names: ModuleNamer | None = None) -> ModuleInfo:
    namer = module_names or ModuleNamer()
    name, is_package = namer(fs_path) if fs_path.endswith(".py") else ("__main__", False)
    return build_module(display, name, is_package, tree, text or "", partial=partial,
                        import_root=namer.import_root(fs_path))
