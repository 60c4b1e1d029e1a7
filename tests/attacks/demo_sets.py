"""The quick demo's membership sets and the people behind them: shared by the MIA test modules."""

from __future__ import annotations

from pathlib import Path

from lmleak.jsonl import read_jsonl


def demo_sets(tmp_path: Path) -> tuple[list[str], list[str]]:
    """The quick demo's member and non-member texts (its e-mail lines), written under ``tmp_path``."""
    from lmleak.audit.demo import SIZES, _synthesise, _write_attack_inputs

    d = _synthesise(tmp_path, SIZES["quick"], 0, lambda m: None)
    _write_attack_inputs(tmp_path, d, SIZES["quick"])
    read = lambda name: [r["text"] for r in read_jsonl(tmp_path / "data" / name)]  # noqa: E731
    return read("members.jsonl"), read("non_members.jsonl")


def line_owners(tmp_path: Path) -> dict[str, set[str]]:
    """The users who wrote each line of the corpora under ``tmp_path``: the truth the clusters of
    texts must recover (a person may write under several addresses). Users are named by corpus file
    and id: two synthetic corpora reuse the same ids for different people."""
    owners: dict[str, set[str]] = {}
    for corpus in tmp_path.rglob("corpus.jsonl"):
        for doc in read_jsonl(corpus):
            for line in doc["text"].split("\n"):
                owners.setdefault(line, set()).add(f"{corpus.relative_to(tmp_path)}:{doc['user_id']}")
    return owners
