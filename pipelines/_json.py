"""JSON reading shared by the input parsers: documents nested past Python's recursion limit,
items nested too deeply and strings that hold lone surrogates (valid JSON, not text)."""

from __future__ import annotations

import json
import sys
import threading
from typing import Any, Final

__all__ = ["LONE_SURROGATE", "MAX_ITEM_DEPTH", "loads_deep", "lone_surrogate", "too_deep"]

#: Nesting levels an input item may have (Slurm's and Kubernetes' objects nest about 6 to 12;
#: never 30).
MAX_ITEM_DEPTH: Final = 64
#: The reason text of an item rejected for a lone surrogate.
LONE_SURROGATE: Final = "a string holds a lone surrogate (\\ud800-\\udfff unpaired)"

#: Nesting a JSON document may reach when read (sacct's own documents nest about 6 levels);
#: items nested deeper than :data:`MAX_ITEM_DEPTH` are rejected by the parsers.
_DEEP_READ_LIMIT = 100_000


def loads_deep(whole: bytes | str) -> Any:
    """``json.loads``, also for documents nested deeper than Python's recursion limit.

    A document that hits the limit is read again in a thread with a 512 MiB stack and a
    recursion limit of :data:`_DEEP_READ_LIMIT`, so one deeply nested item can be rejected on
    its own instead of failing the file.

    Raises:
        json.JSONDecodeError, ValueError: not JSON.
        RecursionError: nested deeper than :data:`_DEEP_READ_LIMIT`.
    """
    try:
        return json.loads(whole)
    except RecursionError:
        pass
    out: dict[str, Any] = {}

    def read() -> None:
        old = sys.getrecursionlimit()
        try:
            sys.setrecursionlimit(max(old, _DEEP_READ_LIMIT))
            out["document"] = json.loads(whole)
        except (ValueError, RecursionError) as exc:
            out["error"] = exc
        finally:
            sys.setrecursionlimit(old)

    previous = threading.stack_size(512 << 20)
    try:
        reader = threading.Thread(target=read, name="deep-json")
        reader.start()
        reader.join()
    finally:
        threading.stack_size(previous)
    if "error" in out:
        raise out["error"]
    return out["document"]


def too_deep(value: Any, limit: int = MAX_ITEM_DEPTH) -> bool:
    """Whether ``value`` nests lists and objects more than ``limit`` levels (no recursion;
    ``value`` itself is level 1)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = [*item.keys(), *item.values()]
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def lone_surrogate(value: Any) -> bool:
    """Whether a string in ``value`` (keys included) holds a lone surrogate, which JSON's
    ``\\udXXX`` escapes allow but UTF-8 cannot encode (no recursion)."""
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False
