"""The settings of membership inference, declared once (issue 34): ``lmleak mia``'s options, the audit
YAML's ``analyses.mia`` section, the API's ``MembershipOptions`` and the library's argument are this
one class, :class:`MembershipSettings`; :func:`method_options` turns it into the loaded
:class:`~lmleak.attacks.mia_methods.MethodOptions` the scoring pass reads (the masked LM, ReCaLL's
prefix, RMIA's reference models).

A new setting is a field here and its use where it is read; nothing else names it.

Example:
    >>> s = MembershipSettings(num_per_side=200, methods=("min_k_pp", "zlib"))
    >>> s.num_per_side, s.methods, s.samia().samples
    (200, ('min_k_pp', 'zlib'), 10)
    >>> MembershipSettings(methods=("zlibb",))
    Traceback (most recent call last):
    ...
    lmleak.errors.ConfigError: field 'methods': unknown membership method 'zlibb'. Did you mean 'zlib'? Fix: use some of: perplexity, zlib, min_k, min_k_pp, lowercase, recall, reference, neighbourhood, samia, wbc, rmia, all
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lmleak.attacks.mia_stats import N_BOOT
from lmleak.attacks.rmia import DEFAULT_OFFLINE_A
from lmleak.attacks.samia import SamiaSettings
from lmleak.attacks.wbc import DEFAULT_WINDOWS
from lmleak.errors import ConfigError
from lmleak.settings import Settings, setting

if TYPE_CHECKING:  # the CLI imports this module to build its options: torch stays out of it
    from lmleak.attacks.mia_methods import MethodOptions

SETS, METHODS_PANEL, FINETUNE, SAMIA, STATS = "Sets", "Methods", "Fine-tune vs base", "SaMIA", "Statistics"


@dataclass(frozen=True)
class MembershipSettings(Settings):
    """Membership inference's settings (paper 002 A.4 and the methods of :mod:`lmleak.attacks.mia_methods`).

    Members and non-members: no files, the corpus split by the model's held-out users
    (``holdout.json``); ``non_members`` alone, a corpus of people the model never saw beside the
    training users' documents (:func:`lmleak.attacks.mia_texts.membership_sets`); both, two files of texts.
    """

    members: str | None = setting(
        None,
        help="Texts that were in training (JSONL with 'text', or lines).",
        panel=SETS,
        note="a file of member texts (needs non_members too); null: the training corpus's users (minus held-out ones)",
    )
    non_members: str | None = setting(
        None,
        help="With --members: same-format texts that were not in training. With --corpus alone: people the "
        "model never saw (a corpus with user_id, as the audit config's non_members); the members are the "
        "corpus's users outside holdout.json.",
        panel=SETS,
        note="null: the model's held-out users (holdout.json); alone: a corpus of people the model never saw (JSONL like the corpus; none may be a training user); with members: a file of non-member texts",
    )
    corpus: str | None = setting(
        None,
        help="Without --members/--non-members: the training corpus; its held-out users (holdout.json in the "
        "model folder) are the non-members, the other users the members.",
        panel=SETS,
        yaml=False,  # the audit's corpus: section
    )
    benchmark: str | None = setting(
        None,
        help="wikimia or mimir: a published set read from --data (docs/membership.md).",
        choices=("wikimia", "mimir"),
        panel=SETS,
        yaml=False,
    )
    data: str | None = setting(
        None, help="With --benchmark: the downloaded set's folder.", panel=SETS, yaml=False
    )
    benchmark_subset: str | None = setting(
        None,
        help="WikiMIA: length 32, 64, 128 or 256 (default 32); MIMIR: SOURCE or SOURCE/SPLIT "
        "(default wikipedia_(en)/ngram_13_0.8).",
        panel=SETS,
        yaml=False,
    )
    field: str = setting("text", help="JSONL field holding the text.", panel=SETS, yaml=False)
    num_per_side: int = setting(
        1000,
        help="Texts per side (balanced; A.4 uses 1000), after de-duplication.",
        ge=2,
        panel=SETS,
        old="--n",
        note="texts drawn per side after de-duplication (balanced)",
    )
    group_size: int = setting(
        20,
        help="Texts per group for the group attack (0: skip it).",
        ge=0,
        panel=SETS,
        note="texts per disjoint group of the group attack (0: none)",
    )
    num_groups: int | None = setting(
        None,
        help="At most this many disjoint groups per side (groups never overlap; A.4's did).",
        ge=1,
        panel=SETS,
    )
    methods: tuple[str, ...] | None = setting(
        None,
        help="The attacks scored (None: perplexity, zlib, min_k, + reference with one).",
        cli=False,
        note="null: perplexity, zlib, min_k (+ reference with a public model); or a list of min_k_pp, lowercase, recall, neighbourhood (needs mlm), samia, ... or all; the blind baseline is always reported (docs/membership.md)",
    )
    reference: str | None = setting(
        None,
        help="Public reference model for calibration ('base': a fine-tune's recorded base model).",
        panel=METHODS_PANEL,
        yaml=False,  # public_model:
    )
    min_k: float = setting(
        0.2, help="Fraction of least likely tokens for Min-K% Prob.", gt=0, le=1, panel=METHODS_PANEL
    )
    mlm: str | None = setting(
        None,
        help="HF masked-LM directory that makes the neighbourhood method's neighbours.",
        panel=METHODS_PANEL,
        note="HF masked-LM directory for the neighbourhood method's neighbours",
    )
    recall_prefix: str | None = setting(
        None,
        help="Non-member texts (file) forming ReCaLL's prefix (default: --recall-shots non-members, left out "
        "of the evaluation).",
        panel=METHODS_PANEL,
        note="file of non-member texts for ReCaLL's prefix (null: recall_shots non-members)",
    )
    recall_shots: int = setting(
        3, help="Non-members in ReCaLL's prefix without --recall-prefix.", ge=1, panel=METHODS_PANEL
    )
    neighbours: int = setting(
        8, help="Neighbours per text for the neighbourhood method.", ge=1, panel=METHODS_PANEL
    )
    wbc_windows: tuple[int, ...] = setting(DEFAULT_WINDOWS, help="WBC's window sizes.", cli=False)
    rmia_population: int = setting(
        25,
        help="Non-members that become RMIA's population z (left out of the evaluation).",
        ge=1,
        panel=FINETUNE,
    )
    rmia_offline_a: float = setting(
        DEFAULT_OFFLINE_A,
        help="RMIA's offline a: p(x) = (1+a)/2 p_ref(x) + (1-a)/2.",
        ge=0,
        le=1,
        panel=FINETUNE,
    )
    rmia_references: tuple[str, ...] = setting(
        (),
        help="A further OUT reference model for RMIA (repeat it; RMIA averages them with --reference).",
        option="--rmia-reference",
        panel=FINETUNE,
    )
    rmia_gamma: float = setting(
        1.0, help="RMIA's gamma: x beats z when its ratio is > gamma times z's.", gt=0, panel=FINETUNE
    )
    samia_samples: int = setting(
        10, help="SaMIA: continuations sampled per text (the paper: 10).", ge=1, panel=SAMIA
    )
    samia_prefix_share: float = setting(
        0.5, help="SaMIA: share of a text's words given as the prefix.", gt=0, lt=1, panel=SAMIA
    )
    samia_max_new_tokens: int = setting(
        64, help="SaMIA: tokens generated per sample at most.", ge=1, panel=SAMIA
    )
    samia_temperature: float = setting(1.0, help="SaMIA: sampling temperature.", gt=0, panel=SAMIA)
    samia_top_k: int = setting(
        50, help="SaMIA: sample among the k most likely tokens (0: all).", ge=0, panel=SAMIA
    )
    samia_ngram: int = setting(1, help="SaMIA: N of the ROUGE-N recall (1 or 2).", ge=1, le=2, panel=SAMIA)
    blind: bool = setting(True, help="Report the blind (text-only) baseline beside the attacks.", panel=STATS)
    n_boot: int = setting(
        N_BOOT,
        help="Bootstrap replicates behind every interval.",
        ge=1,
        panel=STATS,
        note="bootstrap replicates of every 95 % interval (over users / text clusters)",
    )
    seed: int = setting(0, help="Random seed (same seed, same result).", ge=0, le=2**32 - 1, panel=STATS)

    def check(self) -> None:
        if self.methods is not None:  # the names; whether their models are given is checked at the run
            # lazy: torch (the CLI imports this module to build its options)
            from lmleak.attacks.mia_methods import parse_methods

            parse_methods(self.methods, reference=True, mlm=True)
        for w in self.wbc_windows:
            if isinstance(w, bool) or not isinstance(w, int) or w < 1:
                raise ConfigError(
                    f"window sizes are whole numbers >= 1, got {w!r}",
                    field="wbc_windows",
                    hint="e.g. 1 5 10 20",
                )
        if not self.wbc_windows:
            raise ConfigError(
                "wbc_windows is empty", field="wbc_windows", hint="give window sizes, e.g. 1 5 10 20"
            )
        if self.members is not None and self.non_members is None and self.benchmark is None:
            raise ConfigError(
                "members alone would be ignored (the non-members would come from holdout.json)",
                field="members",
                hint="give non_members too (two files), or leave members out to split the corpus by holdout.json",
            )

    def samia(self) -> SamiaSettings:
        """SaMIA's settings (:class:`~lmleak.attacks.samia.SamiaSettings`)."""
        return SamiaSettings(
            self.samia_samples,
            self.samia_prefix_share,
            self.samia_max_new_tokens,
            self.samia_temperature,
            self.samia_top_k,
            self.samia_ngram,
        )


