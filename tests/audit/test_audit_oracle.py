"""An independent oracle for the numbers a real audit prints (``lmleak synth mail`` -> ``train`` ->
``audit --model``): every check recomputes a number from the corpus and the run's files by the
obvious slow route — a separate forward pass with ``transformers``, token runs counted by hand,
substring search, pair-counting AUCs — without calling the lmleak function that produced it.

It found two silent errors (both fixed): membership candidates had their newlines joined into
spaces (AUC understated), and ``mia_accuracy`` on the split-half's unequal sides rewarded the
majority guess while the report said 50 % is chance.
"""

from __future__ import annotations

import glob
import html
import json
import re
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

pytestmark = pytest.mark.slow


def _auc(pos, neg) -> float:
    """P(member score > non-member score) + 0.5 P(tie), over every pair."""
    return sum((p > n) + 0.5 * (p == n) for p in pos for n in neg) / (len(pos) * len(neg))


@pytest.fixture(scope="module")
def audit(tmp_path_factory):
    from lmleak.cli.main import app
    from lmleak.data.synth.mail import synthesize

    root = tmp_path_factory.mktemp("oracle")
    corpus = synthesize(root / "data", scale=0.05, seed=3)["corpus"]
    cli = CliRunner()
    r = cli.invoke(app, ["train", "--corpus", str(corpus), "--out", str(root / "model"), "--epochs", "2",
                         "--holdout-users", "0.3", "--quiet"])  # fmt: skip
    assert r.exit_code == 0, r.output
    r = cli.invoke(app, ["audit", "--model", str(root / "model"), "--corpus", str(corpus), "--out",
                         str(root / "run"), "--quiet"])  # fmt: skip
    assert r.exit_code == 0, r.output
    docs = [json.loads(line) for line in Path(corpus).read_text().splitlines()]
    return root / "run", root / "model", docs


def _tokens(model: Path, docs):
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(model / "tokenizer.json"))
    return {d["doc_id"]: tuple(tok.encode(d["text"]).ids) for d in docs}


def test_the_ledger_ranks_are_a_separate_forward_pass(audit):
    """Window and overlap as ledger.json records them; each token scored in the first window that
    gives it ``overlap`` tokens of context (the module docstring's rule), by transformers directly."""
    import torch
    from transformers import GPT2LMHeadModel

    run, model, docs = audit
    net = GPT2LMHeadModel.from_pretrained(str(model)).eval()
    bos = json.loads((model / "config.json").read_text())["bos_token_id"]
    lj = json.loads((run / "models/model/report/ledger/ledger.json").read_text())
    w, ov = lj["max_length"], lj["overlap"]
    ledger = pd.concat(
        pd.read_parquet(f) for f in sorted((run / "models/model/report/ledger").glob("shard-*.parquet"))
    ).set_index("doc_id")
    ids = _tokens(model, docs)
    for d in docs[:12]:
        x = [bos, *ids[d["doc_id"]]]
        ranks, lps = np.zeros(len(x) - 1, int), np.zeros(len(x) - 1)
        done = np.zeros(len(x), bool)
        for s in range(0, max(1, len(x) - 1), w - ov):
            with torch.no_grad():
                logp = torch.log_softmax(net(torch.tensor([x[s : s + w]])).logits[0].double(), -1)
            for j in range(min(w, len(x) - s) - 1):
                p = s + j + 1
                if done[p] or (s > 0 and j + 1 < ov):
                    continue
                ranks[p - 1] = int((logp[j] > logp[j, x[p]]).sum()) + 1
                lps[p - 1], done[p] = float(logp[j, x[p]]), True
        row = ledger.loc[d["doc_id"]]
        assert list(row.token_ids) == list(ids[d["doc_id"]])
        assert (np.asarray(row.ranks) == ranks).all()
        assert np.asarray(row.logprobs) == pytest.approx(lps, abs=1e-4)


