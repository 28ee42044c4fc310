"""A decoder checkpoint holding NaN or inf is refused at load, naming the file and the tensor (issue 9 item 3,
for every family: the check lives in `qkv.models.checkpoint`, which every loader reads through)."""

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from model_fixtures import copy_of

import qkv
from qkv.cli import main


@pytest.mark.parametrize("name, bad", [("gpt2", np.nan), ("llama-mqa", np.inf)])
def test_a_non_finite_weight_is_refused_naming_the_tensor(tmp_path, capsys, name, bad):
    directory = copy_of(tmp_path, name)
    weights_file = directory / "model.safetensors"
    tensors = load_file(str(weights_file))
    target = sorted(key for key, value in tensors.items() if value.ndim == 2)[0]
    tensors[target] = tensors[target].copy()
    tensors[target][1, 2] = bad
    save_file(tensors, str(weights_file), metadata={"format": "pt"})
    with pytest.raises(qkv.InputError) as caught:
        qkv.models.load(directory)
    message = str(caught.value)
    assert "model.safetensors" in message and target in message and "non-finite" in message
    capsys.readouterr()                                                # transformers' progress bars from building
    assert main(["generate", "--model", str(directory), "the cat"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("qkv: error:") and target in err[0]
