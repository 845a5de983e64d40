"""Versioned spec ops (``"openvino:MaxPool-8"``, ``"onednn:MaxPool-1"``, ...) over the public API."""

from ._ir import BUILTIN_EXAMPLES, IRError, IRModel, IRRun, parse_ir, read_ir, run_ir, spec_op_geometry
from ._registry import SpecOp, get_op, list_ops

__all__ = ["BUILTIN_EXAMPLES", "IRError", "IRModel", "IRRun", "SpecOp", "get_op", "list_ops", "parse_ir",
           "read_ir", "run_ir", "spec_op_geometry"]