def test_leaked_sequences_and_their_counts_recomputed_from_the_ranks_and_the_corpus(audit):
    """S: maximal runs of tokens ranked <= k; counts in D: every position of every document."""
    run, model, docs = audit
    rdir = run / "models/model/report"
    summary = json.loads((rdir / "summary.json").read_text())
    seqs = pd.read_parquet(rdir / "sequences.parquet")
    occ = pd.read_parquet(rdir / "occurrences.parquet")
    ledger = pd.concat(pd.read_parquet(f) for f in sorted((rdir / "ledger").glob("shard-*.parquet")))
    ids, user = _tokens(model, docs), {d["doc_id"]: d["user_id"] for d in docs}
    runs: dict[int, dict[tuple, list]] = {}
    for k in summary["ks"]:
        runs[k] = defaultdict(list)
        for r in ledger.itertuples():
            ok = [x <= k for x in r.ranks] + [False]
            i = 0
            while i < len(ok) - 1:
                j = i
                while ok[j]:
                    j += 1
                if j > i:
                    runs[k][ids[r.doc_id][i:j]].append(r.doc_id)
                i = j + 1
        assert len(runs[k]) == summary["by_k"][str(k)]["num_sequences"]
        assert sum(map(len, runs[k].values())) == summary["by_k"][str(k)]["num_occurrences"]
    first = occ.groupby(["k", "sequence_id"]).first()
    for r in seqs.itertuples():
        o = first.loc[(r.k, r.sequence_id)]
        q = ids[o.doc_id][o.start : o.end]
        hits = runs[r.k][q]
        assert (r.count_in_s, r.users_in_s) == (len(hits), len({user[d] for d in hits}))
        in_d = {d: sum(t[i : i + len(q)] == q for i in range(len(t) - len(q) + 1)) for d, t in ids.items()}
        assert r.count_in_d == sum(in_d.values())
        assert r.users_in_d == len({user[d] for d, c in in_d.items() if c})
    for k in summary["ks"]:
        b, t = summary["by_k"][str(k)], seqs[(seqs.k == k) & (seqs.users_in_d == 1)]
        # issue 32: the headline counts person-identifying kinds only, and text unique to one person
        # (a plain scan of the documents: in how many users' documents the text occurs)
        kinds = set(summary["headline_pii_types"])
        pii = t[
            [
                p is not None
                and bool(kinds & set(p))
                and n >= summary["min_tokens"]
                and len({d["user_id"] for d in docs if text in d["text"]}) <= 1
                for p, n, text in zip(t.pii_types, t.length_tokens, t.text, strict=True)
            ]
        ]
        assert (len(t), len(pii)) == (b["unique_sequences"], b["pii_unique_sequences_total"])
        assert len({u for x in pii.user_ids for u in x}) == b["pii_users"]


