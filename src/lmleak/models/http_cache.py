"""The answer cache of a model behind an HTTP API: per model, valid for one fingerprint only.

**It holds training text.** A scoring request carries the token ids of the audited documents and a
generation request the prompts; the answers echo them. So the cache lives, by default, inside the
run it serves (``RUN/http-cache/``: deleting the run deletes it), or in a folder the user names
(``lmleak --cache-dir DIR`` or ``?cache=DIR`` in the model URL, shared between runs). A redacted
run keeps no cache at all, and with no run open (library use) nothing is cached unless a folder is
named. ``lmleak cache clear`` deletes a cache folder.

Layout of a cache folder (owner-only: folders 0700, files 0600, every file written atomically)::

    DIR/CACHEDIR.TAG                  marks the folder as a cache (backup tools skip it)
    DIR/<model key>/probe.json        the model's fingerprint: what it answered to a fixed probe
    DIR/<model key>/<ab>/<key>.json   one answer; key = SHA-256 of (fingerprint, path, request body)

The **fingerprint** of the model that answers (:class:`Probe`) is taken at the start of every run,
never from the cache: the server's ``/v1/models`` entry (without the fields vLLM regenerates on
every request, ``created`` and ``permission``), the tier, and the model's answer to a fixed probe
(the log-probabilities of a fixed token sequence on the scoring tiers, the greedy text of a fixed
prompt on the others). When the answer in ``probe.json`` differs (an entry changed, or a
log-probability moved by more than :data:`PROBE_TOLERANCE`), the model behind the URL is another
one: that model's cached answers are deleted, and one line says so.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from lmleak import progress
from lmleak.errors import ConfigError

#: The cache folder's name inside a run.
RUN_CACHE = "http-cache"
#: A cache folder's marker (https://bford.info/cachedir/); ``lmleak cache clear`` deletes only marked folders.
TAG = "CACHEDIR.TAG"
TAG_TEXT = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# lmleak's HTTP answer cache: it holds training text (the audited documents' token ids and the\n"
    "# answers that echo them). Delete it with `lmleak cache clear --cache-dir THIS_FOLDER`.\n"
)
#: Largest difference (nats) between two answers to the probe that still counts as the same model:
#: a server may round or batch differently from one run to the next; another model differs by more.
PROBE_TOLERANCE = 1e-3
#: Fields of a ``/v1/models`` entry that vLLM regenerates on every request.
VOLATILE_CARD_KEYS = ("created", "permission")


def _sha(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, ensure_ascii=True).encode()).hexdigest()


def stable_card(card: dict[str, Any]) -> dict[str, Any]:
    """A ``/v1/models`` entry without its volatile fields.

    Example:
        >>> stable_card({"id": "m", "created": 1700000000, "permission": [{"id": "x"}], "root": "/m"})
        {'id': 'm', 'root': '/m'}
    """
    return {k: v for k, v in card.items() if k not in VOLATILE_CARD_KEYS}


@dataclass(frozen=True)
class Probe:
    """What a server answered, at the start of a run, about the model behind ``endpoint#model``.

    ``logprobs``: the probe's log-probabilities (scoring tiers, and chat with log-probabilities);
    ``text``: its generated text (tiers without log-probabilities; also chat).
    """

    endpoint: str
    model: str
    tier: str
    card: dict[str, Any] = field(default_factory=dict)
    ids: tuple[int, ...] = ()
    logprobs: tuple[float, ...] = ()
    text: str | None = None
    #: what the client tokenises with (:func:`~lmleak.models.http_tokenizer.tokenizer_sha256`, or
    #: "server /tokenize"): the same server read through another tokenizer is another model
    tokenizer: str | None = None

    def probe_sha256(self) -> str:
        """A hash of the probe's answer (log-probabilities rounded to 1e-4 nats, and the text)."""
        return _sha(
            {"ids": list(self.ids), "logprobs": [round(x, 4) for x in self.logprobs], "text": self.text}
        )

    def fingerprint(self) -> str:
        """16 hex digits naming the model: its stable card, tier, probe answer and tokenizer."""
        parts = [self.endpoint, self.model, self.tier, stable_card(self.card), self.probe_sha256()]
        return _sha(parts if self.tokenizer is None else [*parts, self.tokenizer])[:16]

    def differs(self, other: Probe) -> str | None:
        """Why ``other`` is not the same model as this one (None: the same, within the tolerance).

        Example:
            >>> a = Probe("http://h/v1", "m", "echo", {"id": "m"}, (1, 2), (-1.0, -2.0))
            >>> a.differs(Probe("http://h/v1", "m", "echo", {"id": "m"}, (1, 2), (-1.0, -2.0004))) is None
            True
            >>> a.differs(Probe("http://h/v1", "m", "echo", {"id": "m"}, (1, 2), (-1.0, -2.5)))
            'its log-probabilities of the fixed probe moved by up to 0.5 nats (tolerance 0.001)'
        """
        if stable_card(self.card) != stable_card(other.card):
            changed = sorted(
                k
                for k in {*self.card, *other.card} - set(VOLATILE_CARD_KEYS)
                if self.card.get(k) != other.card.get(k)
            )
            return f"its /v1/models entry changed ({', '.join(changed)})"
        if self.tokenizer != other.tokenizer:
            return "it is read through another tokenizer"
        if (self.tier, self.ids, self.text) != (other.tier, other.ids, other.text):
            what = (
                "tier"
                if self.tier != other.tier
                else "probe tokens"
                if self.ids != other.ids
                else "generated text"
            )
            return f"its {what} for the fixed probe changed"
        if len(self.logprobs) != len(other.logprobs):
            return "its answer to the fixed probe has another length"
        moved = max((abs(a - b) for a, b in zip(self.logprobs, other.logprobs, strict=True)), default=0.0)
        if not moved <= PROBE_TOLERANCE:  # NaN counts as moved
            return f"its log-probabilities of the fixed probe moved by up to {moved:.3g} nats (tolerance {PROBE_TOLERANCE:g})"
        return None

    def to_dict(self) -> dict[str, Any]:
        return {
            **asdict(self),
            "ids": list(self.ids),
            "logprobs": list(self.logprobs),
            "fingerprint": self.fingerprint(),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Probe:
        return cls(
            endpoint=str(d["endpoint"]),
            model=str(d["model"]),
            tier=str(d["tier"]),
            card=dict(d.get("card") or {}),
            ids=tuple(int(i) for i in d.get("ids") or ()),
            logprobs=tuple(float(x) for x in d.get("logprobs") or ()),
            text=d.get("text"),
            tokenizer=d.get("tokenizer"),
        )


def model_key(endpoint: str, model: str) -> str:
    """The folder of one model's answers inside a cache folder."""
    return hashlib.sha256(f"{endpoint}#{model}".encode()).hexdigest()[:16]


def _private_dir(d: Path) -> None:
    """Create ``d`` (and parents) owner-only; only folders created here are chmod-ed (never /tmp)."""
    missing = [p for p in (d, *d.parents) if not p.exists()]
    d.mkdir(parents=True, exist_ok=True, mode=0o700)
    for p in missing:
        with contextlib.suppress(OSError):
            os.chmod(p, 0o700)


def _write_private(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def mark_cache_dir(root: Path) -> None:
    """Create ``root`` owner-only with its ``CACHEDIR.TAG``."""
    _private_dir(root)
    if not (root / TAG).exists():
        _write_private(root / TAG, TAG_TEXT)


class AnswerCache:
    """The answers of one model (``probe``) in one cache folder; opening it checks the fingerprint."""

    def __init__(self, root: str | Path, probe: Probe) -> None:
        self.root = Path(root).expanduser()
        self.dir = self.root / model_key(probe.endpoint, probe.model)
        self.invalidated: str | None = None
        mark_cache_dir(self.root)
        _private_dir(self.dir)
        self.fingerprint = self._check(probe)

    def _check(self, probe: Probe) -> str:
        """The fingerprint the entries are keyed by: the stored one when ``probe`` is the same model,
        else the new one, after deleting the other model's answers (said in one line)."""
        meta = self.dir / "probe.json"
        old: Probe | None = None
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            old = Probe.from_dict(json.loads(meta.read_text(encoding="utf-8")))
        if old is not None:
            why = old.differs(probe)
            if why is None:
                return old.fingerprint()
            n = sum(1 for _ in self.dir.glob("??/*.json"))
            for sub in self.dir.iterdir():
                if sub.is_dir():
                    shutil.rmtree(sub, ignore_errors=True)
            self.invalidated = (
                f"{probe.endpoint}#{probe.model} is not the model whose answers {self.root} held ({why}); "
                f"its {n} cached answers were deleted"
            )
            progress.log(f"cache: {self.invalidated}")
        _write_private(meta, json.dumps(probe.to_dict(), indent=1))
        return probe.fingerprint()

    def _path(self, path: str, body: Any) -> Path:
        key = _sha([self.fingerprint, path, body])
        return self.dir / key[:2] / f"{key}.json"

    def get(self, path: str, body: Any) -> tuple[bool, Any]:
        """``(True, answer)`` when cached, else ``(False, None)`` (a damaged entry counts as missing)."""
        p = self._path(path, body)
        try:
            return True, json.loads(p.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return False, None

    def put(self, path: str, body: Any, answer: Any) -> None:
        p = self._path(path, body)
        _private_dir(p.parent)
        _write_private(p, json.dumps(answer))

    def drop(self, path: str, body: Any) -> None:
        self._path(path, body).unlink(missing_ok=True)


def legacy_cache_dir() -> Path:
    """Where lmleak before issue 25 kept every HTTP answer of every run (``$LMLEAK_CACHE/http``, else
    ``~/.cache/lmleak/http``): keyed without the model, outside any run."""
    return Path(os.environ.get("LMLEAK_CACHE", Path.home() / ".cache" / "lmleak")) / "http"


def _is_legacy(root: Path) -> bool:
    """A folder of the old layout: only two-hex-digit folders of ``<sha256>.json`` files."""
    subs = list(root.iterdir())
    return bool(subs) and all(
        s.is_dir()
        and len(s.name) == 2
        and all(f.suffix == ".json" and len(f.stem) == 64 for f in s.iterdir())
        for s in subs
    )


def cache_info(root: str | Path) -> dict[str, Any]:
    """``{path, exists, answers, bytes, models}`` of a cache folder."""
    p = Path(root).expanduser()
    if not p.is_dir():
        return {"path": str(p), "exists": False, "answers": 0, "bytes": 0, "models": 0}
    files = [f for f in p.rglob("*.json") if f.name != "probe.json"]
    return {
        "path": str(p),
        "exists": True,
        "answers": len(files),
        "bytes": sum(f.stat().st_size for f in files),
        "models": sum(1 for _ in p.glob("*/probe.json")),
    }


def clear_cache(root: str | Path) -> dict[str, Any]:
    """Delete a cache folder (it must carry ``CACHEDIR.TAG``, or have the old layout); returns what
    it held (:func:`cache_info`). A folder that is not an lmleak cache is refused, never deleted."""
    p = Path(root).expanduser()
    info = cache_info(p)
    if not info["exists"]:
        return info
    if not (p / TAG).is_file() and not _is_legacy(p):
        raise ConfigError(
            f"{p} is not an lmleak answer cache (no {TAG}); nothing was deleted",
            field="--cache-dir",
            hint="give the folder of --cache-dir, or RUN/http-cache",
        )
    shutil.rmtree(p)
    return info
