"""models.adapters: how a fine-tune folder records its base, and how it is read back.

The full round trip (train LoRA adapters, reload, score like the unmerged model) is in
``tests/train/test_finetune.py``; here the manifest logic, with stand-in loaders.
"""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from lmleak.errors import ModelError
from lmleak.models.adapters import (
    MANIFEST,
    base_record,
    is_finetune_dir,
    load_finetuned,
    read_manifest,
    recorded_base,
)


def test_base_record_resolves_paths_and_keeps_names(tmp_path, monkeypatch):
    folder = tmp_path / "my-base"
    folder.mkdir()
    gguf = tmp_path / "w.Q8.gguf"
    gguf.write_bytes(b"")
    monkeypatch.chdir(tmp_path)
    assert base_record("my-base") == {"spec": str(folder.resolve()), "name": "my-base"}
    assert base_record(str(gguf)) == {"spec": str(gguf.resolve()), "name": "w.Q8"}
    assert base_record("smollm2-135m") == {"spec": "smollm2-135m", "name": "smollm2-135m"}
    assert base_record("not-here") == {"spec": "not-here", "name": "not-here"}


def test_read_manifest_none_outside_a_fine_tune_and_a_clear_error_when_broken(tmp_path):
    assert read_manifest(tmp_path) is None
    (tmp_path / MANIFEST).write_text('{"base": "b"}')
    assert read_manifest(tmp_path) == {"base": "b"}
    (tmp_path / MANIFEST).write_text("{not json")
    with pytest.raises(ModelError, match=f"{MANIFEST}: not valid JSON"):
        read_manifest(tmp_path)


def test_recorded_base_from_the_manifest_else_from_a_local_peft_base(tmp_path):
    base = tmp_path / "base"
    base.mkdir()
    ft = tmp_path / "ft"
    ft.mkdir()
    assert not is_finetune_dir(ft)
    (ft / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": str(base)}))
    assert is_finetune_dir(ft) and recorded_base(ft) == str(base)
    (ft / MANIFEST).write_text(json.dumps({"base": "smollm2-135m"}))
    assert recorded_base(ft) == "smollm2-135m"


def test_recorded_base_refuses_what_records_none(tmp_path):
    with pytest.raises(ModelError, match="a model object"):
        recorded_base(None)
    with pytest.raises(ModelError, match="records no base"):
        recorded_base(tmp_path)
    (tmp_path / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": "hub/name"}))
    with pytest.raises(ModelError, match="records no base"):  # a hub name is never downloaded
        recorded_base(tmp_path)


def _lm():
    return SimpleNamespace(tokenizer=SimpleNamespace(bos_id=0), module=None, name="x")


def test_a_full_fine_tune_loads_as_a_plain_folder_with_its_start_token_and_base(tmp_path):
    (tmp_path / MANIFEST).write_text(json.dumps({"kind": "full", "base": "/b", "bos_id": 7}))
    seen = []
    lm = load_finetuned(
        tmp_path, load_base=lambda s: pytest.fail("no base"), load_dir=lambda d: seen.append(d) or _lm()
    )
    assert seen == [tmp_path]
    assert (lm.name, lm.tokenizer.bos_id, lm.base) == (tmp_path.name, 7, "/b")
    assert load_finetuned(tmp_path, load_base=_lm, load_dir=lambda d: _lm(), name="n").name == "n"


def test_lora_folders_need_their_adapters_and_their_base(tmp_path):
    (tmp_path / MANIFEST).write_text(json.dumps({"kind": "lora", "base": str(tmp_path / "gone")}))
    with pytest.raises(ModelError, match="adapter_config.json is missing"):
        load_finetuned(tmp_path, load_base=lambda s: _lm(), load_dir=lambda d: _lm())
    (tmp_path / "adapter_config.json").write_text("{}")
    with pytest.raises(ModelError, match="does not exist here"):
        load_finetuned(tmp_path, load_base=lambda s: _lm(), load_dir=lambda d: _lm())