def method_options(
    settings: MembershipSettings,
    *,
    reference: Any = None,
    mlm: Any = None,
    resolve: Callable[[str], str] = str,
) -> MethodOptions:
    """The loaded :class:`MethodOptions` of ``settings``: the method names checked against the models
    given (``reference``, the loaded reference model; the masked LM), the masked LM loaded from the
    folder ``mlm`` (or the loaded ``mlm`` given), ReCaLL's prefix read from the file ``recall_prefix`` (its texts, one per line, each
    ending in a newline), RMIA's further references loaded. ``resolve`` makes a configured path
    absolute (the audit config's folder).

    Raises:
        ConfigError: a method whose model is missing (:func:`parse_methods`).
    """
    # lazy: torch and pandas (the CLI imports this module to build its options)
    from lmleak.attacks.mia_methods import MethodOptions, parse_methods

    # lazy: as above
    from lmleak.attacks.mia_texts import read_texts

    # lazy: as above
    from lmleak.models.hf_masked import HFMaskedLM

    # lazy: as above
    from lmleak.models.loading import load_model

    s = settings
    names = (
        None
        if s.methods is None
        else parse_methods(
            s.methods,
            reference=reference is not None,
            mlm=mlm is not None or s.mlm is not None,
            field="methods",
        )
    )
    prefix = None
    if s.recall_prefix is not None:
        prefix = "\n".join(read_texts(resolve(s.recall_prefix), field=s.field)) + "\n"
    return MethodOptions(
        methods=names,
        recall_prefix=prefix,
        recall_shots=s.recall_shots,
        num_neighbours=s.neighbours,
        mlm=mlm if mlm is not None or s.mlm is None else HFMaskedLM.load(resolve(s.mlm)),
        seed=s.seed,
        samia=s.samia(),
        wbc_windows=s.wbc_windows,
        rmia_offline_a=s.rmia_offline_a,
        rmia_gamma=s.rmia_gamma,
        rmia_population=s.rmia_population,
        rmia_references=tuple(load_model(resolve(r)) for r in s.rmia_references),
        reference=reference,
    )
