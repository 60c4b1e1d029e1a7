"""``lmleak --help`` and every ``lmleak CMD --help`` import no torch (docs/ARCHITECTURE.md).

The commands' options are generated from settings classes that live in light modules
(``attacks/settings.py``, ``report/settings.py``, ``audit/dp_training.py``, ``experiments/options.py``
...); the heavy libraries and the method modules are imported inside a command, when it runs. The
check runs in a fresh interpreter (this test process has long imported torch), and asserts which
modules are loaded, never how long that took.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

#: Third-party libraries that building the app and printing any help must not import.
HEAVY = ("torch", "transformers", "opacus", "pandas", "pyarrow", "scipy", "sklearn", "presidio_analyzer",
         "spacy", "plotly", "matplotlib", "fastapi", "ray", "vllm", "peft", "datasets")  # fmt: skip

#: lmleak modules that run an analysis (and import numpy, torch or a model backend at module level):
#: the CLI imports them inside its commands.
METHODS = (
    "lmleak.ledger", "lmleak.models.loading", "lmleak.models.torch_causal", "lmleak.models.hf_causal",
    "lmleak.report.leakage", "lmleak.report.engine", "lmleak.report.features", "lmleak.attacks.exposure",
    "lmleak.attacks.extraction", "lmleak.attacks.dp_audit", "lmleak.attacks.membership",
    "lmleak.audit.config", "lmleak.audit.dp_audit", "lmleak.audit.runner", "lmleak.experiments.kart",
    "lmleak.train.trainer", "lmleak.pii.evaluate", "lmleak.data.loaders",
)  # fmt: skip

#: Run in a fresh interpreter: build the app, print the help of every command and group (hidden
#: ones too), then report the exit codes that were not 0 and the modules now loaded.
PROGRAM = """
import json, sys
import typer
from typer.testing import CliRunner
from lmleak.cli.main import app

def paths(cmd, path):
    yield path
    for name, sub in sorted(getattr(cmd, "commands", {}).items()):
        yield from paths(sub, (*path, name))

runner = CliRunner()
failed = {}
for path in paths(typer.main.get_command(app), ()):
    result = runner.invoke(app, [*path, "--help"])
    if result.exit_code != 0:
        failed[" ".join(path)] = result.exit_code
print(json.dumps({"failed": failed, "modules": sorted(sys.modules)}))
"""


@pytest.fixture(scope="module")
def help_everywhere() -> tuple[dict[str, int], set[str]]:
    """The commands whose ``--help`` exited non-zero, and the modules loaded after all of them."""
    done = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    return report["failed"], set(report["modules"])


def test_every_help_is_printed_without_torch_or_a_method_module(help_everywhere):
    failed, modules = help_everywhere
    assert not failed, f"--help did not exit 0: {failed}"
    heavy = [h for h in HEAVY if h in {name.split(".")[0] for name in modules}]
    assert not heavy, f"imported by lmleak --help, import them inside the command: {heavy}"
    methods = [m for m in METHODS if m in modules]
    assert not methods, f"imported by lmleak --help, import them inside the command that runs: {methods}"


def test_the_check_sees_the_modules_the_cli_does_import(help_everywhere):
    # not vacuous: the subprocess reports what it imported (typer, the CLI and its settings)
    _, modules = help_everywhere
    assert {"typer", "lmleak.cli.main", "lmleak.report.settings", "lmleak.attacks.settings"} <= modules
