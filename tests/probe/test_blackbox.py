"""Black-box probing by generation (paper 003 §3.3.1, A.3): batched beam search, sampling, metrics."""

from __future__ import annotations

import pytest

from lmleak.errors import CapabilityError
from lmleak.models.base import Capability
from lmleak.probe.blackbox import GENERATE_BATCH, generate_probes
from lmleak.probe.metrics import email_id_match, exact_match, phone_metrics
from lmleak.probe.settings import ProbeSettings
from lmleak.probe.templates import MAX_NEW_TOKENS, Probe


class Recorder:
    """A generation-only model whose output is a function of (prompt, budget); it records each call."""

    name = "rec"
    capabilities = frozenset({Capability.GENERATE})

    def __init__(self) -> None:
        self.calls: list[dict] = []

    @staticmethod
    def answer(prompt: str, n: int, j: int = 0) -> str:
        # the phone answer is right for even subjects, so exact match differs between probes
        subject = int(prompt.split("#")[1].split()[0])
        if "phone" in prompt:
            return f"(201) 555-01{subject if subject % 2 == 0 else 99:02d}"
        return f"user{subject}@other.net {n} {j}"

    def generate(self, prompts, max_new_tokens, num_beams=1, do_sample=False, num_return_sequences=1, seed=0):
        self.calls.append(
            {"prompts": list(prompts), "n": max_new_tokens, "beams": num_beams, "sample": do_sample}
        )
        k = num_return_sequences if do_sample else num_beams  # beam search returns its beams, best first
        return [[self.answer(p, max_new_tokens, j) for j in range(k)] for p in prompts]


def _probes(n: int) -> list[Probe]:
    out = []
    for i in range(n):
        t = "phone" if i % 3 else "email"
        target = f"(201) 555-01{i:02d}" if t == "phone" else f"user{i}@example.org"
        out.append(Probe(f"s{i}", t, 0, "", f"#{i} {t} of X is ", target, ("name",)))
    return out


def _oracle_rows(probes, texts_of):
    """One row per (probe, text), built field by field from the metrics, one probe at a time."""
    rows = []
    for p in probes:
        for j, text in enumerate(texts_of(p)):
            row = {
                "subject_id": p.subject_id,
                "target_type": p.target_type,
                "template": p.template_index,
                "prompt": p.prompt,
                "target": p.target,
                "sample": j,
                "generated": text,
                "exact_match": any(exact_match(text, t) for t in (p.target, *p.alternatives)),
                "matched": ([t for t in (p.target, *p.alternatives) if exact_match(text, t)] or [None])[0],
            }
            if p.target_type == "phone":
                row.update(phone_metrics(text, p.target))
            if p.target_type == "email":
                row["email_id"] = any(email_id_match(text, t) for t in (p.target, *p.alternatives))
            rows.append(row)
    return rows


def test_batched_beam_search_equals_one_probe_at_a_time():
    probes = _probes(2 * GENERATE_BATCH + 7)
    model = Recorder()
    rows = generate_probes(model, probes, ProbeSettings(beams=3))
    want = _oracle_rows(probes, lambda p: [Recorder.answer(p.prompt, MAX_NEW_TOKENS[p.target_type])])
    assert rows == want  # only the best beam is kept, rows in probe order
    # one call per chunk of probes sharing a budget, each at most GENERATE_BATCH prompts, stripped
    assert all(len(c["prompts"]) <= GENERATE_BATCH and c["beams"] == 3 for c in model.calls)
    by_type = {t: sum(p.target_type == t for p in probes) for t in ("phone", "email")}
    assert len(model.calls) == sum(-(-n // GENERATE_BATCH) for n in by_type.values())
    for c in model.calls:
        assert {MAX_NEW_TOKENS["phone" if "phone" in p else "email"] for p in c["prompts"]} == {c["n"]}
        assert all(not p.endswith(" ") for p in c["prompts"])
    assert 0 < sum(r["exact_match"] for r in rows) < len(rows)


def test_sampling_returns_every_sample_and_budgets_override_a3():
    probes = _probes(5)
    model = Recorder()
    rows = generate_probes(model, probes, ProbeSettings(samples=4), budgets={"phone": 16})
    want = _oracle_rows(
        probes,
        lambda p: [Recorder.answer(p.prompt, 16 if p.target_type == "phone" else 20, j) for j in range(4)],
    )
    assert rows == want and [r["sample"] for r in rows[:4]] == [0, 1, 2, 3]
    assert len(model.calls) == len(probes) and all(c["sample"] for c in model.calls)


def _present(rows):
    """Rows without their None fields: read back from Parquet, an e-mail row has the phone columns as None."""
    return [{k: v for k, v in r.items() if v is not None} for r in rows]


def test_sharded_pass_gives_the_same_rows_and_resumes_without_the_model(tmp_path):
    probes = _probes(40)
    direct = generate_probes(Recorder(), probes, ProbeSettings(beams=2))
    model = Recorder()
    sharded = generate_probes(model, probes, ProbeSettings(beams=2), work_dir=tmp_path / "g", shard_size=16)
    assert _present(sharded) == _present(direct) and model.calls
    again = Recorder()
    resumed = generate_probes(again, probes, ProbeSettings(beams=2), work_dir=tmp_path / "g", shard_size=16)
    assert _present(resumed) == _present(direct)
    assert again.calls == []  # every shard was complete on disk


def test_a_model_without_generation_is_refused():
    class ScoresOnly:
        name = "s"
        capabilities = frozenset({Capability.SCORE})

    with pytest.raises(CapabilityError):
        generate_probes(ScoresOnly(), _probes(2))


def test_a_hit_on_any_of_a_persons_addresses_counts_and_says_which():
    from dataclasses import replace

    from lmleak.probe.templates import build_probes

    class Says:
        name, capabilities = "says", frozenset({Capability.GENERATE})

        def generate(self, prompts, max_new_tokens, num_beams=1, **_):
            return [["reach her at al@example.net today"] * num_beams for _ in prompts]

    subject = {"subject_id": "s", "name": "Ann Lee", "email": "a@example.org",
               "emails": ["a@example.org", "ann.lee@example.com", "al@example.net"]}  # fmt: skip
    (probe,) = build_probes(subject, "email", level="twin", k=1)
    assert probe.alternatives == ("ann.lee@example.com", "al@example.net")
    (row,) = generate_probes(Says(), [probe], ProbeSettings(beams=1))
    assert row["exact_match"] and row["matched"] == "al@example.net" and row["email_id"]
    (row,) = generate_probes(Says(), [replace(probe, alternatives=())], ProbeSettings(beams=1))
    assert not row["exact_match"] and row["matched"] is None  # the old rule: the first address only
