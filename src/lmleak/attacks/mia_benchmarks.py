"""Published membership benchmarks read from a local copy (issue 35, item 5): WikiMIA and MIMIR as
the :class:`~lmleak.attacks.mia_texts.MembershipTexts` that ``lmleak mia --benchmark`` scores, so an
lmleak AUC can be set beside the published ones (docs/membership.md, "Published benchmarks").

Nothing is downloaded here (no registry package ships either set): the user fetches the set once and
gives its folder. The formats are the published ones:

- **WikiMIA** (Shi et al. 2024, ICLR, §2.2; the Hugging Face dataset ``swj0419/WikiMIA``): one split
  per text length, ``WikiMIA_length32`` / ``64`` / ``128`` / ``256``, each row ``input`` (the text)
  and ``label`` (1: seen in pretraining, a member; 0: unseen). The hub stores each split as
  ``data/WikiMIA_length32-00000-of-00001-<hash>.parquet``; its first upload (and ``to_json``) as
  ``WikiMIA_length32.jsonl``.
- **MIMIR** (Duan et al. 2024, COLM; ``iamgroot42/mimir``): one config per Pile source (``arxiv``,
  ``dm_mathematics``, ``github``, ``hackernews``, ``pile_cc``, ``pubmed_central``,
  ``wikipedia_(en)``; also ``full_pile``, ``c4``, ``temporal_arxiv``, ``temporal_wiki``), split by
  the non-members' n-gram overlap with the training data (``ngram_13_0.8``: 13-grams, overlap below
  0.8, the paper's Table 1 setting; ``ngram_13_0.2``, ``ngram_7_0.2``). The hub stores the members as
  ``cache_100_200_1000_512/train/<source>_<split>.jsonl`` and the non-members as ``.../test/...``,
  one JSON string per line (``full_pile``: ``cache_100_200_10000_512``; a source without splits:
  ``<source>.jsonl``); its loading script pairs them into rows ``member`` / ``nonmember``.

Each layout a user gets is read (:func:`benchmark_texts`): the hub download (``huggingface-cli
download <repo> --repo-type dataset --local-dir DIR``, or the hub cache folder
``datasets--<owner>--<name>`` with its ``snapshots/``), ``datasets``' ``save_to_disk`` of the
dataset or of one split (Arrow files), and a parquet / JSONL export of a split's rows. A folder that
matches none is refused in one line naming the folder, the files expected and the command that
fetches them.

Benchmark texts have no users, so the MembershipTexts carry no groups: every interval, the
split-half headline and the placebo then group texts by shared PII and near-duplication
(:func:`lmleak.attacks.mia_sets.text_clusters`), each text its own group when nothing links it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lmleak.attacks.mia_texts import MembershipTexts
from lmleak.errors import ConfigError, DataFileError, did_you_mean
from lmleak.jsonl import bad_json, loads
from lmleak.words import plural

BENCHMARKS = ("wikimia", "mimir")
WIKIMIA_LENGTHS = (32, 64, 128, 256)
MIMIR_NGRAM_SPLITS = ("ngram_13_0.8", "ngram_13_0.2", "ngram_7_0.2")
#: MIMIR's configs and their splits, as its loading script (version 1.3.0) declares them; "none": the
#: config has one unnamed split.
MIMIR_SPLITS: dict[str, tuple[str, ...]] = {
    **{
        s: MIMIR_NGRAM_SPLITS
        for s in (
            "arxiv",
            "dm_mathematics",
            "github",
            "hackernews",
            "pile_cc",
            "pubmed_central",
            "wikipedia_(en)",
        )
    },
    "full_pile": ("none",),
    "c4": ("none",),
    "temporal_arxiv": ("2020_08", "2021_01", "2021_06", "2022_01", "2022_06", "2023_01", "2023_06"),
    "temporal_wiki": ("none",),
}
#: The subset each benchmark reads without ``--benchmark-subset``: WikiMIA's shortest texts (the
#: split Min-K%++'s headline table reports) and MIMIR's Wikipedia at the paper's Table 1 setting.
DEFAULT_SUBSETS = {"wikimia": "WikiMIA_length32", "mimir": "wikipedia_(en)/ngram_13_0.8"}
TITLES = {"wikimia": "WikiMIA (Shi et al. 2024)", "mimir": "MIMIR (Duan et al. 2024)"}
REPOS = {"wikimia": "swj0419/WikiMIA", "mimir": "iamgroot42/mimir"}


def resolve_subset(benchmark: str, subset: str | None = None) -> str:
    """The canonical subset name: ``WikiMIA_length<n>`` (given as ``32``, ``length32`` or the split's
    name), or MIMIR's ``<source>/<split>`` (the split defaults to ``ngram_13_0.8``, or to ``none``
    for a source without splits).

    Raises:
        ConfigError: an unknown benchmark, length, source or split (with the choices).

    Example:
        >>> resolve_subset("wikimia"), resolve_subset("wikimia", "128"), resolve_subset("mimir", "github")
        ('WikiMIA_length32', 'WikiMIA_length128', 'github/ngram_13_0.8')
        >>> resolve_subset("mimir", "full_pile"), resolve_subset("mimir", "pile_cc/ngram_7_0.2")
        ('full_pile/none', 'pile_cc/ngram_7_0.2')
    """
    name = _benchmark_name(benchmark)
    if subset is None or not subset.strip():
        return DEFAULT_SUBSETS[name]
    s = subset.strip()
    if name == "wikimia":
        n = s.lower().removeprefix("wikimia_").removeprefix("length")
        if n.isdigit() and int(n) in WIKIMIA_LENGTHS:
            return f"WikiMIA_length{int(n)}"
        raise ConfigError(
            f"WikiMIA has no subset {s!r}",
            field="--benchmark-subset",
            hint=f"give a text length: {', '.join(map(str, WIKIMIA_LENGTHS))} (default 32)",
        )
    source, _, split = s.partition("/")
    if source not in MIMIR_SPLITS:
        raise ConfigError(
            f"MIMIR has no source {source!r}." + did_you_mean(source, list(MIMIR_SPLITS)),
            field="--benchmark-subset",
            hint=f"give SOURCE or SOURCE/SPLIT, SOURCE one of: {', '.join(MIMIR_SPLITS)}",
        )
    splits = MIMIR_SPLITS[source]
    split = split or (splits[0] if splits[0] in ("ngram_13_0.8", "none") else "")
    if split not in splits:
        raise ConfigError(
            f"MIMIR's {source} has no split {split!r}" if split else f"MIMIR's {source} needs a split",
            field="--benchmark-subset",
            hint=f"give {source}/SPLIT, SPLIT one of: {', '.join(splits)}",
        )
    return f"{source}/{split}"


def benchmark_texts(name: str, data_dir: str | Path, *, subset: str | None = None) -> MembershipTexts:
    """The members and non-members of a published benchmark from the folder the user downloaded.

    ``name``: ``wikimia`` or ``mimir``; ``subset``: see :func:`resolve_subset` (default
    :data:`DEFAULT_SUBSETS`). The texts are kept as published (no cut, no strip); ``source`` says
    which files they came from; ``groups`` is None (no users: see the module docstring).

    Raises:
        ConfigError: an unknown benchmark or subset, or a folder holding none of the layouts read
            (the message names the folder, the files expected and the command that fetches them).
        DataFileError: a file of the set that cannot be read (a Git LFS pointer instead of parquet,
            a row without its text or with a label other than 0 / 1), or a side left empty.

    Example:
        >>> import json, tempfile, pathlib
        >>> d = pathlib.Path(tempfile.mkdtemp())
        >>> rows = [{"input": "Old event text.", "label": 1}, {"input": "New event text.", "label": 0}]
        >>> _ = (d / "WikiMIA_length32.jsonl").write_text("".join(json.dumps(r) + "\\n" for r in rows))
        >>> t = benchmark_texts("wikimia", d)
        >>> t.members, t.non_members, t.groups
        (['Old event text.'], ['New event text.'], None)
    """
    bench = _benchmark_name(name)
    canonical = resolve_subset(bench, subset)
    root = Path(data_dir)
    if not root.is_dir():
        raise ConfigError(
            f"{root}: no such folder",
            field="--data",
            hint=f"download the set first: {_fetch_command(bench, root)}",
        )
    if bench == "wikimia":
        mem, non, files = _wikimia(root, canonical)
    else:
        mem, non, files = _mimir(root, *canonical.split("/"))
    for side, texts in (("members", mem), ("non-members", non)):
        if not texts:
            raise DataFileError(
                f"no {side} in {TITLES[bench]} {canonical}",
                path=files[0],
                hint="check the download is complete (both labels / both files)",
            )
    shown = ", ".join(str(f) for f in files[:2]) + (f" and {len(files) - 2} more" if len(files) > 2 else "")
    source = (
        f"{TITLES[bench]} {canonical}, as published ({shown}): {plural(len(mem), 'member')}, "
        f"{plural(len(non), 'non-member')}; no users, so texts are grouped by shared PII and near-duplicates"
    )
    return MembershipTexts(mem, non, source=source, groups=None)


def benchmark_options(
    name: str | None,
    data: str | Path | None,
    subset: str | None = None,
    members: str | Path | None = None,
    non_members: str | Path | None = None,
    corpus: str | Path | None = None,
) -> MembershipTexts | None:
    """``lmleak mia --benchmark NAME --data DIR [--benchmark-subset S]``: :func:`benchmark_texts`, or
    None without ``--benchmark``. Nothing given is ignored: the benchmark brings both sides, so
    ``--members`` / ``--non-members`` / ``--corpus`` beside it are refused, as are ``--data`` and
    ``--benchmark-subset`` without it.

    Raises:
        ConfigError: one of those combinations, ``--benchmark`` without ``--data``, or what
            :func:`benchmark_texts` raises.

    Example:
        >>> benchmark_options(None, None) is None
        True
        >>> try:
        ...     benchmark_options("wikimia", "data/wikimia", corpus="corpus.jsonl")
        ... except ConfigError as e:
        ...     print(e.reason)
        --benchmark brings its own members and non-members; --corpus would be ignored
    """
    if name is None:
        extra = "--data" if data is not None else "--benchmark-subset" if subset is not None else None
        if extra:
            raise ConfigError(
                f"{extra} is read only with --benchmark", field=extra, hint="add --benchmark wikimia or mimir"
            )
        return None
    given = [
        o for o, v in (("--members", members), ("--non-members", non_members), ("--corpus", corpus)) if v
    ]
    if given:
        raise ConfigError(
            f"--benchmark brings its own members and non-members; {' and '.join(given)} would be ignored",
            field="--benchmark",
            hint=f"leave out {' and '.join(given)}, or --benchmark",
        )
    if data is None:
        bench = _benchmark_name(name)
        raise ConfigError(
            "--benchmark needs --data, the folder the set was downloaded to",
            field="--data",
            hint=f"download it, e.g. {_fetch_command(bench, Path('data', bench))}, and give --data data/{bench}",
        )
    return benchmark_texts(name, data, subset=subset)


def _benchmark_name(name: str) -> str:
    key = (name or "").strip().lower()
    if key not in BENCHMARKS:
        raise ConfigError(
            f"unknown benchmark {name!r}." + did_you_mean(key, BENCHMARKS),
            field="--benchmark",
            hint=f"use one of: {', '.join(BENCHMARKS)}",
        )
    return key


def _fetch_command(bench: str, root: Path) -> str:
    return f"huggingface-cli download {REPOS[bench]} --repo-type dataset --local-dir {root}"


def _bases(root: Path) -> list[Path]:
    """``root``, then each snapshot of a hub cache folder (``datasets--owner--name/snapshots/<rev>``)."""
    snaps = root / "snapshots"
    return [root, *(sorted(p for p in snaps.iterdir() if p.is_dir()) if snaps.is_dir() else [])]


def _first_match(bases: Sequence[Path], patterns: Sequence[str]) -> list[Path]:
    """The files of the first (base, pattern) that matches any, sorted (shards in order)."""
    for base in bases:
        for pattern in patterns:
            found = sorted(p for p in base.glob(pattern) if p.is_file())
            if found:
                return found
    return []


def _saved_split(bases: Sequence[Path], split: str, config: str | None = None) -> list[Path]:
    """The Arrow files of ``split`` saved by ``datasets``' ``save_to_disk``: a folder ``split/`` of a
    saved DatasetDict (``dataset_dict.json`` beside it), or the folder itself when it is one saved
    split whose ``state.json`` names ``split``. ``config``: refuse a save of another MIMIR config."""
    for base in bases:
        for folder in (base / split, base):
            state = _json_file(folder / "state.json")
            if state is None or (folder == base and state.get("_split") != split):
                continue
            if folder != base and not (base / "dataset_dict.json").is_file():
                continue
            info = _json_file(folder / "dataset_info.json") or {}
            if config is not None and info.get("config_name") not in (None, config):
                raise ConfigError(
                    f"{folder}: a save of MIMIR's {info['config_name']!r}, not {config!r}",
                    field="--data",
                    hint=f"give the folder saved from load_dataset('iamgroot42/mimir', '{config}')",
                )
            names = [d.get("filename") for d in state.get("_data_files") or [] if isinstance(d, dict)]
            files = [folder / n for n in names if isinstance(n, str)] or sorted(folder.glob("data-*.arrow"))
            if files:
                return files
    return []


def _json_file(path: Path) -> dict[str, Any] | None:
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return obj if isinstance(obj, dict) else None


def _wikimia(root: Path, split: str) -> tuple[list[str], list[str], list[Path]]:
    """WikiMIA's ``split``: members (label 1) and non-members (label 0), and the files read."""
    bases = _bases(root)
    # the hub's files, its parquet-converter branch (refs/convert/parquet), the files copied flat
    hub = (f"data/{split}-*.parquet", f"default/{split}/*.parquet", f"{split}-*.parquet", f"{split}.parquet")
    files = _first_match(bases, hub)
    files = files or _saved_split(bases, split) or _first_match(bases, (f"{split}.jsonl", f"{split}.json"))
    if not files:
        raise _not_found(
            "wikimia",
            root,
            split,
            f"data/{split}-*.parquet (the hub's files), {split}/data-*.arrow beside dataset_dict.json "
            f"(save_to_disk), or {split}.jsonl / .parquet with 'input' and 'label'",
        )
    mem: list[str] = []
    non: list[str] = []
    for f in files:
        rows = _read_rows(f, ("input", "label"), what="WikiMIA rows")
        for i, (text, label) in enumerate(zip(rows["input"], rows["label"], strict=True), start=1):
            if not isinstance(text, str) or not text.strip():
                raise DataFileError(
                    "missing or empty", path=f, line=i, field="input", hint="re-download the set"
                )
            if isinstance(label, bool) or label not in (0, 1):
                raise DataFileError(
                    f"expected 0 or 1, got {label!r}",
                    path=f,
                    line=i,
                    field="label",
                    hint="WikiMIA labels are 1 (member) and 0 (non-member)",
                )
            (mem if label == 1 else non).append(text)
    return mem, non, files


