"""`sgl_kernel.speculative`: the one op SGLang 0.5.23 imports from it on CPU (NGRAM)."""

from __future__ import annotations

from typing import Any

from .ops import _missing, reconstruct_indices_from_tree_mask  # noqa: F401


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)

    def missing(*args: Any, **kwargs: Any) -> Any:
        raise _missing(f"op sgl_kernel.speculative.{name}")

    return missing
