"""User-facing errors of tritium and access to the C++ extension `tritium._C`.

A mistake in a kernel is a `CompilationError` pointing at the user's file,
line and column; a failure while a kernel runs (an out-of-bounds access, say)
is an `ExecutionError`. Both carry the location as attributes.
"""

import linecache

__all__ = ["CompilationError", "ExecutionError", "LaunchOptionError", "TritonError", "load_C"]

_C_module = None


def load_C():
    """The pybind11 module `tritium._C`, imported on first use so that the pure
    Python parts of tritium import (and can be tested) before it is built."""
    global _C_module
    if _C_module is None:
        try:
            from tritium import _C  # noqa: PLC0415
        except ImportError as e:
            raise ImportError(
                "tritium's C++ extension tritium._C is not built or cannot be "
                f"loaded ({e}); run `make build` in the repository root") from e
        _C_module = _C
    return _C_module


class TritonError(Exception):
    """Triton's base class of its errors (`triton.TritonError`): code written for Triton
    catches compile errors by it."""


class LaunchOptionError(ValueError, AssertionError):
    """A launch option out of range (num_warps=3). A ValueError; also an AssertionError,
    which is what Triton raises there, so code that catches that keeps working."""


class CompilationError(TritonError):
    """A mistake in a kernel's source, found while compiling it.

    Attributes: file, line (1-based, 0 when unknown), col (1-based),
    source_line (the text of that line, or None), message, function (the
    name of the @jit function being compiled, or None).
    """

    def __init__(self, message, file=None, line=0, col=0, source_line=None,
                 function=None):
        self.message = str(message)
        self.file = file or None
        self.line = int(line or 0)
        self.col = int(col or 0)
        if source_line is None and self.file and self.line > 0:
            text = linecache.getline(self.file, self.line)
            source_line = text.rstrip("\r\n") if text else None
        self.source_line = source_line
        self.function = function
        super().__init__(self.message)

    def __str__(self):
        if not self.file or self.line <= 0:
            return self.message
        where = f'  File "{self.file}", line {self.line}'
        if self.col > 0:
            where += f", column {self.col}"
        if self.function:
            where += f", in {self.function}"
        lines = [where + ":"]
        if self.source_line:
            stripped = self.source_line.lstrip()
            indent = len(self.source_line) - len(stripped)
            lines.append("    " + stripped.rstrip())
            if self.col > 0:
                lines.append("    " + " " * max(self.col - 1 - indent, 0) + "^")
        lines.append("  " + self.message)
        return "\n".join(lines)

    def __reduce__(self):
        return (type(self), (self.message, self.file, self.line, self.col,
                             self.source_line, self.function))


class ExecutionError(RuntimeError):
    """A failure while a kernel ran on the CPU executor. The message names the
    kernel, the source location and the program id; file/line/col give the
    location as attributes (empty/0 when unknown)."""

    def __init__(self, message, file="", line=0, col=0):
        super().__init__(message)
        self.message = message
        self.file = file
        self.line = line
        self.col = col

    def __reduce__(self):
        return (type(self), (self.message, self.file, self.line, self.col))


def user_error_args(e):
    """(message, file, line, col) of a _C.UserError / IRError / ExecutionError."""
    args = tuple(e.args) + ("", 0, 0)
    message, file, line, col = args[0], args[1], args[2], args[3]
    return str(message), (file or None), int(line or 0), int(col or 0)
