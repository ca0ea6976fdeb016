"""`tl.extra.cuda`: `libdevice`, the same functions as `tl.extra.libdevice`."""

from . import libdevice  # noqa: F401

__all__ = ["libdevice"]
