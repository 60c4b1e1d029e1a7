"""White-box probing by soft prompt tuning (paper 003 §3.3.2, A.4)."""

from __future__ import annotations

from lmleak.probe.softprompt import evaluate, init_soft_prompt, project_to_tokens, train_soft_prompt
from lmleak.probe.templates import Probe


def test_softprompt_lowers_training_nll(tiny):
    probes = [Probe(str(i), "phone", 0, "", f"{3 + i} 4 5 ", f"{10 + i} 11", ("name",)) for i in range(6)]
    before = evaluate(tiny, init_soft_prompt(tiny, 3, "mean", "phone"), probes)
    res = train_soft_prompt(tiny, probes, length=3, init="mean", epochs=8, lr=0.05, batch=3)
    after = evaluate(tiny, res.prompt, probes)
    assert after["mean_log_likelihood"] > before["mean_log_likelihood"]
    assert res.history[-1]["train_nll"] < res.history[0]["train_nll"]
    assert all(p.requires_grad for p in tiny.torch_module.parameters())  # model restored
    ids, text = project_to_tokens(tiny, res.prompt)
    assert len(ids) == 3 and text == " ".join(map(str, ids))
