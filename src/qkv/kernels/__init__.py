"""Fast attention kernels: the blocked online-softmax kernel, exact partial-result merging, and the
one function that chooses a call's route (`choose_route`)."""

from .execute import blocked_attention, partial_attention
from .merge import Partial, finalize, lse_of, merge_partials
from .native import Machine, use_machine
from .route import Route, RouteName, choose_route, current_machine

__all__ = ["blocked_attention", "Partial", "merge_partials", "partial_attention", "finalize", "lse_of",
           "Route", "RouteName", "choose_route", "Machine", "current_machine", "use_machine"]
