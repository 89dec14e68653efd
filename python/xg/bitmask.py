"""Token bitmasks: int32 arrays of shape ``(batch, ceil(vocab_size / 32))``,
bit ``i % 32`` of word ``i / 32`` set when token ``i`` is allowed — the
layout vLLM and SGLang apply for every backend.

With torch installed, bitmasks are torch tensors (as XGrammar's are), else
NumPy arrays; every function takes either.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence, Tuple

import numpy as np

try:  # torch is optional: NumPy alone is enough.
    import torch
except ImportError:  # pragma: no cover - depends on the environment
    torch = None

bitmask_dtype: Any = torch.int32 if torch is not None else np.int32
"""The dtype of bitmasks: ``torch.int32`` with torch, else ``numpy.int32``."""


def get_bitmask_shape(batch_size: int, vocab_size: int) -> Tuple[int, int]:
    """The shape of a bitmask for ``batch_size`` sequences."""
    return (batch_size, (vocab_size + 31) // 32)


def allocate_token_bitmask(batch_size: int, vocab_size: int) -> Any:
    """A bitmask allowing every token: a CPU torch tensor with torch (fill
    it, then move it with ``.to(device, non_blocking=True)``), else a NumPy
    array."""
    shape = get_bitmask_shape(batch_size, vocab_size)
    if torch is not None:
        return torch.full(shape, -1, dtype=torch.int32)
    return np.full(shape, -1, dtype=np.int32)


def reset_token_bitmask(bitmask: Any) -> None:
    """Allows every token again, in place."""
    if _is_torch(bitmask):
        bitmask.fill_(-1)
    else:
        bitmask.fill(-1)


def apply_token_bitmask_inplace(
    logits: Any,
    bitmask: Any,
    *,
    vocab_size: Optional[int] = None,
    indices: Optional[Sequence[int]] = None,
) -> None:
    """Sets to ``-inf`` the logits of the tokens ``bitmask`` forbids, in
    place. ``logits`` is ``(batch, vocab)`` or ``(vocab,)``; row ``i`` of the
    bitmask applies to row ``indices[i]`` of the logits (row ``i`` without
    ``indices``). Only the first ``vocab_size`` columns are masked (all the
    columns both cover, by default). Works on torch tensors (any device;
    the bitmask is moved there) and on NumPy arrays."""
    if _is_torch(logits):
        _apply_torch(logits, bitmask, vocab_size, indices)
    else:
        _apply_numpy(np.asarray(logits), np.asarray(bitmask), vocab_size, indices)


def _is_torch(value: Any) -> bool:
    return torch is not None and isinstance(value, torch.Tensor)


def _shape2(logits: Any, bitmask: Any) -> Tuple[Any, Any]:
    if logits.ndim == 1:
        logits = logits[None, :]
    if bitmask.ndim == 1:
        bitmask = bitmask[None, :]
    if logits.ndim != 2 or bitmask.ndim != 2:
        raise ValueError("logits and bitmask are (batch, vocab) and (batch, words)")
    return logits, bitmask


def _rows(indices: Optional[Sequence[int]], bitmask_rows: int, logit_rows: int) -> list:
    rows = list(range(bitmask_rows)) if indices is None else [int(i) for i in indices]
    if indices is not None and len(rows) > bitmask_rows:
        raise ValueError(f"{len(rows)} indices for a bitmask of {bitmask_rows} rows")
    if any(r < 0 or r >= logit_rows for r in rows):
        raise ValueError(f"indices {rows} outside the logits' {logit_rows} rows")
    return rows


def _allowed_numpy(bitmask: np.ndarray, width: int) -> np.ndarray:
    """Boolean ``(rows, width)``: token allowed."""
    words = np.ascontiguousarray(bitmask, dtype=np.int32).view(np.uint32)
    bits = (words[:, :, None] >> np.arange(32, dtype=np.uint32)) & 1
    return bits.reshape(bits.shape[0], -1)[:, :width].astype(bool)


def _apply_numpy(logits, bitmask, vocab_size, indices) -> None:
    logits2, bitmask2 = _shape2(logits, bitmask)
    width = min(logits2.shape[1], bitmask2.shape[1] * 32)
    if vocab_size is not None:
        width = min(width, vocab_size)
    rows = _rows(indices, bitmask2.shape[0], logits2.shape[0])
    allowed = _allowed_numpy(bitmask2[: len(rows)], width)
    for mask_row, logit_row in enumerate(rows):
        view = logits2[logit_row, :width]
        view[~allowed[mask_row]] = -np.inf


def _apply_torch(logits, bitmask, vocab_size, indices) -> None:
    logits2 = logits if logits.dim() == 2 else logits.unsqueeze(0)
    if not _is_torch(bitmask):
        bitmask = torch.from_numpy(np.ascontiguousarray(bitmask, dtype=np.int32))
    bitmask2 = bitmask if bitmask.dim() == 2 else bitmask.unsqueeze(0)
    width = min(logits2.shape[1], bitmask2.shape[1] * 32)
    if vocab_size is not None:
        width = min(width, vocab_size)
    rows = _rows(indices, bitmask2.shape[0], logits2.shape[0])
    bits = bitmask2[: len(rows)].to(logits2.device)
    shifts = torch.arange(32, device=logits2.device, dtype=torch.int32)
    allowed = ((bits.unsqueeze(-1) >> shifts) & 1).reshape(len(rows), -1)[:, :width].bool()
    index = torch.tensor(rows, device=logits2.device, dtype=torch.long)
    part = logits2.index_select(0, index)[:, :width]
    part.masked_fill_(~allowed, float("-inf"))
    logits2[index, :width] = part
