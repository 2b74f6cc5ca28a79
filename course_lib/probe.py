"""Probes: the part of a graded test that runs in the student's kernel, and nothing more.

The autograder never decides a grade in the kernel that ran the student's code: code there can
rewrite anything the kernel runs (the checks, the shell, frames, tensor classes). A graded test
is therefore split in two (see ``solutions/README.md``):

- the **probe**, the hidden part of a test cell, runs in the student's kernel: it calls the
  student's functions on inputs made with this module and hands back *plain data* (tensors,
  numbers, strings) with :func:`put`;
- the **judge**, an instructor-only cell after the test (:mod:`course_lib.judging`), runs in
  the grader, in a process that never ran student code, on that data only: it computes the
  expected values with the reference code and decides each behaviour's points.

Inputs are deterministic: :func:`randn`, :func:`rand`, :func:`randint` and :func:`set_params`
derive every value from a seed (and a parameter's name), never from the global random state,
so the judge rebuilds exactly the inputs and weights the probe was meant to use and never
trusts what the kernel says it used.

Each :func:`put` is sent at once as a display output of MIME type :data:`MIME` holding JSON
(tensors as base64 of their raw little-endian bytes), so what was recorded before an error
survives it. :func:`decode` reads such JSON back into plain tensors and Python values and
executes nothing (no pickle). Shapes: a value's shape is stored with it; nothing is assumed.
torch and NumPy are imported only when a tensor is made, sent or read (a probe of plain
Python values costs no torch import).
"""

from __future__ import annotations

import base64
import contextlib
import math
import sys
import zlib
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch
    from torch import nn

MIME = "application/vnd.a3.probe+json"
MAX_ELEMENTS = 1_000_000  # per tensor: a probe hands back small results, never datasets
MAX_DEPTH = 8  # nesting of lists and dicts
ERROR = "!error"  # suffix of the key that records why a case stopped
DTYPES = ("float32", "float64", "int64", "bool")  # what travels: every tensor becomes one
_WIDEN = {  # dtypes sent as the nearest type above
    "float16": "float32",
    "bfloat16": "float32",
    "int32": "int64",
    "int16": "int64",
    "int8": "int64",
    "uint8": "int64",
}

_prefix: list[str] = []  # names of the open cases, outermost first
_local: list[tuple[int | None, str, dict]] = []  # (cell execution count, key, encoded value)


# --- deterministic inputs ---------------------------------------------------------------------


def generator(seed: int) -> torch.Generator:
    """A CPU random generator seeded with ``seed`` (independent of ``torch.manual_seed``)."""
    import torch

    return torch.Generator().manual_seed(int(seed))


def randn(seed: int, *shape: int, scale: float = 1.0) -> torch.Tensor:
    """Standard normal values of ``shape`` (float32) times ``scale``, the same for a seed."""
    import torch

    return torch.randn(tuple(shape), generator=generator(seed)) * scale


def rand(seed: int, *shape: int) -> torch.Tensor:
    """Uniform values in [0, 1) of ``shape`` (float32), the same for a seed."""
    import torch

    return torch.rand(tuple(shape), generator=generator(seed))


def randint(seed: int, high: int, *shape: int, low: int = 0) -> torch.Tensor:
    """Integers in [low, high) of ``shape`` (int64), the same for a seed (token ids)."""
    import torch

    return torch.randint(low, high, shape, generator=generator(seed))


def name_seed(seed: int, name: str) -> int:
    """A seed for the parameter ``name`` under ``seed`` (stable across processes)."""
    return (int(seed) * 1_000_003 + zlib.crc32(name.encode())) % 2**62


def param(seed: int, name: str, shape: Sequence[int], scale: float = 0.5) -> torch.Tensor:
    """The value :func:`set_params` gives the parameter ``name`` of ``shape``."""
    return randn(name_seed(seed, name), *shape, scale=scale)


def set_params(module: nn.Module, seed: int, scale: float = 0.5) -> nn.Module:
    """Give every parameter of ``module`` the value :func:`param` makes of its name and shape
    (in place, without recording gradients); return ``module``. The judge rebuilds the same
    weights from the names the template fixes (``Wir.weight``, ``attention.Q.bias``, ...)."""
    import torch

    with torch.no_grad():
        for name, p in module.named_parameters():
            p.copy_(param(seed, name, tuple(p.shape), scale).to(p.dtype))
    return module


# --- recording --------------------------------------------------------------------------------


def put(name: str, value: Any) -> None:
    """Hand ``value`` back to the judge under ``name`` (prefixed by the open cases' names).

    ``value``: a tensor (any shape; detached, moved to the CPU), a NumPy array, a number, a
    bool, a string, None, or lists, tuples and dicts (string keys) of these. Anything else is
    recorded as its type's name, which the judge reports."""
    key = "/".join([*_prefix, name])
    encoded = encode(value)
    _local.append((_execution_count(), key, encoded))
    _publish({"key": key, "value": encoded})


@contextlib.contextmanager
def case(name: str) -> Iterator[None]:
    """Run one behaviour's student calls: values ``put`` inside are named ``name/...``, and an
    exception is recorded (as ``name/!error``) instead of stopping the test, so the other
    behaviours of the test still run and score."""
    _prefix.append(name)
    try:
        yield
    except Exception as err:  # the student's code failed: say how, and go on
        text = f"{type(err).__name__}: {err}" if str(err) else type(err).__name__
        put(ERROR, text[:500])
    finally:
        _prefix.pop()


def records_of_cell(count: int | None) -> dict[str, dict]:
    """The encoded values put while cell ``count`` ran (in-kernel use: TAs' inline judging)."""
    return {key: value for c, key, value in _local if c == count}


