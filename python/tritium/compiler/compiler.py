"""The compile driver: code generation -> the tile pass pipeline -> a
CompiledKernel that runs on the CPU executor.

With TRITIUM_CHECK_ROUNDTRIP=1 every compile checks that the IR text
round-trips (print(parse(print(ir))) == print(ir)) before and after the
pipeline, and runs the verifier after every pass.
"""

import difflib
import os

from ..errors import CompilationError, ExecutionError, load_C, user_error_args
from . import codegen


def check_roundtrip_enabled():
    return os.environ.get("TRITIUM_CHECK_ROUNDTRIP", "") not in ("", "0")


def _check_roundtrip(C, module, stage, name):
    text = C.print_module(module, True)
    again = C.print_module(C.parse_module(text, f"<{name}:{stage}>"), True)
    if again != text:
        diff = "\n".join(difflib.unified_diff(text.splitlines(), again.splitlines(),
                                              "printed", "printed(parsed(printed))",
                                              lineterm=""))
        raise AssertionError(f"IR text of kernel {name!r} does not round-trip {stage}:\n{diff}")


class CompiledKernel:
    """One specialisation of a kernel, compiled.

    asm["tir-raw"] is the tile IR as generated, asm["tir"] after the pass
    pipeline. `params` is the specialisation (see codegen.build_kernel);
    `arg_names` the runtime arguments, in order; `constants` the specialised
    ones."""

    def __init__(self, name, module, asm, params, stats):
        self.name = name
        self.module = module
        self.asm = asm
        self.params = params
        self.stats = stats
        self.arg_names = [n for n, p in params if p[0] == "arg"]
        self.constants = {n: p[1] for n, p in params if p[0] == "const"}
        self.signature = {n: str(p[1]) for n, p in params if p[0] == "arg"}
        self.metadata = {"name": name, "num_warps": None, "num_stages": None}

    def __repr__(self):
        return f"CompiledKernel({self.name}, signature={self.signature})"

    def run(self, grid, args, num_threads=0):
        """Runs on the CPU executor. grid: 3 ints; args: executor arguments
        (_C.ExecPointer / int / float / bool), one per runtime argument."""
        C = load_C()
        try:
            C.execute(self.module, self.name, tuple(grid), list(args), num_threads)
        except C.ExecutionError as e:
            message, file, line, col = user_error_args(e)
            raise ExecutionError(message, file or "", line, col) from None

    def __getitem__(self, grid):
        """compiled[grid](*runtime_args): runs with the runtime arguments only
        (the constexprs are baked in)."""
        from ..jit import convert_runtime_args, normalize_grid  # noqa: PLC0415

        def launch(*args):
            if len(args) != len(self.arg_names):
                raise TypeError(f"{self.name}: expected {len(self.arg_names)} runtime "
                                f"arguments ({', '.join(self.arg_names)}), got {len(args)}")
            values = convert_runtime_args(self, args)  # raises for GPU tensors
            g = normalize_grid(grid, {})
            if all(x > 0 for x in g):
                self.run(g, values)

        return launch


def compile_kernel(jit_fn, params, name=None):
    """Builds, optimises and wraps one specialisation of `jit_fn`."""
    C = load_C()
    check = check_roundtrip_enabled()
    module, kernel_name = codegen.build_kernel(jit_fn, params, name)
    raw = C.print_module(module, False)
    if check:
        C.verify(module)
        _check_roundtrip(C, module, "after code generation", kernel_name)
    try:
        stats = C.run_passes(module, C.default_pipeline(), check)
    except C.UserError as e:
        message, file, line, col = user_error_args(e)
        raise CompilationError(message, file, line, col, function=kernel_name) from None
    if check:
        _check_roundtrip(C, module, "after the pass pipeline", kernel_name)
    asm = {"tir-raw": raw, "tir": C.print_module(module, False)}
    return CompiledKernel(kernel_name, module, asm, params, stats)
