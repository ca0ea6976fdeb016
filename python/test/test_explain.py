"""python -m tritium.tools.explain: per line of a kernel, the layouts, the width of each memory
access as the PTX emitter chose it, and the shared memory. Compiles for a target: no GPU."""

import os
import re
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON = os.path.join(HERE, "..")

KERNELS = '''
import tritium as triton
import tritium.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, K, sam, sbk, scm,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_ptrs = a_ptr + rm[:, None] * sam + rk[None, :]
    b_ptrs = b_ptr + rk[:, None] * sbk + rn[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptrs)
        b = tl.load(b_ptrs)
        acc = tl.dot(a, b, acc)
        a_ptrs += BK
        b_ptrs += BK * sbk
    tl.store(c_ptr + rm[:, None] * scm + rn[None, :], acc.to(tl.float16))
'''

ADD_SIG = "*fp32:16, *fp32:16, *fp32:16, i32:16, 1024"
MM_SIG = "*fp16:16, *fp16:16, *fp16:16, i32:16, i32:16, i32:16, i32:16"
MM_CONST = ["-c", "BM=128", "-c", "BN=128", "-c", "BK=64"]


def _explain(tmp_path, *args):
    path = tmp_path / "kernels.py"
    path.write_text(KERNELS)
    env = dict(os.environ, PYTHONPATH=PYTHON + os.pathsep + os.environ.get("PYTHONPATH", ""),
               TRITIUM_CACHE_DIR=str(tmp_path / "cache"))
    return subprocess.run([sys.executable, "-m", "tritium.tools.explain", str(path), *args],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)


def _blocks(out):
    """{source line number: (source text, [fact lines])} of explain's output."""
    blocks, current = {}, None
    for line in out.splitlines():
        m = re.match(r"\s*(\d+) \| (.*)$", line)
        if m:
            current = int(m.group(1))
            blocks[current] = (m.group(2), [])
        elif current is not None and re.match(r"\s+\| ", line):
            blocks[current][1].append(line.split("| ", 1)[1])
        else:
            current = None
    return blocks


def _line_of(blocks, text):
    [(n, (_, facts))] = [(n, b) for n, b in blocks.items() if text in b[0]]
    return facts


def _accesses(facts):
    """(op, instruction, bytes, elems, count) of each access line."""
    out = []
    for f in facts:
        m = re.match(r"access  (\S+): (\S+), (\d+) bytes "
                     r"\((?:(\d+) x \d+-byte elements|1 element)\) per instruction, "
                     r"(\d+) per thread", f)
        if m:
            out.append((m.group(1), m.group(2), int(m.group(3)), int(m.group(4) or 1),
                        int(m.group(5))))
    return out


def test_vector_add_moves_16_bytes_with_divisibility(tmp_path):
    r = _explain(tmp_path, "--kernel", "add_kernel", "--signature", ADD_SIG, "--target", "sm_90a")
    assert r.returncode == 0, r.stderr
    assert "kernel add_kernel: target sm_90a, num_warps=4" in r.stdout
    blocks = _blocks(r.stdout)
    # 1024 fp32 over 128 threads: two 16-byte vectors (4 elements) per thread and access.
    assert _accesses(_line_of(blocks, "x = tl.load")) == [("tt.load", "ld.global", 16, 4, 2)]
    assert _accesses(_line_of(blocks, "y = tl.load")) == [("tt.load", "ld.global", 16, 4, 2)]
    assert _accesses(_line_of(blocks, "tl.store(")) == [("tt.store", "st.global", 16, 4, 2)]
    # The layout of the line's values, spelled out in the legend.
    facts = _line_of(blocks, "x = tl.load")
    [alias] = re.findall(r"layout  (#blocked\d+): .*1024xf32", "\n".join(facts))
    assert re.search(re.escape(alias) + r" = #ttg\.blocked<\{sizePerThread = \[4\]", r.stdout)
    assert "shared memory: 0 bytes for the kernel" in r.stdout
    # A line that makes no tensor has no facts.
    assert _line_of(blocks, "def add_kernel") == []


def test_vector_add_is_narrower_without_divisibility(tmp_path):
    r = _explain(tmp_path, "--signature", "*fp32, *fp32, *fp32, i32", "--constexpr",
                 "BLOCK=1024", "--kernel", "add_kernel")
    assert r.returncode == 0, r.stderr
    blocks = _blocks(r.stdout)
    for text, op in (("x = tl.load", "tt.load"), ("tl.store(", "tt.store")):
        [(name, _, nbytes, elems, count)] = _accesses(_line_of(blocks, text))
        assert name == op and nbytes < 16 and elems < 4 and count > 2