def _execution_count() -> int | None:
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython ships with every kernel
        return None
    shell = get_ipython()
    return getattr(shell, "execution_count", None) if shell is not None else None


def _publish(payload: dict) -> None:
    try:
        from IPython import get_ipython
        from IPython.display import publish_display_data
    except ImportError:  # pragma: no cover
        return
    if get_ipython() is not None:
        publish_display_data({MIME: payload})


# --- encoding and decoding --------------------------------------------------------------------


def encode(value: Any, depth: int = 0) -> dict:
    """``value`` as JSON-ready data (see :func:`put` for what is accepted)."""
    if depth > MAX_DEPTH:
        return {"error": "nested too deeply"}
    torch, np = sys.modules.get("torch"), sys.modules.get("numpy")  # no tensor without them
    if torch is not None and isinstance(value, torch.Tensor):
        return _encode_tensor(torch.Tensor.as_subclass(value, torch.Tensor))
    if np is not None and isinstance(value, np.ndarray) and value.dtype != object:
        if torch is None:
            import torch
        return _encode_tensor(torch.from_numpy(np.ascontiguousarray(value)))
    if isinstance(value, bool) or (np is not None and isinstance(value, np.bool_)):
        return {"bool": bool(value)}
    if isinstance(value, int) or (np is not None and isinstance(value, np.integer)):
        return {"int": int(value)}
    if isinstance(value, float) or (np is not None and isinstance(value, np.floating)):
        number = float(value)
        return {"float": number if math.isfinite(number) else repr(number)}
    if isinstance(value, str):
        return {"str": value[:10_000]}
    if value is None:
        return {"none": True}
    if isinstance(value, (list, tuple)):
        return {"list": [encode(v, depth + 1) for v in list(value)[:10_000]]}
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {"dict": {k: encode(v, depth + 1) for k, v in list(value.items())[:10_000]}}
    return {"object": type(value).__name__}


def _encode_tensor(t: torch.Tensor) -> dict:
    t = t.detach().cpu()
    if t.numel() > MAX_ELEMENTS:
        return {"error": f"a tensor of {t.numel()} elements is too large to record"}
    if t.is_complex() or t.is_sparse:
        return {"error": f"a {t.dtype} tensor cannot be recorded"}
    import torch

    name = str(t.dtype).removeprefix("torch.")
    name = _WIDEN.get(name, name)
    if name not in DTYPES:
        return {"error": f"a {t.dtype} tensor cannot be recorded"}
    array = t.to(getattr(torch, name)).contiguous().numpy()
    raw = array.astype(array.dtype.newbyteorder("<"), copy=False).tobytes()
    data = base64.b64encode(raw).decode("ascii")
    return {"tensor": {"dtype": name, "shape": list(t.shape), "data": data}}


_SIMPLE = {"bool": bool, "int": int, "str": str}


class DecodeError(ValueError):
    """Recorded data that is not what :func:`encode` makes."""


def decode(data: Any, depth: int = 0) -> Any:
    """The plain value :func:`encode` made ``data`` from: tensors come back as plain CPU
    ``torch.Tensor`` (float32, float64, int64 or bool). Raises :class:`DecodeError` on anything
    malformed; never executes code."""
    if depth > MAX_DEPTH + 1 or not isinstance(data, dict) or len(data) != 1:
        raise DecodeError("malformed record")
    ((kind, body),) = data.items()
    if kind == "tensor":
        return _decode_tensor(body)
    if (
        kind in ("bool", "int", "str")
        and type(body) is {"bool": bool, "int": int, "str": str}[kind]
    ):
        return body
    if kind == "float":
        if isinstance(body, (int, float)) and not isinstance(body, bool):
            return float(body)
        if body in ("nan", "inf", "-inf"):
            return float(body)
    if kind == "none" and body is True:
        return None
    if kind == "list" and isinstance(body, list):
        return [decode(v, depth + 1) for v in body]
    if kind == "dict" and isinstance(body, dict):
        return {str(k): decode(v, depth + 1) for k, v in body.items()}
    if kind == "object" and isinstance(body, str):
        return Unrecordable(body[:100])
    if kind == "error" and isinstance(body, str):
        return Unrecordable(body[:300])
    raise DecodeError(f"malformed record ({kind!r})")


def _decode_tensor(body: Any) -> torch.Tensor:
    import numpy as np
    import torch

    if not isinstance(body, dict) or set(body) != {"dtype", "shape", "data"}:
        raise DecodeError("malformed tensor")
    dtype, shape, data = body["dtype"], body["shape"], body["data"]
    if dtype not in DTYPES or not isinstance(shape, list) or not isinstance(data, str):
        raise DecodeError("malformed tensor")
    if len(shape) > 16 or not all(type(n) is int and 0 <= n for n in shape):
        raise DecodeError("malformed tensor shape")
    count = math.prod(shape)
    if count > MAX_ELEMENTS:
        raise DecodeError("tensor too large")
    np_type = np.dtype("bool" if dtype == "bool" else dtype).newbyteorder("<")
    try:
        raw = base64.b64decode(data.encode("ascii"), validate=True)
    except (ValueError, UnicodeEncodeError) as err:
        raise DecodeError("malformed tensor data") from err
    if len(raw) != count * np_type.itemsize:
        raise DecodeError("tensor data does not match its shape")
    array = np.frombuffer(raw, dtype=np_type).astype(np_type.newbyteorder("="))
    return torch.from_numpy(array.reshape(shape).copy()).to(getattr(torch, dtype))


class Unrecordable:
    """Stands for a value the probe could not record (its type's name, or why)."""

    def __init__(self, what: str):
        self.what = what

    def __repr__(self) -> str:
        return f"<{self.what}>"
