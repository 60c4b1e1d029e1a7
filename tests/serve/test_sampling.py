"""lmleak.serve.sampling: the shared sampling fields and the plain path through the model's generate,
in chunks with the deadline checked between them."""

from __future__ import annotations

import pytest

from lmleak.serve.errors import APIError
from lmleak.serve.limits import ServeLimits
from lmleak.serve.sampling import GENERATE_CHUNK, Sampling, generate, greedy_only, parse_sampling


def test_parse_sampling_defaults_and_caps():
    s = parse_sampling({}, ServeLimits(), 100)
    assert s == Sampling() and not s.greedy
    assert parse_sampling({"temperature": 0}, ServeLimits(), 100).greedy
    s = parse_sampling(
        {"n": 3, "use_beam_search": True, "best_of": 4, "top_k": 0, "seed": 7}, ServeLimits(), 100
    )
    assert (s.n, s.best_of, s.beam, s.top_k, s.seed) == (3, 4, True, None, 7)
    with pytest.raises(APIError, match="--max-n"):
        parse_sampling({"n": 9}, ServeLimits(max_n=8), 100)
    with pytest.raises(APIError):
        parse_sampling({"top_k": 101}, ServeLimits(), 100)
    with pytest.raises(APIError, match="needs use_beam_search"):
        parse_sampling({"n": 1, "best_of": 3}, ServeLimits(), 100)


def test_greedy_only():
    greedy_only({}, Sampling(temperature=0))
    greedy_only({"temperature": 0}, Sampling(temperature=0))
    with pytest.raises(APIError, match="decodes greedily"):
        greedy_only({"n": 2}, Sampling(n=2, temperature=0))
    with pytest.raises(APIError, match="decodes greedily"):
        greedy_only({"temperature": 1}, Sampling(temperature=1))


class Recorder:
    """A model whose generate echoes its prompts and records each call's options."""

    def __init__(self):
        self.calls = []

    def generate(self, prompts, **kw):
        self.calls.append((list(prompts), kw))
        return [[f"{p}!{j}" for j in range(kw["num_return_sequences"])] for p in prompts]


def test_generate_calls_the_model_in_chunks_and_checks_between(model):
    rec, checks = Recorder(), []
    texts = [f"p{i}" for i in range(GENERATE_CHUNK + 3)]
    out = generate(rec, model.tokenizer, texts, Sampling(n=2, temperature=0), 4, lambda: checks.append(1))
    assert [len(c[0]) for c in rec.calls] == [GENERATE_CHUNK, 3] and len(checks) == 2
    assert [o.text for o in out[0]] == ["p0!0", "p0!1"] and len(out) == len(texts)
    kw = rec.calls[0][1]
    assert kw["num_beams"] == 2 and not kw["do_sample"] and kw["max_new_tokens"] == 4
    beam = Recorder()
    generate(
        beam, model.tokenizer, ["x"], Sampling(n=1, best_of=3, beam=True, temperature=1.0), 4, lambda: None
    )
    assert beam.calls[0][1]["num_beams"] == 3 and not beam.calls[0][1]["do_sample"]
    none = Recorder()
    assert (
        generate(none, model.tokenizer, ["x"], Sampling(), 0, lambda: None)[0][0].text == ""
        and not none.calls
    )