def test_vector_add_mask_alone_limits_the_width(tmp_path):
    # Aligned pointers, but n of unknown divisibility: the mask may change within a vector.
    r = _explain(tmp_path, "--kernel", "add_kernel", "--signature",
                 "*fp32:16, *fp32:16, *fp32:16, i32, 1024")
    assert r.returncode == 0, r.stderr
    [(_, _, nbytes, _, _)] = _accesses(_line_of(_blocks(r.stdout), "x = tl.load"))
    assert nbytes < 16


@pytest.mark.parametrize("target,engine,layout", [
    ("sm_90a", "wgmma.mma_async", "#wgmma0"),
    ("sm_80", "mma.sync", "#mma0"),
])
def test_matmul_shared_memory_and_mma(tmp_path, target, engine, layout):
    r = _explain(tmp_path, "--kernel", "matmul_kernel", "--signature", MM_SIG, *MM_CONST,
                 "--target", target, "--num-stages", "3")
    assert r.returncode == 0, r.stderr
    blocks = _blocks(r.stdout)
    dot = _line_of(blocks, "tl.dot(")
    text = "\n".join(dot)
    assert engine in text and f"layout  {layout}: 128x128xf32" in text
    assert re.search(re.escape(layout) + r" = #ttg\.nvidia_mma<\{versionMajor = "
                     + ("3" if target == "sm_90a" else "2"), r.stdout)
    # The operands' stages are buffers of the dot: 3 stages x 128 x 64 fp16 = 48 KiB each.
    shared = [f for f in dot if f.startswith("shared  ttg.local_alloc")]
    assert len(shared) == 2 and all(": 49152 bytes at offset" in f for f in shared)
    total = int(re.search(r"shared memory (\d+) bytes", r.stdout).group(1))
    assert total >= 2 * 49152
    assert f"shared memory: {total} bytes for the kernel" in r.stdout
    # The loads became 16-byte asynchronous copies into those buffers.
    for text in ("a = tl.load", "b = tl.load"):
        accs = _accesses(_line_of(blocks, text))
        assert accs and all(a[1] == "cp.async" and a[2] == 16 for a in accs)


def test_bad_signature_is_a_clear_error(tmp_path):
    r = _explain(tmp_path, "--kernel", "add_kernel", "--signature", "*fp32:16, *fp32:16")
    assert r.returncode != 0
    assert "--signature has 2 entries" in r.stderr and "x_ptr" in r.stderr
    assert "Traceback" not in r.stderr
    r = _explain(tmp_path, "--kernel", "add_kernel", "--signature", "*float7, *fp32, *fp32, i32, 4")
    assert r.returncode != 0 and "unknown pointer type '*float7'" in r.stderr
    assert "Traceback" not in r.stderr


def test_other_user_errors(tmp_path):
    r = _explain(tmp_path, "--signature", ADD_SIG)
    assert r.returncode != 0 and "2 @jit functions" in r.stderr and "--kernel" in r.stderr
    r = _explain(tmp_path, "--kernel", "nope", "--signature", ADD_SIG)
    assert r.returncode != 0 and "no @jit function 'nope'" in r.stderr
    r = _explain(tmp_path, "--kernel", "add_kernel", "--signature", ADD_SIG, "--target", "sm_70")
    assert r.returncode != 0 and "sm_70" in r.stderr and "Traceback" not in r.stderr
    r = _explain(tmp_path, "--kernel", "add_kernel")
    assert r.returncode != 0 and "--signature is needed" in r.stderr


def test_report_api(tmp_path):
    """tritium.tools.explain.explain: the same facts as data."""
    import importlib.util

    from tritium.tools.explain import explain

    path = tmp_path / "kernels_api.py"
    path.write_text(KERNELS)
    spec = importlib.util.spec_from_file_location("kernels_api", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}
    rep = explain(mod.add_kernel, sig, {"BLOCK": 256},
                  divisible_by_16=["x_ptr", "y_ptr", "out_ptr", "n"], target="sm_80",
                  num_warps=2)
    line = KERNELS.splitlines().index("    x = tl.load(x_ptr + offs, mask=mask)") + 1
    [acc] = rep.facts(line)["accesses"]
    # 256 elements over 64 threads: one 16-byte vector each.
    assert (acc["instruction"], acc["bytes"], acc["elems"], acc["count"]) == ("ld.global", 16, 4, 1)
    assert rep.target == "sm_80" and rep.num_warps == 2 and rep.shared_bytes == 0
