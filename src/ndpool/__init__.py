"""ndpool: N-dimensional max pooling with exact semantics (MaxPool, AdaptiveMaxPool-8)."""

from ._errors import PoolingError
from ._ops import adaptive_max_pool, adaptive_max_pool_output_shape, max_pool, max_pool_output_shape
from ._pyramid import pyramid
from .spec import get_op, list_ops

__all__ = [
    "PoolingError",
    "adaptive_max_pool",
    "adaptive_max_pool_output_shape",
    "get_op",
    "list_ops",
    "max_pool",
    "max_pool_output_shape",
    "pyramid",
]
__version__ = "0.1.0"
