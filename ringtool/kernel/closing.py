"""``with obj:`` for the objects that own kernel resources (fds, mappings, programs):
the block's end closes them, also when it ends with an exception."""

from __future__ import annotations

from types import TracebackType
from typing import Self


class Closing:
    """A mixin: ``__enter__`` returns the object, ``__exit__`` calls its ``close()``
    (which the class defines; it must be safe to call twice). Exceptions are never
    swallowed."""

    __slots__ = ()

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


__all__ = ["Closing"]
