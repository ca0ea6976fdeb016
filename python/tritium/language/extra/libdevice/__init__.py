"""`tl.extra.libdevice` (also `tl.extra.cuda.libdevice`): the names of CUDA's libdevice that
kernel libraries and Inductor call, on tritium's own math ops (one meaning on the CPU executor,
a PTX lowering on the GPU).

common.py: the rounding, classification and sign functions (exact) and the transcendental
functions composed of tl math; special.py: the Bessel functions, erfcx and ilogb (torch.special
and frexp under Inductor), built on common.py's fp64 helpers."""

from . import common, special
from .common import *  # noqa: F401,F403
from .special import *  # noqa: F401,F403

__all__ = sorted(set(common.__all__) | set(special.__all__))
