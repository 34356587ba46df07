"""allocation_sizing against the reference formulas (hand-derived cases and properties)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from configbags.server.kvcache.allocation_sizing import (
    DecodeGeometry,
    get_alloc_len_per_decode,
    get_alloc_reserve_per_decode,
    get_req_to_token_extra_context_len,
)


def sizes(g: DecodeGeometry, d: int) -> tuple[int, int, int]:
    return (
        get_alloc_len_per_decode(g, max_draft_tokens=d),
        get_alloc_reserve_per_decode(g, max_draft_tokens=d),
        get_req_to_token_extra_context_len(g, max_draft_tokens=d),
    )


@pytest.mark.parametrize(
    ("geometry", "d", "expected"),
    [
        # no speculation: one slot a step, two in flight, 4 + 0 spare columns
        (DecodeGeometry(False, page_size=16), 0, (1, 2, 4)),
        # page 1: len = max(steps x topk = 3 x 4, D = 8) = 12; extra = 4 + 8
        (DecodeGeometry(True, 1, num_steps=3, eagle_topk=4), 8, (12, 24, 12)),
        # topk 1, page 16: len = max(3, 4) = 4; extra = max(4 + 4, 8 + 15) = 23
        (DecodeGeometry(True, 16, num_steps=3, eagle_topk=1), 4, (4, 8, 23)),
        # page 16, topk 4: ceil_pages = (15 + 3 + 15) // 16 = 2; len = max(2 x 16 x 4, 8) = 128
        #   extra = max(12, 256 + 15) = 271
        (DecodeGeometry(True, 16, num_steps=3, eagle_topk=4), 8, (128, 256, 271)),
        # DCP 2 doubles the allocation page: alloc_page 32, ceil_pages = (31 + 3 + 31) // 32 = 2
        #   len = max(2 x 32 x 2, 6) = 128, extra = max(10, 256 + 31) = 287
        (DecodeGeometry(True, 16, attn_dcp_size=2, num_steps=3, eagle_topk=2), 6, (128, 256, 287)),
        # a large bound dominates: len = max(1 x 1, 64) = 64; page 1: extra = 4 + 64
        (DecodeGeometry(True, 1), 64, (64, 128, 68)),
    ],
)
def test_reference_cases(geometry: DecodeGeometry, d: int, expected: tuple[int, int, int]) -> None:
    assert sizes(geometry, d) == expected


def test_bound_is_keyword_only() -> None:
    g = DecodeGeometry(True, 1)
    with pytest.raises(TypeError):
        get_alloc_len_per_decode(g, 4)  # type: ignore[misc]


@given(
    spec=st.booleans(),
    page=st.sampled_from([1, 2, 16, 32, 64]),
    dcp=st.sampled_from([1, 2, 4]),
    steps=st.integers(1, 8),
    topk=st.integers(1, 8),
    d=st.integers(0, 64),
)
def test_properties(spec: bool, page: int, dcp: int, steps: int, topk: int, d: int) -> None:
    g = DecodeGeometry(spec, page, dcp, steps, topk)
    length, reserve, extra = sizes(g, d)
    assert reserve == 2 * length
    assert extra >= 4 + d  # the row always has room for the whole bound
    if spec:
        assert length >= d
        assert length >= steps
        if g.alloc_page > 1:
            assert extra >= reserve + g.alloc_page - 1
    else:
        assert length == 1
    # A larger bound never shrinks any size (buffers sized from it stay big enough).
    assert all(a <= b for a, b in zip(sizes(g, d), sizes(g, d + 1), strict=True))
