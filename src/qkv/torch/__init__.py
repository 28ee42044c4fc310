"""Drop-in torch modules whose math is qkv's: swap the import, keep the rest of the model.

    from qkv.torch import MultiheadAttention      # instead of torch.nn.MultiheadAttention

`MultiheadAttention` has torch.nn.MultiheadAttention's constructor, forward and state_dict keys;
state dicts load both ways. Its attention step is `qkv.attention` on torch tensors (autograd), so
a query whose every key is masked gets a zero output and zero gradients, where torch gives NaN.
"""

from .mha import MultiheadAttention

__all__ = ["MultiheadAttention"]
