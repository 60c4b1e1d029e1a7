"""Membership inference on texts: individual and group attacks (paper 002 §5.1 and appendix A.4).

The attack of Carlini et al. (2021), as paper 002 uses it: score each candidate text by the
model's perplexity and call the most likely ones members. The evaluation set is balanced (A.4):
N protected secrets/sentences that were in training against N random ones of the same format
that were not, so guessing scores 50 %. The group attack (A.4) classifies groups of 20 texts —
all members or all non-members — by the sum of their perplexities.

Scores (higher = "more likely a member"; every feature is one column):

- ``perplexity``: ``-PPL`` per token (A.4; Carlini et al. 2021).
- ``zlib``: ``-log(PPL) / zlib entropy`` (Carlini et al. 2021 §6.1: text that is easy to compress
  is likely under any model, so divide it out). zlib entropy = bytes of ``zlib.compress(text)``.
- ``min_k``: mean of the ``k`` % lowest token log-probabilities (Shi et al. 2024, "Min-K% Prob").
- ``reference``: ``-log(PPL_target) / log(PPL_reference)`` (Carlini et al. 2021 §6.1 "Small"/"Medium"
  calibration against a public model). Per-word perplexities, so models with different tokenizers
  compare on the same text (DESIGN.md).

A group's score is the sum of its members' individual scores; for ``perplexity`` that is minus
the sum of perplexities, the statistic of A.4.

More methods (Min-K%++, lowercase, ReCaLL, neighbourhood), all from one shared pass, live in
:mod:`lmleak.attacks.mia_methods` (pass ``methods=``); the blind baseline that every run reports
beside them in :mod:`lmleak.attacks.blind`.
"""

from __future__ import annotations

import dataclasses
import math
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from lmleak.attacks.blind import BlindResult, blind_baseline, blind_warning
from lmleak.attacks.mia_methods import METHODS, MethodOptions, method_scenarios, parse_methods, score_methods
from lmleak.attacks.roc import RocCurve, plot_roc, roc_curve, summarize
from lmleak.data.holdout import read_holdout
from lmleak.data.loaders import iter_documents
from lmleak.data.sidefiles import read_side_file
from lmleak.errors import ConfigError, DataFileError
from lmleak.jsonl import iter_jsonl
from lmleak.ledger.ledger import ModelSpec
from lmleak.models.base import scoring_convention
from lmleak.models.hf_masked import HFMaskedLM
from lmleak.models.loading import load_model
from lmleak.runs import secure_dir, write_parquet, write_summary, writes_run
from lmleak.scenarios import scenario_record
from lmleak.shards import ModelWork, ShardEngine, Shipped, fingerprint_of, ray_session, run_rows

FEATURES = ("perplexity", "zlib", "min_k", "reference")


def zlib_entropy(text: str) -> int:
    """Bytes of the zlib-compressed UTF-8 text (Carlini et al. 2021's zlib entropy).

    Example:
        >>> zlib_entropy("aaaa" * 50) < zlib_entropy("My ID is: 123456, ship to 1 Example Rd")
        True
    """
    return len(zlib.compress(text.encode("utf-8")))


def min_k_prob(token_logprobs: np.ndarray, k: float = 0.2) -> float:
    """Mean of the ``ceil(k * n)`` lowest token log-probabilities (Shi et al. 2024).

    Example:
        >>> min_k_prob(np.array([-0.1, -5.0, -0.2, -3.0, -0.3]), 0.4)
        -4.0
    """
    lp = np.sort(np.asarray(token_logprobs, dtype=np.float64))
    if len(lp) == 0:
        raise ValueError("no tokens")
    m = max(1, math.ceil(k * len(lp)))
    return float(lp[:m].mean())


def text_scores(
    model: Any,
    texts: Sequence[str],
    *,
    reference: Any = None,
    min_k: float = 0.2,
    options: MethodOptions | None = None,
) -> dict[str, np.ndarray]:
    """Per-text statistics and attack scores (see the module docstring), as aligned arrays.

    Returns a dict with ``num_tokens``, ``logprob`` (nats, summed), ``log_ppl`` (per token),
    ``log_ppl_word``, ``zlib_bytes``, ``ref_log_ppl_word`` (NaN without a reference) and one array per
    method: ``options.methods`` (:mod:`lmleak.attacks.mia_methods`), by default :data:`FEATURES`
    (``reference`` only with a reference model), all from one shared pass.
    """
    opts = options or MethodOptions()
    methods = parse_methods(opts.methods, reference=reference is not None, mlm=opts.mlm is not None)
    return score_methods(
        model,
        texts,
        methods,
        reference=reference,
        mlm=opts.mlm,
        recall_prefix=opts.recall_prefix,
        num_neighbours=opts.num_neighbours,
        min_k=min_k,
        seed=opts.seed,
    )


