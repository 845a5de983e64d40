"""Versioned spec ops (``"openvino:MaxPool-8"``, ``"onednn:MaxPool-1"``, ...) over the public API."""

from ._registry import SpecOp, get_op, list_ops

__all__ = ["SpecOp", "get_op", "list_ops"]
