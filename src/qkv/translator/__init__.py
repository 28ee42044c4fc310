"""A tiny English → Korean / Japanese translator built from qkv's blocks, and trained with torch.

    >>> from qkv import translator
    >>> model = translator.load()                      # the checkpoint shipped with qkv (NumPy only)
    >>> t = model.translate("I love you", "ja")
    >>> " ".join(t.target)
    '私は あなたを 愛してる'
    >>> t.cross_weights.shape                          # (layers, heads, generated words, English words)
    (2, 4, 3, 3)

Modules: `corpus` (the grammar, lexicon and held-out split), `model` (the encoder–decoder on
`qkv.block.TransformerBlock`, checkpoints), `train` (torch autograd), `explain` (cross-attention
per generated word, the alignment figure). See docs/translator.md.
"""

from .model import Config, Translation, Translator, exact_match, load, save

__all__ = ["Config", "Translation", "Translator", "exact_match", "load", "save"]
