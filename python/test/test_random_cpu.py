"""tl.randint / randint4x / rand / rand4x / randn / randn4x / philox / philox_impl /
uint_to_uniform_float / pair_uniform_to_normal on the CPU executor.

The integer streams and tl.rand are compared bit for bit with a Philox written here from the
paper's definition (Salmon et al., SC'11) in plain Python integers, which is itself checked
against the published known-answer vectors of Random123's Philox4x32-10; the normals are
compared within float tolerance (the executor's log/cos/sin are not the GPU's) and by their
moments.
"""

import numpy as np
import pytest

from harness import triton, tl, launch, poisoned

M32, M64 = (1 << 32) - 1, (1 << 64) - 1


def philox_ref(seed, counters, n_rounds=10, bits=32):
    """Philox 4xW-n on one counter (4 ints); the key is (seed lo, seed hi) for W=32 and
    (seed, 0) for W=64, the seed read as an unsigned 64-bit integer."""
    mask = M32 if bits == 32 else M64
    if bits == 32:
        mults, incs = (0xD2511F53, 0xCD9E8D57), (0x9E3779B9, 0xBB67AE85)
    else:
        mults, incs = (0xD2E7470EE14C6C93, 0xCA5A826395121157), (0x9E3779B97F4A7C15, 0xBB67AE8584CAA73B)
    seed &= M64
    key = [seed & M32, seed >> 32] if bits == 32 else [seed, 0]
    x = [c & mask for c in counters]
    for _ in range(n_rounds):
        p0 = mults[0] * x[0]
        p1 = mults[1] * x[2]
        x = [(p1 >> bits) ^ x[1] ^ key[0], p1 & mask, (p0 >> bits) ^ x[3] ^ key[1], p0 & mask]
        key = [(key[0] + incs[0]) & mask, (key[1] + incs[1]) & mask]
    return x


def randint4x_ref(seed, offsets, n_rounds=10):
    """Triton 3.6's streams: Philox 4x32 on (offset's low word, its high word for a 64-bit
    offset or 0, 0, 0); uint32 whatever the offset's width."""
    offsets = np.asarray(offsets)
    wide = offsets.dtype.itemsize * 8 > 32
    words = [philox_ref(int(seed), [int(o) & M32, (int(o) >> 32) & M32 if wide else 0, 0, 0],
                        n_rounds) for o in offsets.ravel()]
    return [np.array([w[k] for w in words], dtype=np.uint32).reshape(offsets.shape) for k in range(4)]


def uniform_ref(x):
    """uint_to_uniform_float in numpy: fold the signed reading onto [0, 2^(n-1)), scale in fp32."""
    if x.dtype.itemsize == 4:
        s = x.view(np.int32).astype(np.int64)
        scale = np.float32(4.6566127342e-10)
    else:
        s = x.view(np.int64)
        scale = np.float32(1.0842020432385337e-19)
    folded = np.where(s < 0, -s - 1, s)
    return folded.astype(np.float32) * scale


def normal_ref(u1, u2):
    u1 = np.maximum(np.float32(1e-7), u1).astype(np.float64)
    th = np.float32(6.283185307179586) * u2
    r = np.sqrt(-2.0 * np.log(u1))
    return r * np.cos(th.astype(np.float64)), r * np.sin(th.astype(np.float64))


