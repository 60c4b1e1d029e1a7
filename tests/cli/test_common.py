"""The CLI's process set-up (lmleak.cli.common)."""

from __future__ import annotations

import os
import subprocess
import sys

from lmleak.cli.common import offline_environment


def test_the_cli_turns_off_the_hub_and_transformers_progress_bars(monkeypatch):
    # regression: loading a Hugging Face model printed transformers' "Loading weights" tqdm bar
    # into logs, even with --quiet
    monkeypatch.delenv("HF_HUB_DISABLE_PROGRESS_BARS", raising=False)
    offline_environment()
    assert os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] == "1"
    code = (
        "from lmleak.cli.common import offline_environment; offline_environment(); "
        "import transformers.utils.logging as l; print(l.is_progress_bar_enabled())"
    )
    env = {k: v for k, v in os.environ.items() if k != "HF_HUB_DISABLE_PROGRESS_BARS"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.stdout.strip() == "False", out.stderr