def test_users_probe_and_membership_numbers_by_hand(audit):
    run, model, docs = audit
    m = run / "models/model"
    top = json.loads((run / "summary.json").read_text())["models"]["model"]
    rep = json.loads((m / "report/summary.json").read_text())
    held = set(json.loads((model / "holdout.json").read_text())["held_out_users"])
    subs = [json.loads(x) for x in (run / "subjects.jsonl").read_text().splitlines()]
    # every subject's user is the one author who sends from the subject's addresses
    senders = defaultdict(set)
    for d in docs:
        if f := re.search(r"^From: .*?<([^>]+)>", d["text"], re.M):
            senders[f.group(1).lower()].add(d["user_id"])
    assert all(senders[e.lower()] == {s["user_id"]} for s in subs for e in s["emails"])
    # users.parquet
    seqs = pd.read_parquet(m / "report/sequences.parquet")
    t = seqs[(seqs.k == rep["k"]) & (seqs.users_in_d == 1)]
    pii = t[
        [
            p is not None and len(p) > 0 and n >= rep["min_tokens"]
            for p, n in zip(t.pii_types, t.length_tokens, strict=True)
        ]
    ]
    gen = pd.read_parquet(m / "probe/generations.parquet")
    pairs = gen.groupby(["subject_id", "target_type"])["exact_match"].max()
    user_of = {s["subject_id"]: s["user_id"] for s in subs}
    hits, targets = Counter(), Counter()
    for (sid, _), hit in pairs.items():
        targets[user_of[sid]] += 1
        hits[user_of[sid]] += int(hit)
    uniq, leaked = Counter(u for x in t.user_ids for u in x), Counter(u for x in pii.user_ids for u in x)
    users = pd.read_parquet(m / "users.parquet").set_index("user_id")
    for u, n in Counter(d["user_id"] for d in docs).items():
        r = users.loc[u]
        assert (r.documents, r.pii_sequences, r.unique_sequences) == (n, leaked[u], uniq[u])
        assert (r.probe_targets, r.probe_hits, bool(r.held_out)) == (targets[u], hits[u], u in held)
    assert top["headline"]["users_at_risk"] == len(set(leaked) | {u for u in hits if hits[u]})
    # probing: share of (subject, type) pairs hit, per group
    probe = json.loads((m / "probe/summary.json").read_text())
    assert probe["pii_exact_match"] == pytest.approx(pairs.mean())
    for g, inside in (("members", False), ("controls", True)):
        part = [h for (sid, _), h in pairs.items() if (user_of[sid] in held) == inside]
        assert probe["groups"][g]["pairs_generated"] == len(part)
        assert probe["groups"][g]["subjects_probed"] == len(
            {s for s, _ in pairs.index if (user_of[s] in held) == inside}
        )
    # membership: texts are verbatim openings of the documents, labels from holdout.json, AUC by pairs
    mia = json.loads((m / "mia/summary.json").read_text())
    s = pd.read_parquet(m / "mia/mia_scores.parquet")
    assert all(any(d["text"].startswith(x) for d in docs) for x in s.text)
    assert all((u in held) != bool(y) for u, y in zip(s.user_id, s.member, strict=True))
    for meth in mia["mia_methods"]:
        want = _auc(s.loc[s.member == 1, meth].tolist(), s.loc[s.member == 0, meth].tolist())
        assert mia["mia_auc_by_attack"][meth] == pytest.approx(want)
    if mia["headline_selection"] == "split-half":  # the documented deal: sorted groups, seeded permutation
        rng, first = np.random.default_rng(mia["mia_options"]["seed"]), set()
        for c in (1, 0):
            names = sorted({f"{c}:{g}" for g in s.loc[s.member == c, "group"]})
            first |= set(rng.permutation(names)[: len(names) // 2].tolist())
        rest = s[[f"{c}:{g}" not in first for c, g in zip(s.member, s.group, strict=True)]]
        x, y = rest[mia["mia_method"]].to_numpy(), rest.member.to_numpy()
        assert mia["mia_auc"] == pytest.approx(_auc(x[y == 1], x[y == 0]))
        best = max(((x >= c)[y == 1].mean() + (x < c)[y == 0].mean()) / 2 for c in [*x, np.inf])
        assert mia["mia_accuracy"] == pytest.approx(best)


def test_every_interval_holds_its_number_and_the_page_prints_the_summary(audit):
    run, _, _ = audit
    checked = 0

    def walk(obj):
        nonlocal checked
        if isinstance(obj, dict):
            for k, v in obj.items():
                if k.endswith("_ci") and isinstance(v, list) and len(v) == 2:
                    point = obj.get(k[:-3])
                    assert v[0] <= v[1], k
                    if isinstance(point, (int, float)):
                        assert v[0] - 1e-12 <= point <= v[1] + 1e-12, (k, v, point)
                    if "excess" in k:  # a difference of two shares (issue 32)
                        assert -1 <= v[0] <= v[1] <= 1, k
                    elif re.search(r"auc|rate|match|tpr|accuracy", k):
                        assert 0 <= v[0] <= v[1] <= 1, k
                    checked += 1
                walk(v)
        elif isinstance(obj, list):
            for v in obj:
                walk(v)

    for f in glob.glob(str(run / "**/summary.json"), recursive=True):
        walk(json.loads(Path(f).read_text()))
    assert checked > 10
    h = json.loads((run / "summary.json").read_text())["models"]["model"]["headline"]
    page = re.sub(r"<script.*?</script>|<style.*?</style>", "", (run / "report.html").read_text(), flags=re.S)
    text = re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", page)))
    g = "{:.4g}".format
    for want in (
        f"Unique leaked sequences {h['by_k']['1']['unique_sequences']} · {h['by_k']['3']['unique_sequences']}",
        f"Membership inference AUC {g(h['mia_auc'])} 95% interval [{g(h['mia_auc_ci'][0])}, {g(h['mia_auc_ci'][1])}]",
        f"Membership inference accuracy {g(h['mia_accuracy'])}",
        f"People at risk (leaked PII at the first k, or probing hit) {h['users_at_risk']}",
    ):
        assert want in text
