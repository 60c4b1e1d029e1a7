"""The fine-tuning optimiser and DP step: device and precision recorded, bf16 autocast close to fp32."""

from __future__ import annotations

import json

import pytest
import torch

from lmleak.errors import ConfigError
from lmleak.train.finetune import finetune
from lmleak.train.finetuner import Finetuner
from lmleak.train.plain import encode_chunks
from lmleak.train.prepare import prepare_model, resolve_precision
from tests.train.tiny_llama import base_tok, ft_config


def test_cpu_run_records_device_and_fp32_and_bf16_autocast_stays_close(llama_dir, corpus, tmp_path):
    from lmleak.models.loading import load_model

    res = finetune(
        corpus, tmp_path / "a", ft_config(llama_dir, "dp", device="cpu", max_steps=2), progress=False
    )
    info = json.loads((res.model_dir / "train.json").read_text())
    assert info["device"] == "cpu" and info["precision"] == "fp32" and "CPU" in info["precision_reason"]
    # bf16 autocast (the GPU path) gives nearly the fp32 clipped gradient
    grads = {}
    for prec in ("fp32", "bf16"):
        lm = load_model(llama_dir)
        cfg = ft_config(llama_dir, "dp", noise_multiplier=0.0, max_grad_norm=1e3, precision=prec)
        model, _ = prepare_model(lm.module, cfg)
        torch.manual_seed(0)
        with torch.no_grad():
            for n, p in model.named_parameters():
                if "lora_" in n:
                    p.normal_(0, 0.1)
        ft = Finetuner(model, cfg, "cpu", resolve_precision(prec, "cpu"))
        chunks = encode_chunks(corpus.texts(), base_tok(lm), 16)
        ft.clipped_gradient(chunks.ids[:4], chunks.lengths[:4])
        grads[prec] = torch.cat([p.grad.reshape(-1) for p in ft.params])
    rel = (grads["bf16"] - grads["fp32"]).norm() / grads["fp32"].norm()
    assert 0 < rel < 0.1


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error on a machine without a GPU")
def test_asking_for_a_gpu_without_one_is_a_config_error(llama_dir, corpus, tmp_path):
    with pytest.raises(ConfigError, match="CUDA"):
        finetune(corpus, tmp_path / "x", ft_config(llama_dir, device="cuda"), progress=False)
