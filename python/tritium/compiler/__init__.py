"""The compiler: the AST code generator (codegen.py), the tile pipeline
driver (pipeline.py: TileKernel, run by the CPU executor) and the compile
driver to GPU code (compiler.py: GPUKernel, through the disk cache).

`CompiledKernel` (Triton's `triton.compiler.CompiledKernel`) is the base of
both kinds of compiled kernel; `compile_kernel` is compile_tile's former
name."""

from ..errors import CompilationError  # noqa: F401
from ..runtime.cuda import GPUKernel  # noqa: F401
from ..runtime.launcher import CompiledKernel  # noqa: F401
from .pipeline import TileKernel, compile_tile  # noqa: F401

compile_kernel = compile_tile
