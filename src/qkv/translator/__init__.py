"""A tiny English → Korean / Japanese translator built from qkv's blocks, and trained with torch.

    >>> from qkv import translator
    >>> model = translator.load()                      # the checkpoint shipped with qkv (NumPy only)
    >>> t = model.translate("I love you", "ja")
    >>> " ".join(t.target)
    '私は あなたを 愛してる'
    >>> t.cross_weights.shape                          # (layers, heads, generated words, English words)
    (2, 4, 3, 3)
    >>> t.probabilities.shape, t.sequence_probability > 0.99   # how sure the model was of each chosen word
    ((3,), True)
    >>> model.translate("she waited in the park", "ja")  # known words, outside the grammar: refused
    Traceback (most recent call last):
    ...
    qkv.translator.corpus.OutsideGrammar: TEXT: “in” is outside the translator's grammar: after “she waited” it expects: for

Modules: `corpus` (the grammar, lexicon and held-out split), `model` (the encoder–decoder on
`qkv.block.TransformerBlock`, checkpoints), `train` (torch autograd), `explain` (cross-attention
per generated word, the alignment figure), `compare` (the learned cross-attention of 私は on the post's own
sentence next to the weights the post computes from its assumed inputs). See docs/translator.md.
"""

from .corpus import OutsideGrammar
from .model import Config, Translation, Translator, exact_match, load, save

__all__ = ["Config", "Translation", "Translator", "OutsideGrammar", "exact_match", "load", "save"]