# Random123's published known answers for Philox4x32-10: (counter, key) -> output.
KAT_4X32 = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((M32, M32, M32, M32), (M32, M32), (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]


@pytest.mark.parametrize("counter,key,expected", KAT_4X32)
def test_reference_matches_random123_known_answers(counter, key, expected):
    assert philox_ref(key[0] | (key[1] << 32), counter) == list(expected)


@triton.jit
def _philox_kernel(out_ptr, seed, c_ptr, N_ROUNDS: tl.constexpr):
    i = tl.arange(0, 4)
    c0 = tl.load(c_ptr + i * 4 + 0)
    c1 = tl.load(c_ptr + i * 4 + 1)
    c2 = tl.load(c_ptr + i * 4 + 2)
    c3 = tl.load(c_ptr + i * 4 + 3)
    r0, r1, r2, r3 = tl.philox(seed, c0, c1, c2, c3, N_ROUNDS)
    tl.store(out_ptr + i * 4 + 0, r0)
    tl.store(out_ptr + i * 4 + 1, r1)
    tl.store(out_ptr + i * 4 + 2, r2)
    tl.store(out_ptr + i * 4 + 3, r3)


@pytest.mark.parametrize("counter,key,expected", KAT_4X32)
def test_philox_known_answers(counter, key, expected):
    # tl.philox keys with the seed's two 32-bit halves; an all-ones key is the seed -1.
    seed = key[0] | (key[1] << 32)
    if seed >= 1 << 63:
        seed -= 1 << 64
    counters = np.array([counter] * 4, dtype=np.uint32)
    out = poisoned((4, 4), np.uint32)
    launch(_philox_kernel, (1,), out, seed, counters, N_ROUNDS=10)
    np.testing.assert_array_equal(out, np.array([expected] * 4, dtype=np.uint32))


@pytest.mark.parametrize("bits", [32, 64])
@pytest.mark.parametrize("n_rounds", [10, 3])
def test_philox_counters_of_both_widths(bits, n_rounds):
    rng = np.random.default_rng(7)
    dt = np.int32 if bits == 32 else np.int64
    info = np.iinfo(dt)
    counters = rng.integers(info.min, info.max, size=(4, 4), endpoint=True, dtype=np.int64).astype(dt)
    seed = 0x1234_5678_9ABC
    out = poisoned((4, 4), np.uint32 if bits == 32 else np.uint64)
    launch(_philox_kernel, (1,), out, seed, counters, N_ROUNDS=n_rounds)
    ref = [philox_ref(seed, [int(c) for c in row], n_rounds, bits) for row in counters]
    np.testing.assert_array_equal(out, np.array(ref, dtype=out.dtype))


@triton.jit
def _randint4x_kernel(out_ptr, seed, offs_ptr, N_ROUNDS: tl.constexpr, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    offs = tl.load(offs_ptr + i)
    a, b, c, d = tl.randint4x(seed, offs, N_ROUNDS)
    tl.store(out_ptr + i, a)
    tl.store(out_ptr + BLOCK + i, b)
    tl.store(out_ptr + 2 * BLOCK + i, c)
    tl.store(out_ptr + 3 * BLOCK + i, d)
    single = tl.randint(seed, offs, n_rounds=N_ROUNDS)
    tl.store(out_ptr + 4 * BLOCK + i, single)


SEEDS = [0, 1, 42, -1, -7, 2**31 - 1, 2**31 + 5, 2**40 + 3, -(2**50)]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("offs_dtype", [np.int32, np.int64], ids=["i32", "i64"])
def test_randint4x_and_randint(seed, offs_dtype):
    rng = np.random.default_rng(abs(seed) % 1000)
    block = 64
    info = np.iinfo(offs_dtype)
    offs = np.concatenate([np.arange(16), rng.integers(info.min, info.max, size=block - 16, dtype=np.int64)])
    offs = offs.astype(offs_dtype)
    out = poisoned((5, block), np.uint32)
    launch(_randint4x_kernel, (1,), out, seed, offs, N_ROUNDS=10, BLOCK=block)
    ref = randint4x_ref(seed, offs)
    for k in range(4):
        np.testing.assert_array_equal(out[k], ref[k], err_msg=f"word {k}")
    np.testing.assert_array_equal(out[4], ref[0])


def test_randint_known_values():
    # Seed 0, offsets 0..3: the first words of Philox4x32-10 on (i, 0, 0, 0) with key (0, 0); the
    # value at offset 0 is Random123's first known answer.
    out = poisoned((5, 4), np.uint32)
    launch(_randint4x_kernel, (1,), out, 0, np.arange(4, dtype=np.int32), N_ROUNDS=10, BLOCK=4)
    assert out[0, 0] == 0x6627E8D5
    assert [int(v) for v in out[4]] == [philox_ref(0, [i, 0, 0, 0])[0] for i in range(4)]


def test_int64_offsets_split_into_two_counter_words():
    # Triton 3.6 (and a regression: tritium once ran Philox 4x64 and returned uint64 here): a
    # 64-bit offset o is the counter (o & 0xffffffff, o >> 32, 0, 0) of Philox 4x32, so an offset
    # below 2^32 draws the same number as an int32 one, and the result is uint32.
    seed = 1234
    wide = np.array([5, 7, (3 << 32) | 5, -1], dtype=np.int64)
    out64 = poisoned((5, 4), np.uint32)
    launch(_randint4x_kernel, (1,), out64, seed, wide, N_ROUNDS=10, BLOCK=4)
    out32 = poisoned((5, 2), np.uint32)
    launch(_randint4x_kernel, (1,), out32, seed, np.array([5, 7], dtype=np.int32), N_ROUNDS=10,
           BLOCK=2)
    np.testing.assert_array_equal(out64[:, :2], out32)
    assert int(out64[0, 2]) == philox_ref(seed, [5, 3, 0, 0])[0]
    assert int(out64[0, 3]) == philox_ref(seed, [M32, M32, 0, 0])[0]
    assert out64[0, 2] != out64[0, 0]


@triton.jit
def _rand_kernel(out_ptr, seed, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.rand(seed, offs), mask=mask)
    u1, u2, u3, u4 = tl.rand4x(seed, offs)
    tl.store(out_ptr + n + offs, u1, mask=mask)
    tl.store(out_ptr + 2 * n + offs, u2, mask=mask)
    tl.store(out_ptr + 3 * n + offs, u3, mask=mask)
    tl.store(out_ptr + 4 * n + offs, u4, mask=mask)


@pytest.mark.parametrize("seed", [0, 123, -3, 2**35 + 1])
def test_rand_bit_exact_and_in_unit_interval(seed):
    n = 1000
    out = poisoned((5, n), np.float32)
    launch(_rand_kernel, (triton.cdiv(n, 256),), out, seed, n, BLOCK=256)
    words = randint4x_ref(seed, np.arange(n, dtype=np.int32))
    np.testing.assert_array_equal(out[0], uniform_ref(words[0]))
    for k in range(4):
        np.testing.assert_array_equal(out[1 + k], uniform_ref(words[k]))
    assert out.dtype == np.float32 and (out >= 0).all() and (out < 1).all()
    # Uniform: mean 1/2, variance 1/12 (loose bounds for 5000 draws).
    assert abs(out.mean() - 0.5) < 0.02
    assert abs(out.var() - 1 / 12) < 0.01


@triton.jit
def _uniform_kernel(out_ptr, x_ptr, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    tl.store(out_ptr + i, tl.uint_to_uniform_float(tl.load(x_ptr + i)))


@pytest.mark.parametrize("dt", [np.int32, np.uint32, np.int64, np.uint64], ids=lambda d: np.dtype(d).name)
def test_uint_to_uniform_float_extremes(dt):
    info = np.iinfo(dt)
    rng = np.random.default_rng(3)
    edge = [info.min, info.min + 1, info.max, info.max - 1, 0, 1]
    x = np.array(edge + [int(v) for v in rng.integers(info.min, info.max, size=10, dtype=dt)], dtype=dt)
    x = np.resize(x, 16).astype(dt)
    out = poisoned(16, np.float32)
    launch(_uniform_kernel, (1,), out, x, BLOCK=16)
    unsigned = x.view(np.uint32 if x.dtype.itemsize == 4 else np.uint64)
    np.testing.assert_array_equal(out, uniform_ref(unsigned))
    assert (out >= 0).all() and (out < 1).all()


@triton.jit
def _randn_kernel(out_ptr, seed, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.randn(seed, offs), mask=mask)
    n1, n2, n3, n4 = tl.randn4x(seed, offs)
    tl.store(out_ptr + n + offs, n1, mask=mask)
    tl.store(out_ptr + 2 * n + offs, n2, mask=mask)
    tl.store(out_ptr + 3 * n + offs, n3, mask=mask)
    tl.store(out_ptr + 4 * n + offs, n4, mask=mask)


def test_randn_matches_box_muller_and_is_standard_normal():
    n = 4096
    seed = 2024
    out = poisoned((5, n), np.float32)
    launch(_randn_kernel, (n // 512,), out, seed, n, BLOCK=512)
    words = randint4x_ref(seed, np.arange(n, dtype=np.int32))
    u = [uniform_ref(w) for w in words]
    z1, z2 = normal_ref(u[0], u[1])
    z3, z4 = normal_ref(u[2], u[3])
    for got, ref in zip(out, [z1, z1, z2, z3, z4]):
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)
    flat = out[1:].ravel()
    assert abs(flat.mean()) < 0.05
    assert abs(flat.std() - 1) < 0.05
    assert np.abs(flat).max() < 6.0


@triton.jit
def _pair_kernel(out_ptr, u_ptr, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    a, b = tl.pair_uniform_to_normal(tl.load(u_ptr + i), tl.load(u_ptr + BLOCK + i))
    tl.store(out_ptr + i, a)
    tl.store(out_ptr + BLOCK + i, b)


def test_pair_uniform_to_normal_clamps_zero():
    u = np.array([[0.0, 0.5, 0.25, 0.999], [0.0, 0.25, 0.5, 0.75]], dtype=np.float32)
    out = poisoned((2, 4), np.float32)
    launch(_pair_kernel, (1,), out, u, BLOCK=4)
    z1, z2 = normal_ref(u[0], u[1])
    np.testing.assert_allclose(out[0], z1, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out[1], z2, rtol=1e-5, atol=1e-6)
    assert np.isfinite(out).all()  # u1 = 0 is kept from log(0)


@triton.jit
def _scalar_seed_kernel(out_ptr, seed_ptr, BLOCK: tl.constexpr):
    # A seed loaded from memory (an int64 scalar) and a literal seed.
    offs = tl.arange(0, BLOCK)
    seed = tl.load(seed_ptr)
    tl.store(out_ptr + offs, tl.randint(seed, offs))
    tl.store(out_ptr + BLOCK + offs, tl.randint(5, offs))


def test_seed_from_memory_and_literal():
    out = poisoned((2, 8), np.uint32)
    seed = np.array([-(2**40) - 9], dtype=np.int64)
    launch(_scalar_seed_kernel, (1,), out, seed, BLOCK=8)
    np.testing.assert_array_equal(out[0], randint4x_ref(int(seed[0]), np.arange(8, dtype=np.int32))[0])
    np.testing.assert_array_equal(out[1], randint4x_ref(5, np.arange(8, dtype=np.int32))[0])


@triton.jit
def _short_counter_kernel(out_ptr, BLOCK: tl.constexpr):
    offs = (tl.arange(0, BLOCK) - 2).to(tl.int16)
    tl.store(out_ptr + tl.arange(0, BLOCK), tl.randint(0, offs))


def test_randint_widens_16_bit_offsets():
    # As Triton 3.6: the offset becomes uint32 (sign-extended), the counter's first word.
    out = poisoned(8, np.uint32)
    launch(_short_counter_kernel, (1,), out, BLOCK=8)
    ref = [philox_ref(0, [(i - 2) & M32, 0, 0, 0])[0] for i in range(8)]
    assert [int(v) for v in out] == ref


@triton.jit
def _bad_counter_kernel(out_ptr, BLOCK: tl.constexpr):
    c = tl.arange(0, BLOCK).to(tl.int16)
    a, b, _, _ = tl.philox(0, c, c, c, c)
    tl.store(out_ptr + tl.arange(0, BLOCK), a)


def test_philox_rejects_16_bit_counters():
    with pytest.raises(triton.CompilationError, match="32- or 64-bit"):
        launch(_bad_counter_kernel, (1,), poisoned(8, np.uint32), BLOCK=8)


@triton.jit
def _seeded_rand_kernel(out_ptr, seed, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    tl.store(out_ptr + i, tl.rand(seed, i))


@pytest.mark.parametrize("seed", [2.5, np.zeros(1, dtype=np.int32)], ids=["float", "pointer"])
def test_the_seed_must_be_an_integer(seed):
    with pytest.raises(triton.CompilationError, match="seed must be an integer"):
        launch(_seeded_rand_kernel, (1,), poisoned(4, np.float32), seed, BLOCK=4)
