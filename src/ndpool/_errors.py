"""One exception family for every invalid input: ``PoolingError``.

A message always names the op, the attribute, the rule and the value, e.g.
``MaxPool: 'strides' must be positive integers (got (2, 0))``. The public functions add the
input shape once, at the boundary, so deeper code does not need to know it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["PoolingError"]


class PoolingError(ValueError):
    """Invalid input to a pooling op: bad attribute, shape, dtype or index type.

    Attributes
    ----------
    op : str
        The op, e.g. ``"MaxPool"`` or ``"AdaptiveMaxPool"``.
    attribute : str or None
        The attribute or input at fault, e.g. ``"strides"`` or ``"data"``.
    value : object
        The offending value.
    """

    def __init__(self, op: str, attribute: str | None, rule: str, value: Any = None) -> None:
        self.op = op
        self.attribute = attribute
        self.rule = rule
        self.value = value
        self.input_shape: tuple[int, ...] | None = None
        super().__init__(self._message())

    def _message(self) -> str:
        where = f"'{self.attribute}' " if self.attribute else ""
        text = f"{self.op}: {where}{self.rule} (got {self.value!r})"
        if self.input_shape is not None:
            text += f" [input shape {self.input_shape}]"
        return text

    def with_input_shape(self, shape: tuple[int, ...]) -> PoolingError:
        """Record the input shape in the message (once, at the public boundary)."""
        if self.input_shape is None:
            self.input_shape = tuple(shape)
            self.args = (self._message(),)
        return self