def _mimir(root: Path, source: str, split: str) -> tuple[list[str], list[str], list[Path]]:
    """MIMIR's ``source`` at ``split``: the hub's member / non-member files, else saved or exported rows."""
    stem = source if split == "none" else f"{source}_{split}"
    cache = "cache_100_200_10000_512" if source == "full_pile" else "cache_100_200_1000_512"
    bases = _bases(root)
    for base in bases:
        for folder in (base / cache, base):
            m, n = folder / "train" / f"{stem}.jsonl", folder / "test" / f"{stem}.jsonl"
            if m.is_file() and n.is_file():
                return _json_strings(m), _json_strings(n), [m, n]
    files = _saved_split(bases, split, config=source) or _first_match(
        bases, [f"{d}{split}.{x}" for d in ("", f"{source}/") for x in ("parquet", "jsonl")]
    )
    if not files:
        raise _not_found(
            "mimir",
            root,
            f"{source}/{split}",
            f"{cache}/train/{stem}.jsonl and {cache}/test/{stem}.jsonl (the hub's files), "
            f"{split}/data-*.arrow beside dataset_dict.json (save_to_disk), or {split}.parquet / .jsonl "
            "with 'member' and 'nonmember'",
        )
    mem: list[str] = []
    non: list[str] = []
    for f in files:
        rows = _read_rows(f, ("member", "nonmember"), what="MIMIR rows")
        for col, out in (("member", mem), ("nonmember", non)):
            for i, text in enumerate(rows[col], start=1):
                if not isinstance(text, str) or not text.strip():
                    raise DataFileError(
                        "missing or empty", path=f, line=i, field=col, hint="re-download the set"
                    )
                out.append(text)
    return mem, non, files


