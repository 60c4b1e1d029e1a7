"""Synthetic corpora with known PII: customer-service dialogues (CustomerSim), a mailing-list
archive (synth mail) and clinical notes."""

from __future__ import annotations

from pathlib import Path

from lmleak.runs import secure_dir


def write_jsonl_files(out: Path, files: dict[str, tuple[str, list[str]]]) -> dict[str, Path]:
    """Write each ``key: (file name, JSON lines)`` under ``out`` via a temporary name; the paths by key.

    Example:
        >>> import tempfile
        >>> paths = write_jsonl_files(Path(tempfile.mkdtemp()), {"corpus": ("c.jsonl", ['{"a": 1}'])})
        >>> paths["corpus"].read_text()
        '{"a": 1}\\n'
    """
    secure_dir(out)  # owner-only: the secrets file lists every PII span
    paths = {}
    for key, (name, lines) in files.items():
        path = out / name
        tmp = path.with_name(f".{name}.tmp")
        tmp.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        tmp.chmod(0o600)
        tmp.replace(path)
        paths[key] = path
    return paths
