"""tl.load / tl.store cache_modifier, eviction_policy and volatile: kept on the tile IR's
tt.load / tt.store, printed in the sm_90a PTX (ld.global.cg, st.global.cs, ...), results on
the CPU executor unchanged, and an unknown value is a located error."""

import numpy as np
import pytest

import tritium as triton
import tritium.language as tl


@triton.jit
def _copy_hinted(x_ptr, y_ptr, n, LOAD_CACHE: tl.constexpr, STORE_CACHE: tl.constexpr,
                 EVICT: tl.constexpr, VOLATILE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0, cache_modifier=LOAD_CACHE,
                eviction_policy=EVICT, volatile=VOLATILE)
    tl.store(y_ptr + offs, x * 2.0, mask=m, cache_modifier=STORE_CACHE)


SIG = {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32"}


def _ptx(**ce):
    ce = {"LOAD_CACHE": "", "STORE_CACHE": "", "EVICT": "", "VOLATILE": False, "BLOCK": 512,
          **ce}
    return triton.compile(_copy_hinted, signature=SIG, constexprs=ce, target="sm_90a",
                          divisible_by_16=("x_ptr", "y_ptr", "n")).asm["ptx"]


@pytest.mark.parametrize("load,store", [(".cg", ".cs"), (".ca", ".wb"), (".cv", ".wt"),
                                        (".cg", ".cg")])
def test_cache_modifiers_reach_the_ptx(load, store):
    ptx = _ptx(LOAD_CACHE=load, STORE_CACHE=store)
    assert f"ld.global{load}.v4.f32" in ptx
    assert f"st.global{store}.v4.f32" in ptx


def test_no_hint_no_modifier_and_eviction_and_volatile():
    ptx = _ptx()
    assert "ld.global.v4.f32" in ptx and "st.global.v4.f32" in ptx
    assert "ld.global.L1::evict_last" in _ptx(EVICT="evict_last")
    assert "ld.global.L1::evict_" not in _ptx(EVICT="evict_normal")
    assert "ld.volatile.global" in _ptx(VOLATILE=True)


def test_hints_do_not_change_results_on_the_executor():
    x = np.random.default_rng(0).standard_normal(300).astype(np.float32)
    y = np.zeros_like(x)
    _copy_hinted[(1,)](x, y, 300, LOAD_CACHE=".cg", STORE_CACHE=".cs", EVICT="evict_first",
                       VOLATILE=False, BLOCK=512)
    assert np.array_equal(y, x * 2)


@pytest.mark.parametrize("ce,msg", [({"LOAD_CACHE": ".wb"}, "cache_modifier '.wb'"),
                                    ({"STORE_CACHE": ".ca"}, "cache_modifier '.ca'"),
                                    ({"EVICT": "evict_sometimes"}, "eviction_policy")])
def test_unknown_hint_is_a_located_error(ce, msg):
    with pytest.raises(triton.CompilationError, match=msg) as e:
        _ptx(**ce)
    assert "test_cache_hints_cpu.py" in str(e.value)
