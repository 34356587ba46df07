"""How many KV slots one decode step allocates, reserves, and how much headroom each
req_to_token row needs, as SGLang's `mem_cache/allocation_sizing.py` computes them.

Every function takes the draft-token bound as a required keyword-only `max_draft_tokens`:
the configurator resolves it once (`get_spec().max_speculative_num_draft_tokens`, pinned at
publish) and passes the same value to the row headroom and to every speculative buffer, so
a later override of the active draft-token count cannot make them disagree.
"""

from __future__ import annotations

import attrs


@attrs.frozen
class DecodeGeometry:
    """The decode-step inputs of the sizing functions, other than the draft-token bound."""

    speculative: bool  # a draft algorithm is configured
    page_size: int
    attn_dcp_size: int = 1
    num_steps: int = 1  # draft steps per verify round
    eagle_topk: int = 1  # draft-tree branching per step

    @property
    def alloc_page(self) -> int:
        # Under decode context parallelism a page is allocated on every DCP rank at once.
        return self.page_size * self.attn_dcp_size


def get_alloc_len_per_decode(geometry: DecodeGeometry, *, max_draft_tokens: int) -> int:
    """KV slots one request allocates per decode step."""
    if not geometry.speculative:
        return 1
    steps, topk = geometry.num_steps, geometry.eagle_topk
    if geometry.page_size == 1 or topk == 1:
        return max(steps * topk, max_draft_tokens)
    alloc_page = geometry.alloc_page
    # Each top-k branch may start mid-page and needs its steps on whole pages of its own.
    ceil_pages = (alloc_page - 1 + steps + alloc_page - 1) // alloc_page
    return max(ceil_pages * alloc_page * topk, max_draft_tokens)


def get_alloc_reserve_per_decode(geometry: DecodeGeometry, *, max_draft_tokens: int) -> int:
    """KV slots reserved per running request: overlap scheduling keeps two steps in flight.

    SGLang reserves two even with overlap disabled, so the sizing does not depend on a
    scheduling toggle; we keep that."""
    return 2 * get_alloc_len_per_decode(geometry, max_draft_tokens=max_draft_tokens)


def get_req_to_token_extra_context_len(geometry: DecodeGeometry, *, max_draft_tokens: int) -> int:
    """Columns a req_to_token row needs beyond the context length."""
    extra = 4 + max_draft_tokens
    if geometry.speculative and geometry.alloc_page > 1:
        reserve = get_alloc_reserve_per_decode(geometry, max_draft_tokens=max_draft_tokens)
        extra = max(extra, reserve + geometry.alloc_page - 1)
    return extra
