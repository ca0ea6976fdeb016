"""The compiler: the AST code generator (codegen.py) and the pipeline
driver (compiler.py)."""

from ..errors import CompilationError  # noqa: F401
from .compiler import CompiledKernel, compile_kernel  # noqa: F401
