"""The tile pipeline driver: code generation -> the tile pass pipeline ->
a TileKernel, which runs on the CPU executor. Every compile goes through
`compile_tile`: a CPU launch (jit.py), and the front half of every GPU
compile (compiler.compiler: tritium.compile, GPU launches, the autotuner's
batches), whose back half takes the TileKernel's module to PTX.

With TRITIUM_CHECK_ROUNDTRIP=1 every compile checks that the IR text
round-trips (print(parse(print(ir))) == print(ir)) before and after the
pipeline, and runs the verifier after every pass.
"""

import difflib
import os
import time

from ..errors import CompilationError, ExecutionError, load_C, user_error_args
from ..runtime.launcher import (CompiledKernel, KernelAsm, KernelMetadata, convert_runtime_args,
                                declared_memory, normalize_grid)
from . import codegen
from .dump import dump_dir, dump_stages


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


class TileKernel(CompiledKernel):
    """One specialisation of a kernel as optimised tile IR, run by the CPU
    executor (a GPU compile starts from it: runtime.cuda.GPUKernel.tile).

    asm["tir-raw"] is the tile IR as generated, asm["tir"] after the pass
    pipeline. `params` is the specialisation (see codegen.build_kernel);
    `arg_names` the runtime arguments, in order; `constants` the specialised
    ones."""

    def __init__(self, name, module, asm, params, stats):
        self.name = name
        self.module = module
        self.asm = KernelAsm(asm)
        self.params = params
        self.stats = stats
        self.arg_names = [n for n, p in params if p[0] == "arg"]
        self.constants = {n: p[1] for n, p in params if p[0] == "const"}
        self.signature = {n: str(p[1]) for n, p in params if p[0] == "arg"}
        self.metadata = KernelMetadata(
            name=name, num_warps=None, num_stages=None, shared=0,
            constexpr_positions=[i for i, (_, p) in enumerate(params) if p[0] == "const"])
        # Triton's resource figures; the CPU executor has no registers to count.
        self.n_regs = self.n_spills = 0

    def __getstate__(self):
        # The IR module is a C++ object; its text round-trips (asm["tir"]).
        return {k: v for k, v in self.__dict__.items() if k != "module"}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.module = load_C().parse_module(self.asm["tir"], f"<{self.name}>")

    def __repr__(self):
        return f"TileKernel({self.name}, signature={self.signature})"

    def run(self, grid, args, num_threads=0):
        """Runs on the CPU executor. grid: 3 ints; args: executor arguments
        (_C.ExecPointer / int / float / bool), one per runtime argument."""
        C = load_C()
        try:
            C.execute(self.module, self.name, tuple(grid), list(args), num_threads,
                      declared_memory())
        except C.ExecutionError as e:
            message, file, line, col = user_error_args(e)
            raise ExecutionError(message, file or "", line, col) from None

    def __getitem__(self, grid):
        """compiled[grid](*runtime_args): runs with the runtime arguments only
        (the constexprs are baked in)."""

        def launch(*args):
            args = self._runtime_args(args)
            values = convert_runtime_args(self, args)  # raises for GPU tensors
            g = normalize_grid(grid, {})
            if all(x > 0 for x in g):
                self.run(g, values)

        return launch


def _ms(t0):
    return (time.perf_counter() - t0) * 1e3


def compile_tile(jit_fn, params, name=None, times=None, dump=True):
    """Builds and optimises one specialisation of `jit_fn`: a TileKernel.

    params: the specialisation (codegen.build_kernel's). times: a dict that
    receives, in ms, the AST walk ("ast") and the tile passes ("tile"), or
    None (TRITIUM_COMPILE_TIMES; the round-trip checks are not timed). dump: write the stages
    to TRITIUM_DUMP_DIR when it is set (the GPU compile writes them with its own)."""
    C = load_C()
    check = check_roundtrip_enabled()
    t0 = time.perf_counter()
    module, kernel_name = codegen.build_kernel(jit_fn, params, name)
    raw = C.print_module(module, False)
    if times is not None:
        times["ast"] = _ms(t0)
    if check:
        C.verify(module)
        _check_roundtrip(C, module, "after code generation", kernel_name)
    t0 = time.perf_counter()
    try:
        stats = C.run_passes(module, C.default_pipeline(), check)
    except C.UserError as e:
        # The message as the cause too, as Triton chains its semantic errors (its tests read
        # `exc.__cause__`, e.g. "Cannot store to a constant pointer").
        message, file, line, col = user_error_args(e)
        raise CompilationError(message, file, line, col,
                               function=kernel_name) from ValueError(message)
    asm = {"tir-raw": raw, "tir": C.print_module(module, False)}
    if times is not None:
        times["tile"] = _ms(t0)
    if check:
        _check_roundtrip(C, module, "after the pass pipeline", kernel_name)
    if dump and dump_dir() is not None:
        dump_stages(kernel_name, asm)
    return TileKernel(kernel_name, module, asm, params, stats)
