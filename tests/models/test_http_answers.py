"""Answers no model can give are refused, with one line naming the server and the field, and never
cached: logprobs above 0, NaN, ranks below 1, wrong lengths, echoed tokens that are not the prompt."""

from __future__ import annotations

import json
import math
import re

import httpx
import numpy as np
import pytest

from lmleak.errors import ModelError
from lmleak.models import http_answers as A

S = "http://127.0.0.1:9/v1#m"


def _pl(rows, value=None, rank=1):
    """A prompt_logprobs answer for token-id rows: token t has logprob -t/10 and the given rank."""
    out = []
    for i, row in enumerate(rows):
        entries = [None] + [
            {str(t): {"logprob": -t / 10 if value is None else value, "rank": rank}} for t in row[1:]
        ]
        out.append({"index": i, "text": "", "prompt_logprobs": entries})
    return {"choices": out}


def test_a_valid_prompt_logprobs_answer_reads_as_ranks_logprobs_and_top1():
    ((r, lp, t),) = A.prompt_logprob_rows([[1, 7, 9]], _pl([[1, 7, 9]]), S)
    np.testing.assert_array_equal(r, [1, 1])
    np.testing.assert_allclose(lp, [-0.7, -0.9], rtol=1e-6)
    np.testing.assert_allclose(t, lp)


@pytest.mark.parametrize(
    ("answer", "field", "why"),
    [
        (
            _pl([[1, 7, 9]], value=5.0),
            r"choices\[0\]\.prompt_logprobs\[1\]\['7'\]\.logprob = 5\.0",
            "is <= 0",
        ),
        (_pl([[1, 7, 9]], value=float("nan")), r"\.logprob = nan", "not NaN"),
        (_pl([[1, 7, 9]], rank=0), r"\['7'\]\.rank = 0", "integer >= 1"),
        (_pl([[1, 7, 9]], rank=1.5), r"\.rank = 1\.5", "integer >= 1"),
        (_pl([[1, 7]]), r"choices\[0\]\.prompt_logprobs = '2 entries'", "one entry per prompt token: 3"),
        ({"choices": []}, r"choices = '0 choices'", "1 were asked for"),
        (_pl([[1, 8, 9]]), r"prompt_logprobs\[1\]", "lacks the prompt token 7"),
    ],
)
def test_impossible_prompt_logprobs_are_refused_naming_server_and_field(answer, field, why):
    with pytest.raises(A.BadAnswer, match=rf"^{re.escape(S)}: impossible answer: .*{field}.*{why}") as e:
        A.prompt_logprob_rows([[1, 7, 9]], answer, S)
    assert isinstance(e.value, ModelError)  # exit 2 in the CLI
    assert "\n" not in str(e.value)


def test_logprob_bounds_allow_rounding_and_minus_infinity_only():
    assert A.logprob(A.LOGPROB_SLACK / 2, S, "f") == 0.0  # float32 rounding of a probability of 1
    assert A.logprob(-math.inf, S, "f") == -math.inf  # probability 0 is a valid answer
    for bad in (2 * A.LOGPROB_SLACK, math.inf, math.nan, "0.1", None, True):
        with pytest.raises(A.BadAnswer):
            A.logprob(bad, S, "f")


def _echo(row, tokens=None, top_value=None):
    tops = [None] + [{f"token_id:{t}": -t / 10 if top_value is None else top_value} for t in row[1:]]
    return {
        "choices": [
            {
                "index": 0,
                "text": "",
                "logprobs": {
                    "tokens": tokens or [f"token_id:{t}" for t in row],
                    "token_logprobs": [None] + [-t / 10 for t in row[1:]],
                    "top_logprobs": tops,
                },
            }
        ]
    }


