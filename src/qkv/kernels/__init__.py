"""Fast attention kernels: the blocked online-softmax kernel and exact partial-result merging."""

from .blocked import blocked_attention, partial_attention
from .merge import Partial, finalize, lse_of, merge_partials

__all__ = ["blocked_attention", "Partial", "merge_partials", "partial_attention", "finalize", "lse_of"]
