"""``lmleak cache``: the answer cache of models behind an HTTP API. It holds training text.

Invocations:
    lmleak cache info  [--cache-dir DIR | --run RUN]
    lmleak cache clear [--cache-dir DIR | --run RUN]

``--run RUN`` is the cache inside a run (``RUN/http-cache``, the default place); ``--cache-dir DIR``
a folder named with ``lmleak --cache-dir DIR`` or ``?cache=DIR``; with neither, the folder where
lmleak before issue 25 kept every answer of every run (``$LMLEAK_CACHE/http``, else
``~/.cache/lmleak/http``). ``clear`` deletes only a folder that is an lmleak cache (its
``CACHEDIR.TAG``, or the old layout), never anything else.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from lmleak.cli.common import JsonOpt, out, print_json
from lmleak.errors import ConfigError

CacheDirOpt = Annotated[
    Path | None, typer.Option("--cache-dir", help="A cache folder named with lmleak --cache-dir or ?cache=.")
]
CacheRunOpt = Annotated[Path | None, typer.Option("--run", help="A run: its cache is RUN/http-cache.")]


def register(app: typer.Typer, groups: dict[str, typer.Typer]) -> None:
    """Add ``lmleak cache info`` and ``lmleak cache clear``."""
    cache_app = typer.Typer(
        help="The HTTP answer cache (it holds training text): where it is, how big, delete it.\n\n"
        "Example: lmleak cache info --run runs/report",
        no_args_is_help=True,
    )
    cache_app.command("info")(info)
    cache_app.command("clear")(clear)
    app.add_typer(cache_app, name="cache")


def _folder(cache_dir: Path | None, run: Path | None) -> Path:
    # lazy: lmleak.models.http_cache imports the HTTP stack, only for this command
    from lmleak.models.http_cache import RUN_CACHE, legacy_cache_dir

    if cache_dir is not None and run is not None:
        raise ConfigError("give --cache-dir or --run, not both", field="--cache-dir")
    if run is not None:
        return run / RUN_CACHE
    return cache_dir if cache_dir is not None else legacy_cache_dir()


def _say(verb: str, rec: dict[str, Any]) -> None:
    if not rec["exists"]:
        out.print(f"no cache at {rec['path']}", soft_wrap=True)
        return
    out.print(
        f"{verb} {rec['path']}: {rec['answers']:,} answer(s) of {rec['models']} model(s), "
        f"{rec['bytes'] / 1e6:.1f} MB (training text: the audited documents and prompts)",
        soft_wrap=True,
    )


def info(cache_dir: CacheDirOpt = None, run: CacheRunOpt = None, json_out: JsonOpt = False) -> None:
    """Where a cache folder is and what it holds.

    Example: lmleak cache info --run runs/report
    """
    from lmleak.models.http_cache import cache_info

    rec = cache_info(_folder(cache_dir, run))
    if json_out:
        print_json(rec)
    else:
        _say("cache", rec)


def clear(cache_dir: CacheDirOpt = None, run: CacheRunOpt = None, json_out: JsonOpt = False) -> None:
    """Delete a cache folder (only an lmleak cache: it carries CACHEDIR.TAG, or the old layout).

    Example: lmleak cache clear --run runs/report
    """
    from lmleak.models.http_cache import clear_cache

    rec = clear_cache(_folder(cache_dir, run))
    if json_out:
        print_json({**rec, "deleted": rec["exists"]})
    else:
        _say("deleted", rec)
