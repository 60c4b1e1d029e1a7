"""lmleak.audit.runner: which stages run for a model, and the one line that says why one was skipped."""

from __future__ import annotations

import pytest

from lmleak.audit import runner
from lmleak.audit.config import MiaSpec, parse_config
from lmleak.audit.runner import Auditor
from lmleak.models.base import Capability

API = "http://127.0.0.1:9/v1#tiny"  # never contacted: load_model is replaced by the stand-ins below


class _Api:
    """A stand-in for a model behind an HTTP API: what the audit reads of it, no network."""

    name = "tiny"
    base_url = "http://127.0.0.1:9/v1"

    def __init__(self, tier: str, capabilities: set[Capability]) -> None:
        self.tier = tier
        self.capabilities = frozenset(capabilities)
        self.access = "generation" if Capability.SCORE not in capabilities else "full"

    def describe(self) -> dict[str, object]:
        return {"tier": self.tier, "access": self.access, "requests": 0}


TEXT_TIER = _Api("text", {Capability.GENERATE})
SCORING_TIER = _Api("prompt_logprobs", {Capability.GENERATE, Capability.SCORE})


def _auditor(tmp_path, mia: dict, echo=None) -> Auditor:
    cfg = parse_config(
        {
            "out": str(tmp_path / "run"),
            "corpus": {"path": "corpus.jsonl"},
            "models": [{"name": "api", "path": API}],
            "analyses": {"mia": mia},
        },
        base_dir=str(tmp_path),
    )
    return Auditor(cfg, echo=echo)


@pytest.mark.parametrize(
    "mia",
    [{}, {"members": "members.txt", "non_members": "non_members.txt"}],
    ids=["holdout", "member-files"],
)
def test_mia_over_an_api_without_scores_is_skipped_for_the_missing_capability(tmp_path, monkeypatch, mia):
    """The skip line names the tier's missing per-token scores, not a missing holdout (issue 17)."""
    monkeypatch.setattr(runner, "load_model", lambda path, **kw: TEXT_TIER)
    lines: list[str] = []
    entry = _auditor(tmp_path, mia, echo=lines.append)._audit_model("api", API)
    why = entry["skipped"]["mia"]
    assert why.startswith(
        "membership inference needs 'score' access, but model 'tiny' grants only 'generate'"
    )
    assert "holdout" not in why
    assert entry["stages"] == {} and entry["scenarios"] == {}
    assert entry["access"] == TEXT_TIER.describe()
    assert [line for line in lines if "skipped" in line] == [f"[yellow]api/mia: skipped[/] — {why}"]


def test_mia_over_a_scoring_api_without_member_files_still_asks_for_them(tmp_path):
    why = _auditor(tmp_path, {}).mia_source(API, SCORING_TIER)
    assert why is not None and "holdout.json" in why and "analyses.mia.members" in why
    files = {"members": "members.txt", "non_members": "non_members.txt"}
    assert _auditor(tmp_path, files).mia_source(API, SCORING_TIER) is None


def test_mia_of_a_local_model_without_holdout_names_the_missing_holdout(tmp_path):
    """A local model is not loaded before the check (model None): the files decide, as before."""
    (tmp_path / "model").mkdir()
    why = _auditor(tmp_path, {}).mia_source(str(tmp_path / "model"))
    assert why is not None and "records no held-out users (holdout.json)" in why


def test_membership_alone_enables_the_mia_stage_with_its_defaults(tmp_path):
    cfg = parse_config(
        {
            "corpus": {"path": "c.jsonl"},
            "models": [{"name": "m", "path": "m"}],
            "analyses": {"membership": {"methods": ["zlib"]}, "exposure": {}, "probe": {}},
        }
    )
    # exposure without canaries and probe without subjects are not stages to run
    # the older `membership:` section alone: the mia stage, its keys merged into the defaults
    assert Auditor(cfg).enabled() == [("mia", MiaSpec(methods=("zlib",)))]


def test_the_exposure_stage_draws_its_placebos_away_from_the_corpus_and_passes_the_count(
    tmp_path, monkeypatch
):
    import json

    (tmp_path / "corpus.jsonl").write_text(
        "".join(json.dumps({"user_id": f"u{i}", "text": f"My ID is: {i:06d}"}) + "\n" for i in range(3))
    )
    data = {**cfg_data(tmp_path), "analyses": {"exposure": {"canaries": "canaries.jsonl", "placebos": 4}}}
    cfg = parse_config(data, base_dir=str(tmp_path))
    seen: dict = {}
    monkeypatch.setattr(
        runner,
        "run_exposure",
        lambda model, canaries, out, settings, **kw: seen.update(kw, settings=settings),
    )
    Auditor(cfg).stage_exposure(None, "m", cfg.analyses.exposure, tmp_path / "out")
    assert seen["settings"].placebos == 4
    assert list(seen["corpus_texts"]) == [f"My ID is: {i:06d}" for i in range(3)]
    from lmleak.errors import ConfigError

    bad = {**cfg_data(tmp_path), "analyses": {"exposure": {"canaries": "canaries.jsonl", "placebos": -1}}}
    with pytest.raises(ConfigError, match=r"placebos': must be a whole number >= 0"):
        parse_config(bad, base_dir=str(tmp_path))