def _not_found(bench: str, root: Path, subset: str, expected: str) -> ConfigError:
    """The one-line refusal of a folder that holds none of the layouts read."""
    try:
        names = sorted(p.name + ("/" if p.is_dir() else "") for p in root.iterdir())
    except OSError:
        names = []
    held = ", ".join(names[:6]) + (", ..." if len(names) > 6 else "") if names else "nothing"
    return ConfigError(
        f"{root}: no {TITLES[bench]} {subset} found (it holds {held}); expected {expected}",
        field="--data",
        hint=f"download it: {_fetch_command(bench, root)}",
    )


def _read_rows(path: Path, columns: Sequence[str], *, what: str) -> dict[str, list[Any]]:
    """``columns`` of a parquet, Arrow (``save_to_disk``'s stream format) or JSONL file of rows."""
    if path.suffix in (".jsonl", ".json"):
        rows = [obj for _, obj in _json_lines(path, dict)]
        for i, r in enumerate(rows, start=1):
            missing = [c for c in columns if c not in r]
            if missing:
                raise DataFileError(
                    f"no {missing[0]!r}", path=path, line=i, hint=f"{what} have {' and '.join(columns)}"
                )
        return {c: [r[c] for r in rows] for c in columns} if rows else {c: [] for c in columns}
    table = _arrow_table(path)
    names = list(table.column_names)
    missing = [c for c in columns if c not in names]
    if missing:
        raise DataFileError(
            f"no column {missing[0]!r} (columns: {', '.join(names) or 'none'})",
            path=path,
            hint=f"{what} have {' and '.join(columns)}",
        )
    return {c: table.column(c).to_pylist() for c in columns}


