"""RMIA against the pair loop and hand-worked examples; WBC and RMIA in the shared pass, in the
evaluation and the CLI, and a fake fine-tune that memorised its members caught against its base."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from lmleak.attacks.membership import MembershipSettings, evaluate_membership
from lmleak.attacks.mia_methods import MethodOptions, parse_methods, score_methods
from lmleak.attacks.rmia import offline_prob, rmia_scores
from lmleak.errors import ConfigError
from lmleak.models.fake import FakeLM
from tests.attacks.finetune_models import POPULATION, TEXTS, target_and_base
from tests.attacks.test_mia_methods import _notes, _slow_token_logprobs


@pytest.fixture(scope="module")
def target():
    return target_and_base()[0]


@pytest.fixture(scope="module")
def base():
    return target_and_base()[1]


def _slow_rmia(px, rx, pz, rz, a, gamma):
    """RMIA pair by pair: p(.) = (1 + a) / 2 * mean of the references + (1 - a) / 2, then the share
    of z with (px / p(x)) / (pz / p(z)) > gamma."""
    out = []
    for tx, refs_x in zip(px, rx, strict=True):
        prx = (1 + a) / 2 * (sum(refs_x) / len(refs_x)) + (1 - a) / 2
        wins = 0
        for tz, refs_z in zip(pz, rz, strict=True):
            prz = (1 + a) / 2 * (sum(refs_z) / len(refs_z)) + (1 - a) / 2
            wins += (tx / prx) / (tz / prz) > gamma
        out.append(wins / len(pz))
    return out


# ----------------------------------------------------------------------------------- RMIA
def test_rmia_on_a_hand_worked_example():
    # a = 1: p(x) is the reference's probability; ratios x: .5/.25 = 2, .1/.2 = .5; z: .2/.2 = 1, .4/.2 = 2
    got = rmia_scores(
        np.array([0.5, 0.1]), np.array([0.25, 0.2]), np.array([0.2, 0.4]), np.array([0.2, 0.2]), offline_a=1
    )
    assert got.tolist() == [0.5, 0.0]  # 2 / 2 = 1 is not > 1: ties count against membership
    # a = 0.3: p(x) = 0.65 p_out + 0.35
    assert offline_prob(np.array([0.2]), 0.3)[0] == pytest.approx(0.65 * 0.2 + 0.35)
    # gamma = 0.4 lets 0.5 / 1 = 0.5 beat the first z
    got = rmia_scores(
        np.array([0.1]), np.array([0.2]), np.array([0.2, 0.4]), np.array([0.2, 0.2]), offline_a=1, gamma=0.4
    )
    assert got.tolist() == [0.5]
    with pytest.raises(ValueError, match="population"):
        rmia_scores(np.array([0.1]), np.array([0.2]), np.array([]), np.array([]))


@pytest.mark.parametrize("a, gamma, k", [(0.3, 1.0, 1), (1.0, 1.0, 2), (0.0, 1.2, 3)])
def test_rmia_vectorised_equals_the_pair_loop(a, gamma, k):
    rng = np.random.default_rng(k)
    px, pz = rng.uniform(0.01, 0.5, 9), rng.uniform(0.01, 0.5, 6)
    rx, rz = rng.uniform(0.01, 0.5, (9, k)), rng.uniform(0.01, 0.5, (6, k))
    got = rmia_scores(px, rx if k > 1 else rx[:, 0], pz, rz if k > 1 else rz[:, 0], offline_a=a, gamma=gamma)
    assert got.tolist() == pytest.approx(_slow_rmia(px, rx.tolist(), pz, rz.tolist(), a, gamma))


def test_rmia_in_score_methods_equals_the_pair_loop_over_per_prefix_log_probs(target, base):
    sc = score_methods(
        target,
        TEXTS,
        MethodOptions(methods=("rmia",), reference=base, population=POPULATION, rmia_offline_a=0.3),
    )

    def signal(model, text):
        return math.exp(float(np.mean(_slow_token_logprobs(model, text))))

    px = [signal(target, t) for t in TEXTS]
    rx = [[signal(base, t)] for t in TEXTS]
    pz = [signal(target, z) for z in POPULATION]
    rz = [[signal(base, z)] for z in POPULATION]
    assert sc["rmia"].tolist() == pytest.approx(_slow_rmia(px, rx, pz, rz, 0.3, 1.0))
    # a second OUT reference: p_OUT is the mean of the two models' signals
    other = FakeLM.from_texts(TEXTS[2:] + POPULATION, order=1, name="other")
    opts = MethodOptions(methods=("rmia",), reference=base, population=POPULATION, rmia_references=(other,))
    two = score_methods(target, TEXTS, opts)
    rx2 = [[*r, signal(other, t)] for r, t in zip(rx, TEXTS, strict=True)]
    rz2 = [[*r, signal(other, z)] for r, z in zip(rz, POPULATION, strict=True)]
    assert two["rmia"].tolist() == pytest.approx(_slow_rmia(px, rx2, pz, rz2, 0.3, 1.0))


def test_shared_pass_equals_each_fine_tune_method_on_its_own(target, base):
    methods = ["perplexity", "wbc", "rmia", "reference"]
    opts = MethodOptions(methods=tuple(methods), reference=base, population=POPULATION, wbc_windows=(1, 2))
    shared = score_methods(target, TEXTS, opts)
    separate = score_methods(target, TEXTS, opts, shared=False)
    for m in methods:
        np.testing.assert_allclose(shared[m], separate[m], rtol=1e-6, err_msg=m)


def test_wbc_and_rmia_need_a_reference_and_rmia_a_population(target, base):
    for m in ("wbc", "rmia"):
        with pytest.raises(ConfigError, match="reference model"):
            parse_methods([m])
        with pytest.raises(ConfigError, match="reference model"):
            score_methods(target, TEXTS, MethodOptions(methods=(m,), population=POPULATION))
    with pytest.raises(ConfigError, match="population"):
        score_methods(target, TEXTS, MethodOptions(methods=("rmia",), reference=base))
    assert {"wbc", "rmia"} <= set(parse_methods(["all"], reference=True))
    assert not {"wbc", "rmia"} & set(parse_methods(["all"]))
    with pytest.raises(ConfigError, match="wbc_windows"):
        MethodOptions(wbc_windows=(0, 5))
    with pytest.raises(ConfigError, match="rmia_offline_a"):
        MethodOptions(rmia_offline_a=1.5)


# ----------------------------------------------------------------------------------- a fake fine-tune
def _auc(res, feature):
    return float(res.metrics.set_index("feature").loc[feature, "auc"])


def test_a_fine_tune_that_memorised_its_members_is_caught_against_its_base():
    texts = _notes(np.random.default_rng(5), 160)
    members, non_members = texts[:60], texts[60:]
    base = FakeLM.from_texts(texts, order=3, name="base")  # saw the distribution (every text once)
    tuned = FakeLM.from_texts(texts + members * 2, order=3, name="tuned")  # and then the members again
    opts = MethodOptions(methods=("wbc", "rmia"), rmia_population=30, reference=base)
    res = evaluate_membership(
        tuned, members, non_members, MembershipSettings(group_size=0, blind=False), options=opts
    )
    assert res.num_per_side == 60  # 30 of the 100 non-members became RMIA's population
    assert _auc(res, "wbc") > 0.95 and _auc(res, "rmia") > 0.95
    # the population never appears among the scored texts
    scored = set(res.scores["text"])
    assert len(scored) == 120
    # a "fine-tune" identical to its base: WBC ties everywhere (0), RMIA with a = 1 has every ratio 1
    same = evaluate_membership(
        base,
        members,
        non_members,
        MembershipSettings(group_size=0, blind=False),
        options=MethodOptions(
            methods=("wbc", "rmia"), rmia_offline_a=1.0, rmia_population=30, reference=base
        ),
    )
    assert _auc(same, "wbc") == 0.5 and _auc(same, "rmia") == 0.5


def test_lmleak_mia_runs_wbc_and_rmia_against_a_reference(tmp_path):
    from typer.testing import CliRunner

    from lmleak.cli.main import app

    texts = _notes(np.random.default_rng(6), 90)
    members, non_members = texts[:40], texts[40:]
    base_corpus, tuned_corpus = tmp_path / "base.jsonl", tmp_path / "tuned.jsonl"
    for path, rows in ((base_corpus, texts), (tuned_corpus, texts + members * 2)):
        path.write_text(
            "".join(
                json.dumps({"user_id": "u", "doc_id": f"d{i}", "text": t}) + "\n" for i, t in enumerate(rows)
            )
        )
    (tmp_path / "m.txt").write_text("\n".join(members) + "\n")
    (tmp_path / "n.txt").write_text("\n".join(non_members) + "\n")
    args = ["mia", "--model", f"fake:{tuned_corpus}", "--reference", f"fake:{base_corpus}"]
    args += ["--members", str(tmp_path / "m.txt"), "--non-members", str(tmp_path / "n.txt")]
    args += ["--group-size", "0", "--out", str(tmp_path / "run"), "--rmia-population", "10"]
    r = CliRunner().invoke(app, [*args, "--methods", "wbc,rmia", "--wbc-windows", "1", "4"])
    assert r.exit_code == 0, r.output
    s = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert s["mia_methods"] == ["wbc", "rmia"] and s["num_per_side"] == 40
    assert s["mia_auc_by_attack"]["wbc"] > 0.9 and s["mia_auc_by_attack"]["rmia"] > 0.9
    assert s["mia_method_scenarios"]["rmia"]["resources"] == ["reference_model", "similar_corpus"]
    # a second OUT reference for RMIA: trained on other texts of the same kind (none of the sets)
    other = tmp_path / "other.jsonl"
    other.write_text(
        "".join(
            json.dumps({"user_id": "v", "doc_id": f"o{i}", "text": t}) + "\n"
            for i, t in enumerate(_notes(np.random.default_rng(7), 60))
        )
    )
    two = [
        *args[:-4],
        "--out",
        str(tmp_path / "run2"),
        "--rmia-population",
        "10",
        "--rmia-reference",
        f"fake:{other}",
    ]
    r = CliRunner().invoke(app, [*two, "--methods", "rmia"])
    assert r.exit_code == 0, r.output
    s2 = json.loads((tmp_path / "run2" / "summary.json").read_text())
    assert s2["mia_methods"] == ["rmia"] and s2["mia_auc_by_attack"]["rmia"] > 0.8
    bad = CliRunner().invoke(app, [*args[:3], *args[5:], "--methods", "wbc"])
    assert bad.exit_code == 2 and "reference model" in bad.output


def test_the_audit_config_runs_wbc_and_rmia_against_its_public_model(tmp_path):
    import yaml
    from typer.testing import CliRunner

    from lmleak.audit.config import parse_config
    from lmleak.cli.main import app

    texts = _notes(np.random.default_rng(8), 90)
    members, non_members = texts[:40], texts[40:]
    for name, rows in (("base", texts), ("tuned", texts + members * 2)):
        (tmp_path / f"{name}.jsonl").write_text(
            "".join(
                json.dumps({"user_id": f"u{i % 4}", "doc_id": f"d{i}", "text": t}) + "\n"
                for i, t in enumerate(rows)
            )
        )
    (tmp_path / "m.txt").write_text("\n".join(members) + "\n")
    (tmp_path / "n.txt").write_text("\n".join(non_members) + "\n")
    cfg = {
        "out": "run",
        "corpus": {"path": "tuned.jsonl"},
        "models": [{"name": "tuned", "path": f"fake:{tmp_path / 'tuned.jsonl'}"}],
        "public_model": f"fake:{tmp_path / 'base.jsonl'}",
        "analyses": {
            "mia": {"members": "m.txt", "non_members": "n.txt", "group_size": 0},
            "membership": {"methods": ["perplexity", "wbc", "rmia"]},
        },
    }
    (tmp_path / "audit.yaml").write_text(yaml.safe_dump(cfg))
    r = CliRunner().invoke(app, ["audit", str(tmp_path / "audit.yaml")])
    assert r.exit_code == 0, r.output
    m = json.loads((tmp_path / "run" / "summary.json").read_text())["models"]["tuned"]["membership"]
    assert set(m["mia_auc_by_attack"]) == {"perplexity", "wbc", "rmia"}
    assert m["mia_auc_by_attack"]["wbc"] > 0.9 and m["mia_auc_by_attack"]["rmia"] > 0.9
    base = {"corpus": {"path": "c"}, "models": [{"name": "m", "path": "m"}]}
    for method in ("wbc", "rmia"):
        with pytest.raises(ConfigError, match="reference model"):
            parse_config({**base, "analyses": {"membership": {"methods": [method]}}})
