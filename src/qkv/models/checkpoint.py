"""Reading a Hugging Face checkpoint directory: config.json, safetensors weights (one file or shards), tokenizer.

    directory/
      config.json                          model_type and sizes
      model.safetensors                    or: model.safetensors.index.json + the shards it names
      tokenizer.json                       a `tokenizers` tokenizer

Weights are safetensors, never unpickled: a directory holding only pytorch_model.bin is refused.
Each file is opened once and read through that descriptor (`qkv._safetensors.SafetensorsFile`): its
header is checked as the safetensors library checks it (the data covers it exactly — a truncated file
is refused — and each tensor's dtype and shape fit its bytes), and each tensor is read into memory of
its own, never memory-mapped. So a loaded model's numbers never change when its file is rewritten in
place, a file cut short under a running model cannot kill it (SIGBUS), and a file swapped for a named
pipe after the check is refused by its kind, never waited on. Resident memory stays about the size of
the weights: a tensor stored in the dtype asked for is used as read; other dtypes are converted one
tensor at a time; bfloat16 (which NumPy lacks) is widened to float32 exactly (its bits are float32's
upper half). Every problem is one `qkv.InputError` naming the file and, where there is one, the tensor
or field.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError
from ..explain import texts
from .._safetensors import SafetensorsFile, widen
from .files import check_finite, is_present, read_json

__all__ = ["Checkpoint", "open_checkpoint", "read_config"]

INDEX = "model.safetensors.index.json"
SINGLE = "model.safetensors"


def read_config(directory: Path) -> dict:
    """config.json of a checkpoint directory as a dict (InputError when missing or not JSON)."""
    path = directory / "config.json"
    if not is_present(path):
        raise InputError.keyed("error.checkpoint.config", source=str(path))
    return read_json(path)


@dataclass
class Checkpoint:
    """The tensors of one checkpoint: name → the safetensors file holding it. `get` reads one.

    Tensors are read on demand and not kept: the model keeps only what it converts, so loading
    holds about one copy of the weights (plus one tensor in flight).
    """

    directory: Path
    files: dict[str, Path]                       # tensor name → file
    used: set[str] = field(default_factory=set, repr=False)   # the names `get` has read
    _handles: dict[Path, Any] = field(default_factory=dict, repr=False)     # file → its open SafetensorsFile

    def __contains__(self, name: str) -> bool:
        return name in self.files

    def names(self) -> list[str]:
        return sorted(self.files)

    def expect_family(self, name: str, model_type: str) -> None:
        """A tensor every checkpoint of ``model_type`` has; its absence means config.json and the weights disagree."""
        if name not in self.files:
            raise InputError.keyed("error.checkpoint.no_tensor", source=str(self._describe()), name=repr(name),
                                   model_type=repr(model_type))

    def get(self, name: str, shape: tuple[int, ...], dtype=np.float32) -> np.ndarray:
        """Tensor ``name`` as a C-contiguous, read-only array of ``dtype`` with exactly ``shape`` (else
        InputError), read from the file's open descriptor into memory of its own (never a memory map).
        A tensor holding NaN or ±inf is an InputError naming the file and the tensor (every family)."""
        path = self.files.get(name)
        if path is None:
            raise InputError.keyed("error.checkpoint.tensor_missing", source=str(self._describe()), field=name)
        self.used.add(name)
        handle = self._open(path)
        stored = handle.shape(name)
        if stored != tuple(shape):
            raise InputError.keyed("error.checkpoint.shape", source=str(path), field=name, stored=stored,
                                   expected=tuple(shape))
        kind = handle.dtype(name)
        if kind not in _FLOATS:
            raise InputError.keyed("error.checkpoint.dtype", source=str(path), field=name, kind=kind)
        value = widen(handle.read(name), kind)                  # read into memory of its own, never mapped
        check_finite(value, source=str(path), field=name)                     # NaN/inf: a corrupt file, named
        if value.dtype != np.dtype(dtype):
            value = value.astype(dtype)
        value.flags.writeable = False
        return value

    def unembedding(self, name: str, embeddings: np.ndarray, tie: bool, dtype) -> np.ndarray:
        """The output matrix (D, V) as transformers 5.25 reads it (every family): the head ``name`` (an nn.Linear
        (V, D)) when the folder holds it — even under ``tie_word_embeddings: true``, where transformers keeps a
        saved head that differs from the embeddings (and says so; so does qkv) —, else the embeddings'
        transpose when tied, else an InputError (transformers would fill the missing head with random numbers)."""
        vocab, width = embeddings.shape
        if name in self.files:
            head = self.get(name, (vocab, width), dtype)
            if not tie:
                return head.T
            if np.array_equal(head, embeddings):
                return embeddings.T                                   # the same numbers: keep the one copy
            warnings.warn(f"{self._describe()}: {name}: " + texts.text("en", "warn.checkpoint.untied_head"),
                          UserWarning, stacklevel=4)
            return head.T
        if tie:
            return embeddings.T                                       # (D, V), a view
        raise InputError.keyed("error.checkpoint.no_head", source=str(self._describe()), field=name)

    def check_all_used(self, config_source: str, *, n_layers: int, optional: tuple[str, ...] = ()) -> None:
        """Refuse a checkpoint holding tensors the model config.json describes never read (every family).

        Called after a loader has read every tensor it uses through `get`. optional: name prefixes or
        suffixes a checkpoint may hold that the forward pass does not need (task heads, old buffers
        such as rotary_emb.inv_freq). Tensors of layers ≥ n_layers mean config.json has fewer layers
        than the weights: said so. Any other unused tensor is named (config flags that the weights
        contradict, e.g. biases the config switches off, end here too).
        """
        unused = [name for name in self.names() if name not in self.used
                  and not any(name.startswith(o) or name.endswith("." + o) or f".{o}" in name for o in optional)]
        if not unused:
            return
        deeper = sorted({int(m.group(1)) for m in map(_LAYER.search, unused) if m and int(m.group(1)) >= n_layers})
        if deeper:
            first = next(n for n in unused if (m := _LAYER.search(n)) and int(m.group(1)) >= n_layers)
            raise InputError.keyed("error.checkpoint.deeper", source=str(self.files[first]), field=first,
                                   config=config_source, layers=n_layers, held=deeper[-1] + 1)
        shown = ", ".join(unused[1:4])
        key = "error.checkpoint.unused" + (".more" if len(unused) > 4 else ".others" if shown else "")
        raise InputError.keyed(key, source=str(self.files[unused[0]]), field=unused[0], config=config_source,
                               shown=shown, more=len(unused) - 4)

    def close(self) -> None:
        for handle in self._handles.values():
            handle.close()
        self._handles.clear()

    def _open(self, path: Path):
        if path not in self._handles:
            self._handles[path] = _safe_open(path)
        return self._handles[path]

    def _describe(self) -> Path:
        index = self.directory / INDEX
        return index if index.is_file() else self.directory / SINGLE


def open_checkpoint(directory: Path) -> Checkpoint:
    """The weights of ``directory``: model.safetensors, or the shards named by model.safetensors.index.json.

    Every file is opened (safetensors checks its header and that the data covers it, so a
    truncated file is refused here, before anything is computed).
    """
    single, index = directory / SINGLE, directory / INDEX
    if is_present(single):
        handle = _safe_open(single)
        checkpoint = Checkpoint(directory, {name: single for name in handle.keys()})
        checkpoint._handles[single] = handle
        return checkpoint
    if is_present(index):
        data = read_json(index)
        weight_map = data.get("weight_map")
        if not isinstance(weight_map, dict) or not weight_map:
            raise InputError.keyed("error.checkpoint.weight_map", source=str(index), field="weight_map")
        files: dict[str, Path] = {}
        checkpoint = Checkpoint(directory, files)
        for name, shard in weight_map.items():
            path = directory / str(shard)
            if Path(str(shard)).name != str(shard) or not is_present(path):
                raise InputError.keyed("error.checkpoint.shard", shard=repr(shard), source=str(index),
                                 field=name)
            files[name] = path
        for path in sorted(set(files.values())):
            held = set(checkpoint._open(path).keys())
            absent = [name for name, p in files.items() if p == path and name not in held]
            if absent:
                raise InputError.keyed("error.checkpoint.absent", source=str(path), name=repr(absent[0]))
        return checkpoint
    pickled = [p.name for p in directory.glob("*.bin")] + [p.name for p in directory.glob("*.pt")]
    raise InputError.keyed("error.checkpoint.pickled" if pickled else "error.checkpoint.no_weights", source=str(single),
                           single=SINGLE, index=INDEX, found=pickled[0] if pickled else "")


# a layer index inside a tensor name: "model.layers.3.", "h.3.", "encoder.layer.3.", "decoder.layers.3."
_LAYER = re.compile(r"(?:^|\.)(?:layers?|h|blocks)\.(\d+)\.")

# the safetensors dtypes a model's weights may have
_FLOATS = ("F16", "F32", "F64", "BF16")


def _safe_open(path: Path) -> SafetensorsFile:
    """``path`` opened once and its header checked (`qkv._safetensors.SafetensorsFile`); the caller closes it."""
    return SafetensorsFile(path)

