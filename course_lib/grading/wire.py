"""Plain data on the wire between the grader and the student's kernel.

Every request the grader sends (``course_lib.grading.judging``) and every reply the kernel's
dispatcher gives (``course_lib.grading.dispatch``) is JSON made by :func:`encode`: numbers,
strings, None, lists and dicts of them, and tensors as the base64 of their raw little-endian
bytes with their dtype and shape. :func:`decode` reads such JSON back into plain CPU tensors
and Python values, checks every size and shape before it builds anything and executes nothing
(no pickle). torch and NumPy are imported only when a tensor is made or read.
"""

from __future__ import annotations

import base64
import math
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

MAX_ELEMENTS = 1_000_000  # per tensor: replies are small results, never datasets
MAX_DEPTH = 8  # nesting of lists and dicts
MAX_DIM = 2**31  # any one dimension of a tensor
DTYPES = ("float32", "float64", "int64", "bool")  # what travels: every tensor becomes one
_WIDEN = {  # dtypes sent as the nearest type above
    "float16": "float32",
    "bfloat16": "float32",
    "int32": "int64",
    "int16": "int64",
    "int8": "int64",
    "uint8": "int64",
}


# --- encoding and decoding --------------------------------------------------------------------


def encode(value: Any, depth: int = 0) -> dict:
    """``value`` as JSON-ready data: tensors and NumPy arrays (at most :data:`MAX_ELEMENTS`
    elements, sent as one of :data:`DTYPES`), bools, ints, floats, strings (their first 10,000
    characters), None, and lists, tuples and string-keyed dicts of them (their first 10,000
    items, at most :data:`MAX_DEPTH` deep). Anything else travels as its type's name alone
    (``{"object": name}``), and a tensor it cannot send as ``{"error": why}``."""
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
        return {"error": "a tensor too large to send"}
    if t.is_complex() or t.is_sparse:
        return {"error": "a tensor of a type that does not travel"}
    import torch

    name = str(t.dtype).removeprefix("torch.")
    name = _WIDEN.get(name, name)
    if name not in DTYPES:
        return {"error": "a tensor of a type that does not travel"}
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
    if len(shape) > 16 or not all(type(n) is int and 0 <= n <= MAX_DIM for n in shape):
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
    try:
        array = np.frombuffer(raw, dtype=np_type).astype(np_type.newbyteorder("="))
        return torch.from_numpy(array.reshape(shape).copy()).to(getattr(torch, dtype))
    except (ValueError, RuntimeError) as err:  # a shape no array can hold, even empty
        raise DecodeError("malformed tensor shape") from err


class Unrecordable:
    """Stands for a value that could not travel (what the sender said of it: never shown)."""

    def __init__(self, what: str):
        self.what = what

    def __repr__(self) -> str:
        return f"<{self.what}>"
