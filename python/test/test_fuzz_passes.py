"""Differential fuzzing of the tile passes (tools/fuzz/kernel_fuzz.py).

Each seed generates a random tile program (shapes, dtypes, elementwise chains, reductions, masks,
broadcasts, scf.for / scf.if on runtime scalars, static_range, @jit helper calls, tl.dot), runs its
raw tile IR on the CPU executor, then the IR after each single pass of the default pipeline
(+ licm), after each prefix and after the whole pipeline, on the same inputs: outputs must be
bit-identical. `make fuzz SEEDS=N` runs more seeds.
"""

import os
import re
import sys
import tempfile

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tools", "fuzz"))

import kernel_fuzz  # noqa: E402

SEEDS = range(0, 1200)
CHUNK = 100


@pytest.fixture(scope="module")
def tmpdir_():
    with tempfile.TemporaryDirectory() as d:
        yield d


@pytest.mark.parametrize("start", list(range(SEEDS.start, SEEDS.stop, CHUNK)))
def test_passes_preserve_results(start, tmpdir_):
    failures = []
    for seed in range(start, start + CHUNK):
        r = kernel_fuzz.fuzz_one(seed, tmpdir_)
        if r is not None:
            kind, what, src = r
            failures.append(f"{kind}: seed {seed}: {what}\n{src}")
    assert not failures, "\n\n".join(failures[:3])


def test_fuzzer_detects_and_minimises_a_mismatch(tmpdir_, monkeypatch):
    """A fake miscompile (cse flips out0's bits when the program has a tl.sum) is found and the
    program minimised down to the statements it needs."""
    real = kernel_fuzz.execute

    def broken(text, name, gen, arrs, nvalid, passes, *options):
        outs, out_text = real(text, name, gen, arrs, nvalid, passes, *options)
        if "cse" in passes and "tt.reduce" in text:
            outs[0] = ~outs[0]
        return outs, out_text

    monkeypatch.setattr(kernel_fuzz, "execute", broken)
    for seed in range(200):
        gen = kernel_fuzz.Gen(seed).program()
        if "tl.sum(" in gen.source():
            break
    r = kernel_fuzz.fuzz_one(seed, tmpdir_)
    assert r is not None and r[0] == "mismatch" and "single pass cse" in r[1]
    small = r[2]
    # Down to a statement that reduces (the fake bug's trigger: any tt.reduce) and one store.
    assert re.search(r"tl\.(sum|max|min|argmax|argmin)\(", small), small
    assert small.count("tl.store") <= 1
    assert len(small) < len(gen.source())