def test_echo_answers_are_checked_token_by_token():
    row = [1, 7, 9]
    ((r, lp, _),) = A.echo_rows([row], _echo(row), S, lambda s: [], 5)
    np.testing.assert_array_equal(r, [1, 1])
    with pytest.raises(A.BadAnswer, match=r"logprobs\.tokens\[1\] = 'token_id:8' .*token_id:7"):
        A.echo_rows([row], _echo(row, tokens=["token_id:1", "token_id:8", "token_id:9"]), S, lambda s: [], 5)
    with pytest.raises(A.BadAnswer, match=r"top_logprobs\[1\]\['token_id:7'\] = 0\.5"):
        A.echo_rows([row], _echo(row, top_value=0.5), S, lambda s: [], 5)
    short = _echo(row)
    short["choices"][0]["logprobs"]["token_logprobs"] = [None, -0.7]
    with pytest.raises(A.BadAnswer, match=r"token_logprobs = '2 entries' .*at least one per prompt token: 3"):
        A.echo_rows([row], short, S, lambda s: [], 5)


def test_a_full_top_k_below_the_tokens_own_logprob_contradicts_itself():
    """Five alternatives all less likely than the prompt token, and the prompt token not among them:
    no distribution gives that."""
    row = [1, 7]
    answer = _echo(row)
    answer["choices"][0]["logprobs"]["top_logprobs"][1] = {
        f"token_id:{i}": -5.0 for i in (20, 21, 22, 23, 24)
    }
    with pytest.raises(A.BadAnswer, match="top-1 log-probability is at least the prompt token's own"):
        A.echo_rows([row], answer, S, lambda s: [], 5)


def test_token_ids_choices_and_texts():
    assert A.token_ids([0, 5], S, "tokens") == [0, 5]
    with pytest.raises(A.BadAnswer, match=r"tokens\[1\] = -1"):
        A.token_ids([0, -1], S, "tokens")
    with pytest.raises(A.BadAnswer, match=r"choices\[\]\.index"):
        A.choices({"choices": [{"index": 0}, {"index": 0}]}, 2, S)
    assert A.texts({"choices": [{"index": 0, "message": {"content": "hi"}}]}, 1, S, chat=True) == ["hi"]
    with pytest.raises(A.BadAnswer, match=r"choices\[0\]\.text = None"):
        A.texts({"choices": [{"index": 0}]}, 1, S)


# ---------------------------------------------------------------------- through the client: never cached
CARD = {
    "object": "list",
    "data": [{"id": "m", "max_model_len": 32, "lmleak": {"bos_id": 1, "vocab_size": 50}}],
}


def _server(value):
    """A fake prompt_logprobs server whose document answers carry ``value`` as every logprob (the
    fingerprint probe gets a valid answer)."""
    from lmleak.models.http import PROBE_IDS

    def handle(request):
        if request.url.path == "/v1/models":
            return httpx.Response(200, json=CARD)
        body = json.loads(request.content)
        rows = body["prompt"]
        probe = rows[0][1:] == list(PROBE_IDS)
        return httpx.Response(200, json=_pl(rows, value=None if probe else value))

    return httpx.MockTransport(handle)


def test_a_bad_answer_fails_the_run_and_is_not_cached_so_a_rerun_asks_again(tmp_path):
    from lmleak.models.http import HTTPModel

    spec = f"http://127.0.0.1:9/v1?tier=prompt_logprobs&cache={tmp_path / 'c'}#m"
    bad = HTTPModel(spec, transport=_server(5.0))
    with pytest.raises(
        ModelError, match=r"127\.0\.0\.1:9/v1#m: impossible answer: choices\[0\]\.prompt_logprobs\[1\]"
    ):
        bad.token_stats([[7, 9]])
    assert not list((tmp_path / "c").rglob("??/*.json"))  # checked before it was written: nothing kept
    good = HTTPModel(spec, transport=_server(None))
    st = good.token_stats([[7, 9]])[0]
    np.testing.assert_allclose(st.logprobs, [-0.7, -0.9], rtol=1e-6)
    assert good.cache_stats()["misses"] == 1 and good.cache_stats()["hits"] == 0
