"""Which device a loaded model runs on: ``auto`` (a GPU when torch sees one), ``cpu``, ``cuda``, ``cuda:N``.

The choice comes, first found, from the ``device`` argument of :func:`lmleak.models.loading.load_model`,
the innermost :func:`use_device` block (``lmleak --device`` and an audit config's ``device:`` open
one), the ``LMLEAK_DEVICE`` environment variable, and finally ``auto``. Models compute on that
device and hand results back as CPU arrays, so everything downstream is unchanged; results agree
with the CPU's up to floating-point rounding (a rank can differ where two tokens' scores tie to
the last bits). Training (``lmleak train``) runs on the CPU.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator

from lmleak.errors import ConfigError

ENV = "LMLEAK_DEVICE"
_stack: list[str] = []
_PATTERN = re.compile(r"^(auto|cpu|cuda(:\d+)?|mps)$")


def requested_device(device: str | None = None) -> str:
    """The device asked for, before ``auto`` is resolved (see the module docstring for the order)."""
    for choice in (device, _stack[-1] if _stack else None, os.environ.get(ENV)):
        if choice:
            return check_device_name(choice)
    return "auto"


def check_device_name(name: str) -> str:
    """``name`` normalised, or a :class:`ConfigError` saying what is accepted.

    Example:
        >>> check_device_name(" CUDA:1 ")
        'cuda:1'
        >>> check_device_name("gpu")
        Traceback (most recent call last):
        ...
        lmleak.errors.ConfigError: field 'device': unknown device 'gpu'; use auto, cpu, cuda, cuda:N or mps
    """
    norm = str(name).strip().lower()
    if not _PATTERN.match(norm):
        raise ConfigError(f"unknown device {name!r}; use auto, cpu, cuda, cuda:N or mps", field="device")
    return norm


def resolve_device(device: str | None = None) -> str:
    """The concrete device: ``auto`` becomes ``cuda`` when torch sees a GPU, else ``cpu``; asking for a
    GPU torch cannot see is an error naming the fix."""
    import torch

    want = requested_device(device)
    if want == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if want.startswith("cuda"):
        if not torch.cuda.is_available():
            raise ConfigError(
                f"device {want!r} asked for, but this torch ({torch.__version__}) sees no CUDA GPU",
                field="device",
                hint="install a CUDA build of torch, or use --device cpu",
            )
        index = int(want.split(":", 1)[1]) if ":" in want else 0
        if index >= torch.cuda.device_count():
            raise ConfigError(
                f"device {want!r} asked for, but torch sees {torch.cuda.device_count()} GPU(s)",
                field="device",
                hint=f"use cuda:0 to cuda:{torch.cuda.device_count() - 1}",
            )
    if want == "mps" and not (hasattr(torch.backends, "mps") and torch.backends.mps.is_available()):
        raise ConfigError(
            "device 'mps' asked for, but torch sees no Apple GPU", field="device", hint="use --device cpu"
        )
    return want


@contextlib.contextmanager
def use_device(device: str | None) -> Iterator[None]:
    """Within the block, models load onto ``device`` unless a call names its own (None: no change)."""
    if device is None:
        yield
        return
    _stack.append(check_device_name(device))
    try:
        yield
    finally:
        _stack.pop()


def place(model: object, device: str | None = None) -> object:
    """Move ``model`` to the resolved device when it can move (``to_device``) and the device is not the CPU."""
    target = resolve_device(device)
    if target != "cpu" and hasattr(model, "to_device"):
        model.to_device(target)  # type: ignore[attr-defined]
    return model
