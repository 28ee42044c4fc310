"""Fast attention kernels: the blocked online-softmax kernel and exact partial-result merging."""

from .blocked import blocked_attention
from .merge import Partial, finalize, merge_partials, partial_attention

__all__ = ["blocked_attention", "Partial", "merge_partials", "partial_attention", "finalize"]