def cfg_data(tmp_path) -> dict:
    return {
        "out": str(tmp_path / "run"),
        "corpus": {"path": "corpus.jsonl"},
        "models": [{"name": "m", "path": "fake:corpus.jsonl"}],
    }


def test_the_confidentiality_bound_of_a_crt_model_uses_the_recorded_upper_bound_of_gamma(tmp_path):
    """0 misses of 562 secrets: the point estimate gave an infinite bound and 1 miss a finite 0.348
    (backwards); Proposition 6 at the recorded 95 % Clopper-Pearson bound gives 0.81 and 1.09."""
    import json
    import math

    from scipy.stats import beta

    auditor = _auditor(tmp_path, {})
    got = []
    for misses in (0, 1):
        model = tmp_path / f"crt-{misses}"
        model.mkdir()
        upper = float(beta.ppf(0.95, misses + 1, 562 - misses))
        privacy = {"mode": "crt", "epsilon": 5.46, "delta": 1e-5, "gamma": misses / 562,
                   "gamma_source": "measured", "gamma_support": 562, "gamma_upper95": upper,
                   "privacy_unit": "user"}  # fmt: skip
        (model / "privacy.json").write_text(json.dumps(privacy))
        p = auditor._privacy(str(model))
        assert p["confidentiality_epsilon"] == pytest.approx(
            math.log(1 + upper * math.expm1(5.46)), rel=1e-12
        )
        assert p["confidentiality_delta"] == pytest.approx(upper * 1e-5, rel=1e-12)
        assert p["confidentiality_gamma_basis"] == "95% Clopper-Pearson upper bound of gamma (562 secrets)"
        assert p["confidentiality_delta2_assumed"] is True and "delta2" in p["confidentiality_note"]
        assert p["privacy_unit"] == "user"
        got.append(p["confidentiality_epsilon"])
    assert round(got[0], 2) == 0.81 and round(got[1], 2) == 1.09


def test_a_crt_models_measured_delta2_goes_into_the_confidentiality_delta(tmp_path):
    """Issue 32: Theorem 8.3's delta2 is the 95 % upper bound of pi_c's misses (0 of 696: 4.3e-3),
    recorded by training with --secrets, and added to gamma x delta instead of being assumed 0."""
    import json

    from scipy.stats import beta

    auditor = _auditor(tmp_path, {})
    model = tmp_path / "crt"
    model.mkdir()
    upper, delta2 = float(beta.ppf(0.95, 1, 562)), 1 - 0.05 ** (1 / 696)
    privacy = {"mode": "crt", "epsilon": 5.46, "delta": 1e-5, "gamma": 0.0, "gamma_source": "measured",
               "gamma_support": 562, "gamma_upper95": upper, "delta2_misses": 0, "delta2_support": 696,
               "delta2_upper95": delta2}  # fmt: skip
    (model / "privacy.json").write_text(json.dumps(privacy))
    p = auditor._privacy(str(model))
    assert p["confidentiality_delta"] == pytest.approx(upper * 1e-5 + delta2, rel=1e-12)
    assert p["confidentiality_delta2"] == pytest.approx(4.3e-3, abs=1e-4)
    assert p["confidentiality_delta2_assumed"] is False and "0 of 696 secrets" in p["confidentiality_note"]


def test_samia_alone_runs_the_mia_stage_on_a_model_that_only_generates_text(tmp_path):
    """Issue 35 item 3 in the audit: `analyses.mia: {methods: [samia]}` (the settings of `lmleak mia`,
    issue 34) runs on a text-only model, where every likelihood method would be skipped."""
    import json

    texts = [
        f"note {i} about the {w} parcel from the harbour depot today" for i, w in enumerate("abcdefghijkl")
    ]
    (tmp_path / "corpus.jsonl").write_text(
        "".join(json.dumps({"user_id": "u", "text": t}) + "\n" for t in texts)
    )
    (tmp_path / "members.txt").write_text("".join(t + "\n" for t in texts[:6]))
    (tmp_path / "non_members.txt").write_text("".join(f"other {t}\n" for t in texts[6:]))
    mia = {
        "members": "members.txt",
        "non_members": "non_members.txt",
        "methods": ["samia"],
        "samia_samples": 2,
        "samia_max_new_tokens": 4,
        "group_size": 0,
        "n_boot": 50,
    }
    cfg = parse_config(
        {
            "out": str(tmp_path / "run"),
            "corpus": {"path": "corpus.jsonl"},
            "models": [{"name": "t", "path": f"text:fake:{tmp_path / 'corpus.jsonl'}"}],
            "analyses": {"mia": mia, "kart": False},
        },
        base_dir=str(tmp_path),
    )
    entry = Auditor(cfg)._audit_model("t", f"text:fake:{tmp_path / 'corpus.jsonl'}")
    assert entry.get("skipped", {}) == {} and "mia" in entry["stages"]
    s = json.loads((tmp_path / "run" / entry["stages"]["mia"] / "summary.json").read_text())
    assert s["mia_method"] == "samia" and s["samia_samples"] == 12 * 2 and s["mia_auc_ci"] is not None
