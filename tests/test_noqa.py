"""`# noqa` suppressions (ruff's conventions)."""
from __future__ import annotations

import textwrap

from autograd_lint.engine.noqa import parse_suppressions

from .helpers import DEFAULT_CODES, codes_of, lint

BUGGY = textwrap.dedent('''\
    import torch


    class Leaky(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, k=2):
            ctx.y = x.exp(){c1}
            ctx.save_for_backward(x.data, k){c2}
            return x.exp()

        @staticmethod
        def backward(ctx, g):
            return g * ctx.y


    def leaky(x):
        return Leaky.apply(x, 3)
    ''')


# BUGGY's AGF001 and AGF008 are pedantic, off by default.
BUGGY_CODES = DEFAULT_CODES | {"AGF001", "AGF008"}


def findings_with(c1: str = "", c2: str = "", header: str = "") -> list[str]:
    return codes_of(lint(header + BUGGY.format(c1=c1, c2=c2), codes=BUGGY_CODES))


def test_without_comments_every_finding_is_reported() -> None:
    assert sorted(findings_with()) == ["AGF001", "AGF002", "AGF008", "AGF101"]


def test_blanket_noqa_silences_the_line() -> None:
    assert sorted(findings_with(c1="  # noqa", c2="  # NOQA")) == ["AGF101"]


def test_noqa_with_codes_silences_only_those() -> None:
    assert sorted(findings_with(c2="  # noqa: AGF008")) == ["AGF001", "AGF002", "AGF101"]
    assert sorted(findings_with(c2="  # noqa: AGF008,AGF002")) == ["AGF001", "AGF101"]
    assert sorted(findings_with(c2="  # noqa:AGF008 AGF002")) == ["AGF001", "AGF101"]
    assert sorted(findings_with(c1="  # noqa: AGF002")) == ["AGF001", "AGF002", "AGF008",
                                                           "AGF101"]


def test_noqa_inside_a_string_is_not_a_suppression() -> None:
    assert "AGF001" in findings_with(c1='; note = "# noqa"')


def test_noqa_with_other_tools_codes_and_text_after() -> None:
    assert "AGF001" in findings_with(c1="  # noqa: E501")
    assert "AGF001" not in findings_with(c1="  # noqa: E501, AGF001 -- keep the mask")


def test_file_level_suppression() -> None:
    assert findings_with(header="# autograd-lint: noqa\n") == []
    assert sorted(findings_with(header="# autograd-lint: noqa: AGF001, AGF101\n")) == [
        "AGF002", "AGF008"]


def test_parse_suppressions_maps_lines_to_codes() -> None:
    parsed = parse_suppressions("a = 1  # noqa\nb = 2  # noqa: AGF001,AGF006\nc = 3\n")
    assert parsed.lines == {1: None, 2: frozenset({"AGF001", "AGF006"})}
    assert parsed.file_codes == frozenset()


SPLITS = textwrap.dedent('''\
    import torch
    import torch.distributed as dist


    class Split(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, index: torch.LongTensor):
            ctx.index = index{c1}
            x.mul_(2){c2}
            dist.all_reduce(x){c3}
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 2, None
    ''')
ALL_CODES = frozenset({*DEFAULT_CODES, "AGF001", "AGF006", "AGF009", "AGF010", "AGF012",
                       "AGF901"})


def split_findings(c1: str = "", c2: str = "", c3: str = "") -> list[str]:
    return codes_of(lint(SPLITS.format(c1=c1, c2=c2, c3=c3), codes=ALL_CODES))


def test_a_noqa_naming_the_parent_code_silences_the_split_off_code() -> None:
    # ruff's redirects: suppressions written before a split keep working.
    assert sorted(split_findings()) == ["AGF009", "AGF010", "AGF012"]
    assert sorted(split_findings(c1="  # noqa: AGF001", c2="  # noqa: AGF007",
                                 c3="  # noqa: AGF006")) == []
    assert sorted(split_findings(c1="  # noqa: AGF007", c2="  # noqa: AGF001")) == [
        "AGF009", "AGF010", "AGF012", "AGF901", "AGF901"]
    assert sorted(codes_of(lint("# autograd-lint: noqa: AGF001\n" + SPLITS.format(
        c1="", c2="", c3=""), codes=ALL_CODES))) == ["AGF010", "AGF012"]


def test_a_noqa_after_lone_carriage_returns_is_read_on_its_own_line() -> None:
    # The parser ends a line at a lone "\r"; the comment reader must count alike.
    source = BUGGY.format(c1="  # noqa: AGF001", c2="  # noqa: E501, AGF002").replace("\n", "\r")
    assert sorted(codes_of(lint(source, codes=BUGGY_CODES - {"AGF008"}))) == ["AGF101"]
    with_unused = source.replace("# noqa: E501, AGF002", "# noqa: E501, AGF002, AGF004")
    assert sorted(codes_of(lint(with_unused, codes=BUGGY_CODES - {"AGF008"} | {"AGF901"}))) == [
        "AGF101", "AGF901"]
