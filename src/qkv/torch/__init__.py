"""Drop-in torch modules and functions whose math is qkv's: swap the import, keep the rest of the model.

    from qkv.torch import MultiheadAttention      # instead of torch.nn.MultiheadAttention
    from qkv.torch import flex_attention, create_block_mask   # instead of torch.nn.attention.flex_attention

`MultiheadAttention` has torch.nn.MultiheadAttention's constructor, forward and state_dict keys;
state dicts load both ways. Its attention step is `qkv.attention` on torch tensors (autograd), so
a query whose every key is masked gets a zero output and zero gradients, where torch gives NaN.
`flex_attention` (qkv.torch.flex) has torch's signature and meaning, with a backward on the CPU;
`create_block_mask`, `and_masks`, `or_masks`, `noop_mask` and `BlockMask` are torch's own.
"""

from .flex import BlockMask, and_masks, create_block_mask, flex_attention, noop_mask, or_masks
from .mha import MultiheadAttention

__all__ = ["MultiheadAttention", "flex_attention", "create_block_mask", "and_masks", "or_masks", "noop_mask",
           "BlockMask"]