def _arrow_table(path: Path) -> Any:
    """The table of a parquet or Arrow file; a file of neither (a Git LFS pointer) is refused."""
    import pyarrow as pa  # lazy: not needed to build the CLI
    import pyarrow.parquet as pq

    try:
        if path.suffix == ".parquet":
            return pq.read_table(path)
        with pa.memory_map(str(path)) as src:
            try:
                return pa.ipc.open_stream(src).read_all()
            except pa.ArrowInvalid:
                src.seek(0)
                return pa.ipc.open_file(src).read_all()
    except (pa.ArrowException, OSError) as e:
        head = path.read_bytes()[:64] if path.is_file() else b""
        lfs = head.startswith(b"version https://git-lfs")
        raise DataFileError(
            "a Git LFS pointer, not the data" if lfs else f"cannot read it as {path.suffix[1:]} ({e})",
            path=path,
            hint="fetch the files themselves: huggingface-cli download, or git lfs pull in a clone",
        ) from None


def _json_strings(path: Path) -> list[str]:
    """MIMIR's hub files: one JSON string per line (an object with ``text`` is read too)."""
    out = []
    for i, obj in _json_lines(path, (str, dict)):
        text = obj.get("text") if isinstance(obj, dict) else obj
        if not isinstance(text, str) or not text.strip():
            raise DataFileError(
                "missing or empty text", path=path, line=i, hint='each line is a JSON string: "the text"'
            )
        out.append(text)
    return out


def _json_lines(path: Path, kinds: type | tuple[type, ...]) -> list[tuple[int, Any]]:
    """``(line, value)`` of each non-blank line, each value of ``kinds``."""
    try:
        lines = path.read_text(encoding="utf-8-sig").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise DataFileError(f"cannot read it as UTF-8 text ({e})", path=path) from None
    out = []
    for i, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            obj = loads(line)
        except json.JSONDecodeError as e:
            reason, fix = bad_json(e, "one JSON value per line")
            raise DataFileError(reason, path=path, line=i, hint=fix) from None
        if not isinstance(obj, kinds):
            raise DataFileError(
                f"unexpected {type(obj).__name__}", path=path, line=i, hint="re-download the set"
            )
        out.append((i, obj))
    return out
