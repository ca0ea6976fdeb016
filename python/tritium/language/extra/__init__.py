"""`tl.extra`: vendor libraries (`tl.extra.libdevice`, `tl.extra.cuda.libdevice`)."""

from . import cuda, libdevice  # noqa: F401

__all__ = ["cuda", "libdevice"]