def group_scores(
    scores: np.ndarray, group_size: int, *, num_groups: int | None = None, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Sum individual scores over groups of ``group_size`` texts (paper 002 A.4).

    With ``num_groups=None`` the texts are shuffled and cut into disjoint groups (a remainder is
    dropped); otherwise ``num_groups`` groups are drawn, each without repetition inside it, as A.4
    draws 1000 groups of 20 from 1000 secrets. Returns (group scores, member index matrix).

    Example:
        >>> s, idx = group_scores(np.arange(6.0), 3, seed=0)
        >>> bool(np.allclose(s, np.arange(6.0)[idx].sum(1))), idx.shape
        (True, (2, 3))
    """
    x = np.asarray(scores, dtype=np.float64)
    if group_size < 1 or len(x) < group_size:
        raise ValueError(f"need at least group_size={group_size} texts, got {len(x)}")
    rng = np.random.default_rng(seed)
    if num_groups is None:
        perm = rng.permutation(len(x))
        k = len(x) // group_size
        idx = perm[: k * group_size].reshape(k, group_size)
    else:
        idx = np.stack([rng.choice(len(x), size=group_size, replace=False) for _ in range(num_groups)])
    return x[idx].sum(axis=1), idx


@dataclass
class MembershipResult:
    """Scores, metrics and ROC curves of one membership-inference run."""

    scores: Any  # pandas DataFrame, one row per text
    metrics: Any  # pandas DataFrame, one row per (level, feature)
    curves: dict[str, RocCurve] = field(default_factory=dict)
    num_per_side: int = 0
    group_size: int = 0
    blind: BlindResult | None = None  # the text-only baseline on the same split (None: not run)
    methods: tuple[str, ...] = ()


# long: 22 of its lines are the docstring (the arguments and the result's keys)
def evaluate_membership(
    model: Any,
    members: Sequence[str],
    non_members: Sequence[str],
    *,
    num_per_side: int = 1000,
    group_size: int = 20,
    num_groups: int | None = None,
    reference: Any = None,
    min_k: float = 0.2,
    seed: int = 0,
    work_dir: str | Path | None = None,
    shard_size: int = 256,
    options: MethodOptions | None = None,
    blind: bool = True,
    groups: tuple[Sequence[str], Sequence[str]] | None = None,
    engine: Any = None,
    model_specs: dict[str, Any] | None = None,
) -> MembershipResult:
    """Individual and group membership inference on a balanced evaluation set (paper 002 A.4).

    ``num_per_side`` texts are drawn (seeded) from each side; if a side has fewer, both sides are
    cut to the smaller size so chance stays 50 %. ``group_size=0`` skips the group attack. With
    ``work_dir`` the scoring runs in resumable shards of ``shard_size`` texts there
    (:func:`lmleak.shards.run_rows`): an interrupted run picks up where it stopped.

    ``options`` picks the methods (:class:`~lmleak.attacks.mia_methods.MethodOptions`); ``recall``
    without a prefix takes ``options.recall_shots`` non-members as its prefix and leaves them out
    of the evaluation. ``blind`` adds the text-only baseline's cross-validated AUC
    (:mod:`lmleak.attacks.blind`) and its out-of-fold scores as column ``blind``; ``groups`` (the
    user of each member and of each non-member, aligned with them) keeps a user's texts in one of
    its cross-validation folds. ``engine`` (a :class:`lmleak.shards.ShardEngine`) of kind ``"ray"``
    scores those shards on Ray actors, which load ``model_specs["model"]`` / ``["reference"]`` (or
    receive the models pickled); same scores.
    """
    import pandas as pd

    mem_groups, non_groups = groups if groups is not None else (None, None)
    opts, non_members, non_groups = _resolve_methods(
        options or MethodOptions(), non_members, non_groups, reference=reference, seed=seed
    )
    methods = opts.methods or ()
    n, mem_idx, non_idx = _balanced_draw(len(members), len(non_members), num_per_side, seed)
    texts = [members[i] for i in mem_idx] + [non_members[i] for i in non_idx]
    labels = np.r_[np.ones(n, dtype=np.int64), np.zeros(n, dtype=np.int64)]
    sc = (
        text_scores(model, texts, reference=reference, min_k=min_k, options=opts)
        if work_dir is None
        else _sharded_text_scores(
            model, texts, reference, min_k, work_dir, shard_size, opts, engine, model_specs
        )
    )
    text_groups = None
    if mem_groups is not None and non_groups is not None:
        text_groups = [str(mem_groups[i]) for i in mem_idx] + [str(non_groups[i]) for i in non_idx]
    bl = blind_baseline(texts, labels, groups=text_groups, seed=seed) if blind else None
    table = pd.DataFrame(
        {"text": texts, "member": labels, **sc, **({"blind": bl.scores} if bl is not None else {})}
    )
    rows, curves = _attack_metrics(sc, labels, list(methods), n, group_size, num_groups=num_groups, seed=seed)
    return MembershipResult(table, pd.DataFrame(rows), curves, n, group_size, bl, methods)


def _resolve_methods(
    opts: MethodOptions,
    non_members: Sequence[str],
    non_groups: Sequence[str] | None,
    *,
    reference: Any,
    seed: int,
) -> tuple[MethodOptions, Sequence[str], Sequence[str] | None]:
    """The options with their methods resolved; without a ReCaLL prefix, ``recall_shots``
    non-members become it and leave the non-members (and their groups)."""
    methods = parse_methods(opts.methods, reference=reference is not None, mlm=opts.mlm is not None)
    if "recall" in methods and not opts.recall_prefix:
        keep, prefix = _recall_prefix(non_members, opts.recall_shots, seed)
        non_members = [non_members[i] for i in keep]
        non_groups = None if non_groups is None else [non_groups[i] for i in keep]
        opts = dataclasses.replace(opts, recall_prefix=prefix)
    return dataclasses.replace(opts, methods=methods), non_members, non_groups


def _balanced_draw(
    num_members: int, num_non: int, num_per_side: int, seed: int
) -> tuple[int, list[Any], list[Any]]:
    """Per side size ``n`` and the sorted indices of the ``n`` members and non-members drawn (seeded)."""
    n = min(num_per_side, num_members, num_non)
    if n < 2:
        raise DataFileError(
            f"need at least 2 members and 2 non-members, got {num_members} and {num_non}",
            hint="give more texts in --members / --non-members",
        )
    rng = np.random.default_rng(seed)
    mem_idx = sorted(rng.choice(num_members, size=n, replace=False))
    non_idx = sorted(rng.choice(num_non, size=n, replace=False))
    return n, mem_idx, non_idx


def _attack_metrics(
    sc: dict[str, np.ndarray],
    labels: np.ndarray,
    features: list[str],
    n: int,
    group_size: int,
    *,
    num_groups: int | None,
    seed: int,
) -> tuple[list[dict[str, Any]], dict[str, RocCurve]]:
    """Metric rows and ROC curves of each feature, individually and (``group_size`` > 0) in groups."""
    rows: list[dict[str, Any]] = []
    curves: dict[str, RocCurve] = {}
    for f in features:
        rows.append({"level": "individual", "feature": f, **summarize(sc[f], labels)})
        curves[f"individual/{f}"] = roc_curve(sc[f], labels)
    if group_size and n >= group_size:
        for f in features:
            gm, _ = group_scores(sc[f][:n], group_size, num_groups=num_groups, seed=seed + 1)
            gn, _ = group_scores(sc[f][n:], group_size, num_groups=num_groups, seed=seed + 2)
            g_scores = np.r_[gm, gn]
            g_labels = np.r_[np.ones(len(gm), dtype=np.int64), np.zeros(len(gn), dtype=np.int64)]
            rows.append({"level": f"group{group_size}", "feature": f, **summarize(g_scores, g_labels)})
            curves[f"group{group_size}/{f}"] = roc_curve(g_scores, g_labels)
    return rows, curves


def _recall_prefix(non_members: Sequence[str], shots: int, seed: int) -> tuple[list[int], str]:
    """ReCaLL's prefix from ``shots`` non-members (seeded), and the indices of the non-members left
    to evaluate."""
    if len(non_members) < shots + 2:
        raise DataFileError(
            f"ReCaLL takes {shots} non-members as its prefix, but there are only {len(non_members)}",
            hint="give more non-members, or a prefix file (--recall-prefix)",
        )
    pick = set(np.random.default_rng(seed + 7).choice(len(non_members), size=shots, replace=False).tolist())
    prefix = "\n".join(non_members[i] for i in sorted(pick)) + "\n"
    return [i for i in range(len(non_members)) if i not in pick], prefix


def _score_rows(
    chunk: list[str], *, model: Any, reference: Any, min_k: float, options: MethodOptions | None = None
) -> list[dict[str, Any]]:
    sc = text_scores(model, chunk, reference=reference, min_k=min_k, options=options)
    return [{k: v[i].item() for k, v in sc.items()} for i in range(len(chunk))]


def _sharded_text_scores(
    model: Any,
    texts: list[str],
    reference: Any,
    min_k: float,
    work_dir: str | Path,
    shard_size: int,
    options: MethodOptions | None = None,
    engine: Any = None,
    model_specs: dict[str, Any] | None = None,
) -> dict[str, np.ndarray]:
    def work(chunk: list[str]) -> list[dict[str, Any]]:
        return _score_rows(chunk, model=model, reference=reference, min_k=min_k, options=options)

    specs = model_specs or {}
    loaders = {
        "model": specs.get("model") or Shipped(model),
        "reference": None if reference is None else specs.get("reference") or Shipped(reference),
    }
    fp = fingerprint_of(
        "mia",
        getattr(model, "name", ""),
        type(model).__name__,
        None if reference is None else getattr(reference, "name", ""),
        min_k,
        texts,
        *(() if options is None else (options.record(),)),
    )
    rows = run_rows(
        texts,
        work,
        work_dir,
        fingerprint=fp,
        shard_size=shard_size,
        description="membership scores",
        engine=engine,
        factory=ModelWork(_score_rows, loaders, min_k=min_k, options=options),
    )
    return {
        k: np.array([r[k] for r in rows], dtype=np.int64 if k == "num_tokens" else np.float64)
        for k in rows[0]
    }


def read_texts(path: str | Path, *, field: str = "text") -> list[str]:
    """Read member / non-member texts: JSONL objects with ``field``, or plain text, one per line.

    A file is JSONL when its name ends in ``.jsonl``/``.json`` or its first non-blank line starts
    with ``{``. Blank lines are skipped in plain text; in JSONL every line must be an object with a
    non-empty string ``field``.

    Raises:
        DataFileError: with the path, line and field of the first bad line.
    """
    p = Path(path)
    lines = read_side_file(p, hint="give a JSONL file with a 'text' field or a text file").splitlines()
    first = next((ln for ln in lines if ln.strip()), "")
    is_jsonl = p.suffix in {".jsonl", ".json"} or first.lstrip().startswith("{")
    out: list[str] = [] if is_jsonl else [ln for ln in lines if ln.strip()]
    for i, obj in iter_jsonl(p, hint=f'write {{"{field}": "..."}} per line') if is_jsonl else ():
        val = obj.get(field)
        if not isinstance(val, str) or not val.strip():
            raise DataFileError(
                "missing or empty",
                path=p,
                line=i,
                field=field,
                hint=f"every line needs a non-empty string '{field}' (or use --field)",
            )
        out.append(val)
    if not out:
        raise DataFileError(
            "no texts in file", path=p, hint="one text per line, or JSONL with a 'text' field"
        )
    return out


#: Words of a document kept as its candidate text when members and non-members come from a corpus
#: (a digest of 40k tokens is not a "text" an attacker tests; its opening is).
CANDIDATE_WORDS = 200


def split_by_holdout(
    documents: Any, held_out: Sequence[str], *, max_words: int = CANDIDATE_WORDS
) -> tuple[list[str], list[str]]:
    """Members and non-members from a corpus: documents of users the model was trained on, and of
    the users it held out (``holdout.json``), each cut to its first ``max_words`` words.

    Example:
        >>> from lmleak.data.corpus import Document
        >>> docs = [Document("u1", "a", "x y z"), Document("u2", "b", "p q"), Document("u3", "c", "m n o")]
        >>> split_by_holdout(docs, ["u2"], max_words=2)
        (['x y', 'm n'], ['p q'])
    """
    out: tuple[list[str], list[str]] = ([], [])
    held = set(held_out)
    for d in documents:
        out[1 if d.user_id in held else 0].append(" ".join(d.text.split()[:max_words]))
    return out


def split_users_by_holdout(
    documents: Any, held_out: Sequence[str], *, max_words: int = CANDIDATE_WORDS
) -> tuple[list[str], list[str], list[str], list[str]]:
    """:func:`split_by_holdout` with each text's user: (members, non-members, their users, in order).

    Example:
        >>> from lmleak.data.corpus import Document
        >>> docs = [Document("u1", "a", "x y z"), Document("u2", "b", "p q")]
        >>> split_users_by_holdout(docs, ["u2"])
        (['x y z'], ['p q'], ['u1'], ['u2'])
    """
    texts: tuple[list[str], list[str]] = ([], [])
    users: tuple[list[str], list[str]] = ([], [])
    held = set(held_out)
    for d in documents:
        side = 1 if d.user_id in held else 0
        texts[side].append(" ".join(d.text.split()[:max_words]))
        users[side].append(d.user_id)
    return texts[0], texts[1], users[0], users[1]


def members_from_holdout(model_dir: str | Path, documents: Any) -> tuple[list[str], list[str], str]:
    """Members and non-members of a model trained by ``lmleak train``: the corpus documents of the
    users it held out (its ``holdout.json``) are the non-members, the other users' the members.

    Returns ``(members, non_members, source)``, ``source`` saying where the two sides came from.

    Raises:
        ConfigError: the model folder records no held-out users.
    """
    holdout = read_holdout(model_dir)
    if holdout is None or not holdout.users:
        raise ConfigError(
            f"{model_dir}: the model records no held-out users (holdout.json), so there are no non-members",
            field="--members",
            hint="give members and non-members files, or retrain with --holdout-users 0.1",
        )
    mem, non = split_by_holdout(documents, holdout.users)
    source = (
        f"non-members: {len(non)} documents of the {len(holdout.users)} users held out of training "
        f"(holdout.json); members: {len(mem)} documents of the other users"
    )
    return mem, non, source


@dataclass
class MembershipTexts:
    """The two sides of a membership run, where they came from, and (split by user) their users."""

    members: list[str]
    non_members: list[str]
    source: str | None = None  # None: the two files given
    groups: tuple[list[str], list[str]] | None = None  # each side's users, aligned with the texts


def membership_texts(
    model: str | Path,
    *,
    members: str | Path | None = None,
    non_members: str | Path | None = None,
    corpus: str | Path | None = None,
    field: str = "text",
) -> MembershipTexts:
    """Members and non-members from two files, or else from ``corpus`` split by the users ``model``
    (a folder from ``lmleak train``) held out, with each side's users for the blind baseline's folds.

    Raises:
        ConfigError: neither both files nor a corpus and a model with held-out users.
        DataFileError: a bad line in a file (:func:`read_texts`).
    """
    if members is not None and non_members is not None:
        return MembershipTexts(read_texts(members, field=field), read_texts(non_members, field=field))
    holdout = read_holdout(model)
    if corpus is None or holdout is None or not holdout.users:
        raise ConfigError(
            "no member / non-member texts: give --members and --non-members, or --corpus with a model "
            "trained by `lmleak train` (its holdout.json names the users it never saw)",
            field="--members",
            hint="retrain with --holdout-users 0.1, or write the two files",
        )
    mem, non, mem_users, non_users = split_users_by_holdout(iter_documents(corpus), holdout.users)
    source = (
        f"non-members: {len(non)} documents of the {len(holdout.users)} users held out of training "
        f"(holdout.json); members: {len(mem)} documents of the other users"
    )
    return MembershipTexts(mem, non, source, (mem_users, non_users))


def method_options(
    methods: Sequence[str] | None = None,
    *,
    reference: bool = False,
    mlm: str | Path | None = None,
    recall_prefix: str | Path | None = None,
    recall_shots: int = 3,
    num_neighbours: int = 8,
    field: str = "text",
    seed: int = 0,
) -> MethodOptions:
    """:class:`MethodOptions` from command-line values: the method names checked (``None``: the
    defaults), the masked LM loaded from the folder ``mlm``, ReCaLL's prefix read from the file
    ``recall_prefix`` (its texts, one per line, each ending in a newline).

    Raises:
        ConfigError: an unknown method, or one whose model is missing (:func:`parse_methods`).
    """
    names = (
        parse_methods(methods, reference=reference, mlm=mlm is not None, field="--methods")
        if methods is not None
        else None
    )
    mlm_model = None
    if mlm is not None:
        mlm_model = HFMaskedLM.load(mlm)
    prefix = "\n".join(read_texts(recall_prefix, field=field)) + "\n" if recall_prefix is not None else None
    return MethodOptions(
        methods=names,
        recall_prefix=prefix,
        recall_shots=recall_shots,
        num_neighbours=num_neighbours,
        mlm=mlm_model,
        seed=seed,
    )


def headline_feature(features: Sequence[str]) -> str:
    """The attack the headline reports: the reference-calibrated one when a reference model scored
    the texts (it is the stronger attack; Carlini et al. 2021 §6.1, 2022), else plain perplexity
    (else the first method scored, when perplexity was not asked for).

    Example:
        >>> headline_feature(["perplexity", "zlib", "reference"]), headline_feature(["perplexity", "zlib"])
        ('reference', 'perplexity')
    """
    if "reference" in features:
        return "reference"
    return "perplexity" if "perplexity" in features or not features else features[0]


@writes_run("out_dir")
# long: 12 keyword options and a docstring naming the summary keys; the code is 25 lines
def run_membership(
    model: Any,
    members: Sequence[str],
    non_members: Sequence[str],
    out_dir: str | Path,
    *,
    reference: Any = None,
    num_per_side: int = 1000,
    group_size: int = 20,
    num_groups: int | None = None,
    min_k: float = 0.2,
    seed: int = 0,
    source: str | None = None,
    options: MethodOptions | None = None,
    blind: bool = True,
    groups: tuple[Sequence[str], Sequence[str]] | None = None,
    engine: Any = None,
    model_specs: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Membership inference into a run directory: scores, metrics per attack, ROC curves and plot,
    ``summary.json`` (returned).

    The headline (``mia_auc``, ``mia_accuracy``, ``mia_attack``) is the reference-calibrated attack
    when ``reference`` is given, else perplexity (:func:`headline_feature`); ``mia_auc_by_attack``
    holds every attack's AUC. ``source`` says where the two sides came from (printed and stored).
    ``options`` picks the methods (:mod:`lmleak.attacks.mia_methods`); ``blind_baseline_auc`` is the
    text-only classifier's cross-validated AUC on the same split and ``blind_baseline_warning`` the
    warning when it comes within 0.05 of the best attack (:mod:`lmleak.attacks.blind`; None when not).
    ``mia_method_scenarios`` holds each method's KART record (the access it needs). ``groups``: see
    :func:`evaluate_membership` (give the users when the split is by user).
    ``engine``/``model_specs``: where the scoring shards run (see :func:`evaluate_membership`).
    """
    if not 0 < min_k <= 1:
        raise ConfigError(f"min_k must be in (0, 1], got {min_k}", field="min_k")
    if group_size < 0:
        raise ConfigError("group_size must be >= 0", field="group_size")
    run = secure_dir(out_dir)
    res = evaluate_membership(
        model,
        members,
        non_members,
        num_per_side=num_per_side,
        group_size=group_size,
        num_groups=num_groups,
        reference=reference,
        min_k=min_k,
        seed=seed,
        work_dir=run / "passes" / "mia-scores",
        options=options,
        blind=blind,
        groups=groups,
        engine=engine,
        model_specs=model_specs,
    )
    write_parquet(res.scores, run / "mia_scores.parquet")
    write_parquet(res.metrics, run / "mia_metrics.parquet")
    write_parquet(_roc_table(res.curves), run / "roc.parquet")
    name = getattr(model, "name", type(model).__name__)
    plot_roc(res.curves, str(run / "roc.png"), title=f"Membership inference — {name}")
    summary = _membership_summary(
        name, res, reference=reference, source=source, group_size=group_size, options=options
    )
    summary.update(scoring_convention(model))
    if reference is not None:
        summary.update(scoring_convention(reference, prefix="reference_"))
    write_summary(run, summary, model=model)
    return summary


# long: one keyword per `lmleak mia` option; the body loads, picks the texts and calls run_membership
def membership_of_model(
    model: str,
    out_dir: str | Path,
    *,
    members: str | Path | None = None,
    non_members: str | Path | None = None,
    corpus: str | Path | None = None,
    reference: str | None = None,
    methods: Sequence[str] | None = None,
    mlm: str | Path | None = None,
    recall_prefix: str | Path | None = None,
    recall_shots: int = 3,
    neighbours: int = 8,
    field: str = "text",
    num_per_side: int = 1000,
    group_size: int = 20,
    num_groups: int | None = None,
    min_k: float = 0.2,
    blind: bool = True,
    seed: int = 0,
    engine: ShardEngine | None = None,
    echo: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """The work of ``lmleak mia``: check the methods (:func:`method_options`), load the model spec
    ``model`` (and ``reference``), pick the texts (:func:`membership_texts`) and run
    :func:`run_membership` on them, in a Ray session when ``engine`` is Ray's.

    ``echo`` is called with where the texts came from (when split by the held-out users) and how many
    are scored. Returns the summary written to ``summary.json``.
    """
    say = echo or (lambda message: None)
    options = method_options(
        methods,
        reference=reference is not None,
        mlm=mlm,
        recall_prefix=recall_prefix,
        recall_shots=recall_shots,
        num_neighbours=neighbours,
        field=field,
        seed=seed,
    )
    lm = load_model(model)
    texts = membership_texts(model, members=members, non_members=non_members, corpus=corpus, field=field)
    if texts.source is not None:
        say(texts.source)
    ref = load_model(reference) if reference else None
    mem, non = texts.members, texts.non_members
    say(f"scoring {min(len(mem), len(non), num_per_side)} texts per side with {lm.name}")
    specs = {"model": ModelSpec(model), "reference": ModelSpec(reference) if reference else None}
    with ray_session(engine):
        return run_membership(
            lm,
            mem,
            non,
            out_dir,
            reference=ref,
            num_per_side=num_per_side,
            group_size=group_size,
            num_groups=num_groups,
            min_k=min_k,
            seed=seed,
            source=texts.source,
            options=options,
            blind=blind,
            groups=texts.groups,
            engine=engine,
            model_specs=specs,
        )


def _roc_table(curves: dict[str, RocCurve]) -> Any:
    """``roc.parquet``: one row per (curve, threshold)."""
    import pandas as pd

    return pd.DataFrame(
        [
            {"curve": name, "fpr": float(f), "tpr": float(tp), "threshold": float(th)}
            for name, c in curves.items()
            for f, tp, th in zip(c.fpr, c.tpr, c.thresholds, strict=True)
        ]
    )


def _membership_summary(
    name: str,
    res: MembershipResult,
    *,
    reference: Any,
    source: str | None,
    group_size: int,
    options: MethodOptions | None,
) -> dict[str, Any]:
    """``summary.json`` of a membership run: the headline attack, every attack's AUC, the blind baseline."""
    rows = res.metrics.to_dict(orient="records")
    individual = {r["feature"]: r for r in rows if r["level"] == "individual"}
    best = headline_feature(list(individual))
    head = individual[best]
    grp = next((r for r in rows if r["level"] != "individual" and r["feature"] == best), None)
    summary = {
        "attack": "membership_inference",
        "model": name,
        "reference": None if reference is None else getattr(reference, "name", None),
        "source": source,
        "num_per_side": res.num_per_side,
        "group_size": group_size,
        "mia_attack": best,
        "mia_auc": head["auc"],
        "mia_accuracy": head["accuracy"],
        "mia_tpr_at_1pct_fpr": head["tpr_at_1pct_fpr"],
        "mia_tpr_at_1pct_fpr_note": head["tpr_at_1pct_fpr_note"],
        "mia_auc_by_attack": {f: r["auc"] for f, r in individual.items()},
        "perplexity_auc": individual["perplexity"]["auc"] if "perplexity" in individual else None,
        "mia_methods": list(res.methods),
        "mia_options": {**(options or MethodOptions()).record(), "methods": list(res.methods)},
        "blind_baseline_auc": None if res.blind is None else res.blind.auc,
        "blind_baseline_warning": None
        if res.blind is None
        else blind_warning(res.blind.auc, {f: r["auc"] for f, r in individual.items()}),
        "mia_method_scenarios": method_scenarios(res.methods),
        "group_accuracy": None if grp is None else grp["accuracy"],
        "metrics": rows,
        "scenario": scenario_record(
            attack="membership_inference",
            knowledge=("candidate_texts",),
            access="scores",
            target="membership",
            resources=tuple(
                dict.fromkeys(
                    (("reference_model",) if reference is not None else ())
                    + tuple(r for m in res.methods for r in METHODS[m].resources)
                )
            ),
            notes="balanced members vs same-format non-members (paper 002 A.4)"
            + (f"; {source}" if source else ""),
        ),
    }
    return summary
