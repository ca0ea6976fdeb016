"""The core of `tritium.language` (`tl`): dtypes, constexpr, tensor and the
builtins that build IR.

A builtin works only while a kernel is being compiled: the code generator
installs the current `_C.Builder` with `_building(builder)`, and every builtin
fetches it with `_builder()`. The C++ builder does all the typing, promotion,
broadcasting and checking; the functions here only unwrap their Python
arguments and call it.
"""

import builtins
import contextlib
import functools
import math as _pymath
import threading

from ..errors import load_C

# ---------------------------------------------------------------------------
# The builder of the kernel being compiled
# ---------------------------------------------------------------------------

_state = threading.local()


@contextlib.contextmanager
def _building(builder):
    """Makes `builder` the one the builtins use while compiling a kernel."""
    previous = getattr(_state, "builder", None)
    _state.builder = builder
    try:
        yield builder
    finally:
        _state.builder = previous


def _builder(what="this function"):
    b = getattr(_state, "builder", None)
    if b is None:
        raise RuntimeError(
            f"{what} can only be called inside a @tritium.jit kernel: it builds "
            "the kernel's IR and has no meaning in plain Python (did you forget "
            "@tritium.jit, or call the kernel without kernel[grid](...)?)")
    return b


def builtin(fn):
    """Marks a function of `tl` that builds IR (callable only in a kernel)."""
    name = f"tl.{fn.__name__}"

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        _builder(name)
        return fn(*args, **kwargs)

    wrapper.__tritium_builtin__ = True
    return wrapper


def is_builtin(fn):
    return getattr(fn, "__tritium_builtin__", False)


def _unwrap(x):
    return x.value if isinstance(x, constexpr) else x


# ---------------------------------------------------------------------------
# dtypes
# ---------------------------------------------------------------------------

# Triton name -> IR text name.
_IR_NAMES = {
    "int1": "i1", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
    "fp8e4nv": "f8e4nv", "fp8e5": "f8e5", "fp8e4b15": "f8e4b15", "fp8e4b8": "f8e4b8",
    "fp8e5b16": "f8e5b16", "fp16": "f16", "bf16": "bf16", "fp32": "f32", "fp64": "f64",
}
_FROM_IR = {v: k for k, v in _IR_NAMES.items()}
_SINT = ("int8", "int16", "int32", "int64")
_UINT = ("int1", "uint8", "uint16", "uint32", "uint64")
# Triton's order (FP_TYPES).
_FP = ("fp8e4b15", "fp8e4nv", "fp8e4b8", "fp8e5", "fp8e5b16", "fp16", "bf16", "fp32", "fp64")
_BITS = {"int1": 1, "int8": 8, "int16": 16, "int32": 32, "int64": 64,
         "uint8": 8, "uint16": 16, "uint32": 32, "uint64": 64,
         "fp8e4nv": 8, "fp8e5": 8, "fp8e4b15": 8, "fp8e4b8": 8, "fp8e5b16": 8,
         "fp16": 16, "bf16": 16, "fp32": 32, "fp64": 64}
_MANTISSA = {"fp8e4nv": 3, "fp8e5": 2, "fp8e4b15": 3, "fp8e4b8": 3, "fp8e5b16": 2,
             "fp16": 10, "bf16": 7, "fp32": 23, "fp64": 52}
# fp8e4b15: every encoding finite (max 1.875); fp8e4b8 / fp8e5b16 ("fnuz"):
# 0x80 is the one NaN, no inf, no -0. See tritium/support/float_formats.h.
_EXPONENT_BIAS = {"fp8e4nv": 7, "fp8e5": 15, "fp8e4b15": 15, "fp8e4b8": 8, "fp8e5b16": 16,
                  "fp16": 15, "bf16": 127, "fp32": 127, "fp64": 1023}


class dtype:
    """A scalar element type (`tl.float32`, `tl.int64`, ...).

    `str(tl.float32)` is Triton's short name "fp32"; `ir_name` is the IR's
    ("f32")."""

    # Lists, as Triton's (tests concatenate them); only the dtypes tritium has.
    SINT_TYPES = list(_SINT)
    UINT_TYPES = list(_UINT)
    FP_TYPES = list(_FP)
    STANDARD_FP_TYPES = ["fp16", "bf16", "fp32", "fp64"]
    OTHER_TYPES = ["void"]

    def __init__(self, name):
        name = str(name)
        if name not in _IR_NAMES and name != "void":
            raise TypeError(f"unknown dtype {name!r}")
        self.name = name

    # -- names ---------------------------------------------------------------
    @property
    def ir_name(self):
        name = _IR_NAMES.get(self.name)
        if name is None:  # tl.void: no value has it
            raise TypeError(f"{self} is not the type of a value")
        return name

    def codegen_name(self):
        if self.name.startswith("fp"):
            return "float" + self.name[2:]
        if self.name.startswith("bf"):
            return "bfloat" + self.name[2:]
        return self.name

    def __str__(self):
        return self.name

    def __repr__(self):
        return f"triton.language.{self.codegen_name()}"

    def __eq__(self, other):
        other = _unwrap(other)
        return type(other) is dtype and self.name == other.name

    def __ne__(self, other):
        return not self.__eq__(other)

    def __hash__(self):
        return hash(("dtype", self.name))

    # -- queries ---------------------------------------------------------------
    @property
    def scalar(self):
        return self

    @property
    def primitive_bitwidth(self):
        return _BITS.get(self.name, 0)

    @property
    def int_bitwidth(self):
        return _BITS[self.name] if self.is_int() else 0

    @property
    def fp_mantissa_width(self):
        return _MANTISSA.get(self.name, 0)

    @property
    def exponent_bias(self):
        if self.name not in _EXPONENT_BIAS:
            raise AttributeError(f"{self} is not a floating-point type: it has no exponent bias")
        return _EXPONENT_BIAS[self.name]

    @property
    def int_signedness(self):
        return "signed" if self.name in _SINT else "unsigned"

    def is_void(self):
        return self.name == "void"

    def is_floating(self):
        return self.name in _FP

    def is_standard_floating(self):
        return self.name in ("fp16", "bf16", "fp32", "fp64")

    def is_int(self):
        return self.name in _SINT or self.name in _UINT

    def is_int_signed(self):
        return self.name in _SINT

    def is_int_unsigned(self):
        return self.name in _UINT

    def is_bool(self):
        return self.name == "int1"

    def is_ptr(self):
        return False

    def is_block(self):
        return False

    def is_const(self):
        return False

    def is_fp8(self):
        return self.name.startswith("fp8")

    def __getattr__(self, attr):
        # is_fp16(), is_int32(), is_uint8(), ... one per dtype name.
        if attr.startswith("is_"):
            suffix = attr[3:]
            if suffix in _IR_NAMES:
                return lambda: self.name == suffix
        raise AttributeError(f"'dtype' object has no attribute {attr!r}")

    def get_int_max_value(self):
        if self.name in _SINT:
            return 2 ** (self.int_bitwidth - 1) - 1
        if self.name in _UINT:
            return 2 ** self.int_bitwidth - 1
        raise TypeError(f"{self} is not an integer type")

    def get_int_min_value(self):
        if self.name in _SINT:
            return -(2 ** (self.int_bitwidth - 1))
        if self.name in _UINT:
            return 0
        raise TypeError(f"{self} is not an integer type")

    def to_ir(self, builder=None):
        return load_C().Type.scalar(self.ir_name)

    @staticmethod
    def is_dtype(type_str):
        return type_str in _IR_NAMES


class pointer_type(dtype):
    """`tl.pointer_type(tl.float32)`: a pointer to elements of a dtype."""

    def __init__(self, element_ty, address_space=1, const=False):
        element_ty = _unwrap(element_ty)
        if not isinstance(element_ty, dtype):
            raise TypeError(f"pointer_type expects a dtype, got {element_ty!r}")
        self.element_ty = element_ty
        self.address_space = address_space
        self.const = const
        self.name = f"pointer<{element_ty}>"

    @property
    def ir_name(self):
        raise TypeError(f"{self} has no scalar IR name")

    def codegen_name(self):
        return f"pointer_type({self.element_ty!r})"

    def __repr__(self):
        return f"triton.language.pointer_type({self.element_ty!r})"

    def __eq__(self, other):
        other = _unwrap(other)
        return (isinstance(other, pointer_type) and self.element_ty == other.element_ty
                and self.address_space == other.address_space)

    def __hash__(self):
        return hash(("pointer", self.element_ty, self.address_space))

    def is_ptr(self):
        return True

    def is_const(self):
        return self.const

    def is_floating(self):
        return False

    def is_int(self):
        return False

    def is_int_signed(self):
        return False

    def is_int_unsigned(self):
        return False

    def is_bool(self):
        return False

    @property
    def primitive_bitwidth(self):
        return 64

    def to_ir(self, builder=None):
        return load_C().Type.pointer(self.element_ty.to_ir(), self.address_space)


class block_type(dtype):
    """The type of a tensor: an element type and a shape (`x.type`)."""

    def __init__(self, element_ty, shape):
        self.element_ty = element_ty
        self.shape = tuple(int(_unwrap(s)) for s in shape)
        self.numel = _pymath.prod(self.shape)
        self.name = f"<{list(self.shape)}, {element_ty}>"

    @property
    def scalar(self):
        return self.element_ty

    @property
    def ir_name(self):
        raise TypeError(f"{self} has no scalar IR name")

    def __repr__(self):
        return f"block_type({self.element_ty!r}, {list(self.shape)})"

    def __eq__(self, other):
        other = _unwrap(other)
        return (isinstance(other, block_type) and self.element_ty == other.element_ty
                and self.shape == other.shape)

    def __hash__(self):
        return hash(("block", self.element_ty, self.shape))

    def is_block(self):
        return True

    def get_block_shapes(self):
        return self.shape

    def is_floating(self):
        return self.element_ty.is_floating()

    def is_int(self):
        return self.element_ty.is_int()

    def is_ptr(self):
        return False

    def to_ir(self, builder=None):
        return load_C().Type.tensor(self.element_ty.to_ir(), list(self.shape))


void = dtype("void")
int1 = dtype("int1")
int8 = dtype("int8")
int16 = dtype("int16")
int32 = dtype("int32")
int64 = dtype("int64")
uint8 = dtype("uint8")
uint16 = dtype("uint16")
uint32 = dtype("uint32")
uint64 = dtype("uint64")
float8e4nv = dtype("fp8e4nv")
float8e5 = dtype("fp8e5")
float8e4b15 = dtype("fp8e4b15")
float8e4b8 = dtype("fp8e4b8")
float8e5b16 = dtype("fp8e5b16")
float16 = dtype("fp16")
bfloat16 = dtype("bf16")
float32 = dtype("fp32")
float64 = dtype("fp64")

_DTYPES = {d.name: d for d in (int1, int8, int16, int32, int64, uint8, uint16, uint32,
                              uint64, float8e4nv, float8e5, float8e4b15, float8e4b8,
                              float8e5b16, float16, bfloat16, float32, float64)}


def dtype_from_name(name):
    """The tl dtype of a Triton name ("fp32") or an IR name ("f32")."""
    if name in _DTYPES:
        return _DTYPES[name]
    if name in _FROM_IR:
        return _DTYPES[_FROM_IR[name]]
    raise TypeError(f"unknown dtype {name!r}")


_INT_DTYPES = {(1, True): int1, (1, False): int1, (8, True): int8, (8, False): uint8,
               (16, True): int16, (16, False): uint16, (32, True): int32, (32, False): uint32,
               (64, True): int64, (64, False): uint64}


def get_int_dtype(bitwidth, signed):
    """The integer dtype of `bitwidth` bits (1, 8, 16, 32 or 64), signed or not, as Triton's
    `tl.core.get_int_dtype`: a compile-time helper (Inductor's sort and select helpers call it
    to bitcast floats of any width)."""
    d = _INT_DTYPES.get((_unwrap(bitwidth), bool(_unwrap(signed))))
    if d is None:
        raise ValueError(f"Unsupported bitwidth {_unwrap(bitwidth)} and signedness "
                         f"{bool(_unwrap(signed))}")
    return d


def type_from_ir(t):
    """The tl type (dtype / pointer_type / block_type) of a _C.Type."""
    if t.is_tensor:
        return block_type(type_from_ir(t.element), list(t.shape))
    if t.is_pointer:
        return pointer_type(type_from_ir(t.pointee))
    return dtype_from_name(t.dtype)


def _to_dtype(d, what="dtype"):
    d = _unwrap(d)
    if isinstance(d, str):
        return dtype_from_name(d)
    if not isinstance(d, dtype) or isinstance(d, block_type):
        raise TypeError(f"{what} must be a tl dtype (e.g. tl.float32), got {d!r}")
    return d


# ---------------------------------------------------------------------------
# constexpr
# ---------------------------------------------------------------------------


def _unwrap_deep(x):
    """Unwraps constexprs, also inside lists and tuples."""
    if isinstance(x, constexpr):
        return _unwrap_deep(x.value)
    if isinstance(x, tuple):
        return tuple(_unwrap_deep(e) for e in x)
    if isinstance(x, list):
        return [_unwrap_deep(e) for e in x]
    return x


def _const_binop(fn):
    def op(self, other):
        if isinstance(other, tensor):
            return NotImplemented
        return constexpr(fn(self.value, _unwrap(other)))

    return op


def _const_rbinop(fn):
    def op(self, other):
        if isinstance(other, tensor):
            return NotImplemented
        return constexpr(fn(_unwrap(other), self.value))

    return op


class const:
    """`ptr: tl.const` on a kernel parameter: the kernel only reads through this pointer. A
    store or atomic through it, or through a pointer made from it (arithmetic, tl.where, a
    loop-carried pointer, a helper's argument), is a CompilationError ("Cannot store to a
    constant pointer", as Triton says)."""

    def __init__(self):
        raise TypeError("tl.const is an annotation (`ptr: tl.const`), not a value")


class constexpr:
    """A value known at compile time. As an annotation (`BLOCK: tl.constexpr`)
    it marks a kernel parameter whose value is part of the specialisation."""

    def __init__(self, value):
        self.value = value.value if isinstance(value, constexpr) else value

    def __repr__(self):
        return f"constexpr[{self.value!r}]"

    def __str__(self):
        return str(self.value)

    def __hash__(self):
        return hash((type(self.value), self.value))

    def __bool__(self):
        return bool(self.value)

    def __index__(self):
        return self.value.__index__()

    def __int__(self):
        return int(self.value)

    def __float__(self):
        return float(self.value)

    def __len__(self):
        return len(self.value)

    def __iter__(self):
        return iter(self.value)

    def __getitem__(self, i):
        return self.value[_unwrap(i)]

    def __call__(self, *args, **kwargs):
        return self.value(*args, **kwargs)

    def __getattr__(self, name):
        if name == "value":
            raise AttributeError(name)
        return getattr(self.value, name)

    __add__ = _const_binop(lambda a, b: a + b)
    __radd__ = _const_rbinop(lambda a, b: a + b)
    __sub__ = _const_binop(lambda a, b: a - b)
    __rsub__ = _const_rbinop(lambda a, b: a - b)
    __mul__ = _const_binop(lambda a, b: a * b)
    __rmul__ = _const_rbinop(lambda a, b: a * b)
    __truediv__ = _const_binop(lambda a, b: a / b)
    __rtruediv__ = _const_rbinop(lambda a, b: a / b)
    __floordiv__ = _const_binop(lambda a, b: a // b)
    __rfloordiv__ = _const_rbinop(lambda a, b: a // b)
    __mod__ = _const_binop(lambda a, b: a % b)
    __rmod__ = _const_rbinop(lambda a, b: a % b)
    __pow__ = _const_binop(lambda a, b: a ** b)
    __rpow__ = _const_rbinop(lambda a, b: a ** b)
    __and__ = _const_binop(lambda a, b: a & b)
    __rand__ = _const_rbinop(lambda a, b: a & b)
    __or__ = _const_binop(lambda a, b: a | b)
    __ror__ = _const_rbinop(lambda a, b: a | b)
    __xor__ = _const_binop(lambda a, b: a ^ b)
    __rxor__ = _const_rbinop(lambda a, b: a ^ b)
    __lshift__ = _const_binop(lambda a, b: a << b)
    __rlshift__ = _const_rbinop(lambda a, b: a << b)
    __rshift__ = _const_binop(lambda a, b: a >> b)
    __rrshift__ = _const_rbinop(lambda a, b: a >> b)
    __lt__ = _const_binop(lambda a, b: a < b)
    __le__ = _const_binop(lambda a, b: a <= b)
    __gt__ = _const_binop(lambda a, b: a > b)
    __ge__ = _const_binop(lambda a, b: a >= b)
    __eq__ = _const_binop(lambda a, b: a == b)
    __ne__ = _const_binop(lambda a, b: a != b)

    def __neg__(self):
        return constexpr(-self.value)

    def __pos__(self):
        return constexpr(+self.value)

    def __invert__(self):
        return constexpr(~self.value)

    def __abs__(self):
        return constexpr(abs(self.value))


# Triton's core module constant, used as a default value by kernel libraries
# (`descending: tl.constexpr = tl.core.CONSTEXPR_0`).
CONSTEXPR_0 = constexpr(0)


def _operand(x, what="operand"):
    """A builder operand: a _C.Value or a Python bool/int/float literal."""
    x = _unwrap(x)
    if isinstance(x, tensor):
        return x.handle
    if isinstance(x, (bool, int, float)):
        return x
    # numpy scalars and the like
    if hasattr(x, "item") and type(x).__module__ == "numpy":
        return x.item()
    if isinstance(x, dtype):
        raise TypeError(f"a dtype ({x!r}) cannot be used as a value")
    raise TypeError(f"unsupported {what} of type {type(x).__name__}: {x!r}")


def _value(x, what="operand"):
    """A _C.Value (literals are materialised with their default types)."""
    op = _operand(x, what)
    if isinstance(op, (bool, int, float)):
        return _builder().materialize(op)
    return op


# ---------------------------------------------------------------------------
# tensor
# ---------------------------------------------------------------------------


def _binop(opname):
    def op(self, other):
        return tensor(_builder().binary(opname, self.handle, _operand(other)))

    def rop(self, other):
        return tensor(_builder().binary(opname, _operand(other), self.handle))

    return op, rop


class tensor:
    """A value of the kernel being compiled: a scalar, a pointer or a block.

    Wraps a `_C.Value`; operators call the builder's semantic helpers."""

    __hash__ = object.__hash__

    # The Python number this tensor holds when it is a local assigned a
    # compile-time number (`n = 4`, see `literal_tensor`), else None.
    _literal = None

    def __init__(self, handle, type=None):
        self.handle = handle
        self._type = type

    @property
    def type(self):
        if self._type is None:
            self._type = type_from_ir(self.handle.type)
        return self._type

    @property
    def dtype(self):
        return self.type.scalar

    @property
    def shape(self):
        # A list of constexprs, as Triton's (`x.shape == [N]` holds, and
        # `x.shape[0]`, `len(x.shape)` and unpacking are compile-time). A fresh
        # list each time: a caller that edits it changes nothing here.
        t = self.type
        return [constexpr(s) for s in t.shape] if t.is_block() else []

    @property
    def numel(self):
        t = self.type
        return constexpr(t.numel if t.is_block() else 1)

    def __repr__(self):
        return f"tensor({self.type})"

    def __str__(self):
        return repr(self)

    def __bool__(self):
        raise TypeError(
            "a tensor's truth value is only known when the kernel runs; use it as "
            "the condition of `if`/`while` directly, or use tl.where")

    __add__, __radd__ = _binop("add")
    __sub__, __rsub__ = _binop("sub")
    __mul__, __rmul__ = _binop("mul")
    __truediv__, __rtruediv__ = _binop("truediv")
    __floordiv__, __rfloordiv__ = _binop("floordiv")
    __mod__, __rmod__ = _binop("mod")
    __and__, __rand__ = _binop("and")
    __or__, __ror__ = _binop("or")
    __xor__, __rxor__ = _binop("xor")
    __lshift__, __rlshift__ = _binop("lshift")
    __rshift__, __rrshift__ = _binop("rshift")
    __lt__, _ = _binop("lt")
    __le__, _ = _binop("le")
    __gt__, _ = _binop("gt")
    __ge__, _ = _binop("ge")
    __eq__, _ = _binop("eq")
    __ne__, _ = _binop("ne")
    del _

    def __neg__(self):
        return tensor(_builder().unary("neg", self.handle))

    def __pos__(self):
        return tensor(_builder().unary("pos", self.handle))

    def __invert__(self):
        return tensor(_builder().unary("invert", self.handle))

    def __pow__(self, other):
        raise TypeError("'**' on tensors is not supported; use tl.exp2/tl.exp and tl.log")

    __rpow__ = __pow__

    def __matmul__(self, other):
        raise TypeError("'@' on tensors is not supported; use tl.dot")

    def __getitem__(self, index):
        return _subscript(self, index)

    def __iter__(self):
        raise TypeError("iterating over a tensor is not supported")

    def __len__(self):
        raise TypeError("len() of a tensor is not supported; use x.shape")

    def logical_and(self, other):
        return tensor(_builder().binary("logical_and", self.handle, _operand(other)))

    def logical_or(self, other):
        return tensor(_builder().binary("logical_or", self.handle, _operand(other)))

    # Member functions Triton exposes on tensors.
    def to(self, dtype, fp_downcast_rounding=None, bitcast=False):
        return cast(self, dtype, fp_downcast_rounding=fp_downcast_rounding, bitcast=bitcast)

    def cast(self, dtype, fp_downcast_rounding=None, bitcast=False):
        return cast(self, dtype, fp_downcast_rounding=fp_downcast_rounding, bitcast=bitcast)

    @property
    def T(self):
        return trans(self)

    def reshape(self, *shape, can_reorder=False):
        return reshape(self, *shape, can_reorder=can_reorder)

    def view(self, *shape):
        return view(self, *shape)

    def trans(self, *dims):
        return trans(self, *dims)

    def permute(self, *dims):
        return permute(self, *dims)

    def expand_dims(self, axis):
        return expand_dims(self, axis)

    def broadcast_to(self, *shape):
        return broadcast_to(self, *shape)

    def ravel(self):
        return reshape(self, self.type.numel if self.type.is_block() else 1)

    def sum(self, axis=None, keep_dims=False, dtype=None):
        return sum(self, axis, keep_dims=keep_dims, dtype=dtype)

    def max(self, axis=None, return_indices=False, return_indices_tie_break_left=True,
            keep_dims=False):
        return max(self, axis, return_indices, return_indices_tie_break_left, keep_dims)

    def min(self, axis=None, return_indices=False, return_indices_tie_break_left=True,
            keep_dims=False):
        return min(self, axis, return_indices, return_indices_tie_break_left, keep_dims)

    def argmax(self, axis, tie_break_left=True, keep_dims=False):
        return argmax(self, axis, tie_break_left, keep_dims)

    def argmin(self, axis, tie_break_left=True, keep_dims=False):
        return argmin(self, axis, tie_break_left, keep_dims)

    def xor_sum(self, axis=None, keep_dims=False):
        return xor_sum(self, axis, keep_dims)

    def exp(self):
        return exp(self)

    def exp2(self):
        return exp2(self)

    def log(self):
        return log(self)

    def log2(self):
        return log2(self)

    def sqrt(self):
        return sqrt(self)

    def abs(self):
        return abs(self)

    def sigmoid(self):
        return sigmoid(self)


def literal_tensor(value):
    """The scalar tensor a local assigned a compile-time number holds.

    As in Triton, `n = 4` in a kernel makes `n` a scalar of the literal's
    default type (int32, or int64 / uint32 / uint64 when it does not fit; fp32
    or fp64 for floats; int1 for bools), so `n.dtype` exists and `n` promotes
    like any scalar tensor. The tensor remembers its number: where a constexpr
    is required (tl.arange's bounds, shapes, axes, static_range, a callee's
    constexpr parameter), tritium takes it as that number, where Triton would
    reject it."""
    t = tensor(_builder().materialize(value))
    t._literal = value
    return t


def literal_value(x):
    """The Python number of a literal tensor, or x itself for anything else
    (constexprs unwrapped)."""
    x = _unwrap(x)
    if isinstance(x, tensor) and x._literal is not None:
        return x._literal
    return x


def _subscript(x, index):
    """x[:, None], x[None, :], x[None]: only full slices and None."""
    b = _builder("tensor indexing")
    if not isinstance(index, tuple):
        index = (index,)
    handle = x.handle
    dim = 0
    for item in index:
        item = _unwrap(item)
        if item is None:
            handle = b.expand_dims(handle, dim)
            dim += 1
        elif isinstance(item, slice):
            if item != slice(None, None, None):
                raise TypeError(f"unsupported tensor index: {item}: tensor slicing with bounds "
                                "is not supported; only ':' and None may index a tensor")
            dim += 1
        elif item is Ellipsis:
            raise TypeError("'...' in tensor indexing is not supported")
        else:
            raise TypeError(f"unsupported tensor index: {item!r}: a tensor can only be indexed "
                            f"with ':' and None, not {type(item).__name__}")
    return tensor(handle)


# ---------------------------------------------------------------------------
# Builtins
# ---------------------------------------------------------------------------


def _constexpr_int(x, what):
    x = literal_value(x)
    if isinstance(x, tensor):
        raise TypeError(f"{what} must be constexpr")
    if isinstance(x, bool) or not isinstance(x, int):
        if hasattr(x, "__index__") and not isinstance(x, (bool, float)):
            return x.__index__()
        raise TypeError(f"{what} must be an integer constexpr, got {x!r}")
    if not -(1 << 63) <= x < (1 << 63):  # what the builder takes (C++ int64)
        raise ValueError(f"{what} must fit in 64 bits, got {x}")
    return x


def _shape(shape, what):
    shape = literal_value(_unwrap_deep(shape))
    if isinstance(shape, int):
        shape = [shape]
    if not isinstance(shape, (tuple, list)):
        raise TypeError(f"{what} must be a list of constexpr ints, got {shape!r}")
    return [_constexpr_int(s, f"{what} entries") for s in shape]


def _shape_args(shape, what):
    """`reshape(x, 4, 8)` and `reshape(x, (4, 8))` alike."""
    if len(shape) == 1 and isinstance(_unwrap(shape[0]), (tuple, list)):
        shape = _unwrap(shape[0])
    return _shape(list(shape), what)


def _axis(axis):
    axis = literal_value(axis)
    if axis is None:
        return None
    return _constexpr_int(axis, "axis")


@builtin
def program_id(axis=0):
    return tensor(_builder().program_id(_constexpr_int(axis, "tl.program_id's axis")))


@builtin
def num_programs(axis=0):
    return tensor(_builder().num_programs(_constexpr_int(axis, "tl.num_programs's axis")))


@builtin
def arange(start, end):
    start, end = literal_value(start), literal_value(end)
    if isinstance(start, tensor) or isinstance(end, tensor):
        raise TypeError("tl.arange's arguments must be constexpr")
    start = _constexpr_int(start, "tl.arange's start")
    end = _constexpr_int(end, "tl.arange's end")
    return tensor(_builder().arange(start, end))


def _full(shape, value, dtype, fname):
    d = _to_dtype(dtype, f"{fname}'s dtype")
    shape = _shape(shape, f"{fname}'s shape")
    return tensor(_builder().full(shape, _operand(value, f"{fname}'s value"), d.ir_name))


@builtin
def full(shape, value, dtype):
    return _full(shape, value, dtype, "tl.full")


@builtin
def zeros(shape, dtype):
    return _full(shape, 0, dtype, "tl.zeros")


@builtin
def zeros_like(input):
    return _full(input.shape, 0, input.dtype, "tl.zeros_like")


@builtin
def full_like(input, value, dtype=None):
    return _full(input.shape, value, input.dtype if _unwrap(dtype) is None else dtype,
                 "tl.full_like")


def _mask(mask):
    mask = _unwrap(mask)
    if mask is None:
        return None
    return _value(mask, "mask")


def _pointer(ptr, what):
    ptr = _unwrap(ptr)
    if not isinstance(ptr, tensor):
        raise TypeError(f"{what}'s pointer must be a pointer or a tensor of pointers, "
                        f"got {ptr!r}")
    return ptr.handle


@builtin
def load(pointer, mask=None, other=None, boundary_check=(), padding_option="",
         cache_modifier="", eviction_policy="", volatile=False):
    p = _unwrap(pointer)
    if hasattr(type(p), "_tritium_load"):  # a block pointer (language/block.py)
        return p._tritium_load(mask, other, boundary_check, padding_option)
    if _unwrap_deep(boundary_check) not in ((), [], None) or _unwrap(padding_option):
        raise ValueError("tl.load: `padding_option` or `boundary_check` argument is not "
                         "supported for loading a tensor of pointers or loading a scalar, "
                         "because the compiler does not know the boundary; please use block "
                         "pointers (defined by `make_block_ptr`) instead")
    other = _unwrap(other)
    return tensor(_builder().load(_pointer(pointer, "tl.load"), _mask(mask),
                                  None if other is None else _operand(other, "other"),
                                  _str_option(cache_modifier, "cache_modifier"),
                                  _str_option(eviction_policy, "eviction_policy"),
                                  bool(_unwrap(volatile))))


@builtin
def store(pointer, value, mask=None, boundary_check=(), cache_modifier="",
          eviction_policy=""):
    p = _unwrap(pointer)
    if hasattr(type(p), "_tritium_store"):  # a block pointer (language/block.py)
        return p._tritium_store(value, mask, boundary_check)
    if _unwrap_deep(boundary_check) not in ((), [], None):
        raise ValueError("tl.store: `boundary_check` argument is not supported for storing "
                         "a tensor of pointers or storing a scalar, because the compiler "
                         "does not know the boundary; please use block pointers (defined by "
                         "`make_block_ptr`) instead")
    _builder().store(_pointer(pointer, "tl.store"), _operand(value, "value"), _mask(mask),
                     _str_option(cache_modifier, "cache_modifier"),
                     _str_option(eviction_policy, "eviction_policy"))


def _str_option(arg, what):
    """A string constexpr option (cache_modifier, eviction_policy, an atomic's sem or scope):
    None or "" for the default; the builder checks the value (a located error names the allowed
    ones)."""
    arg = _unwrap(arg)
    if arg is None:
        return ""
    if not isinstance(arg, str):
        raise TypeError(f"{what} must be a string constexpr, got {arg!r}")
    return arg


def _atomic(kind):
    def fn(pointer, val, mask=None, sem=None, scope=None):
        name = f"tl.atomic_{kind}"
        return tensor(_builder().atomic_rmw(kind, _pointer(pointer, name),
                                            _operand(val, "val"), _mask(mask),
                                            _str_option(sem, f"{name}'s sem"),
                                            _str_option(scope, f"{name}'s scope")))

    fn.__name__ = f"atomic_{kind}"
    return builtin(fn)


atomic_add = _atomic("add")
atomic_max = _atomic("max")
atomic_min = _atomic("min")
atomic_xchg = _atomic("xchg")
atomic_and = _atomic("and")
atomic_or = _atomic("or")
atomic_xor = _atomic("xor")


@builtin
def atomic_cas(pointer, cmp, val, sem=None, scope=None):
    """Where *pointer == cmp, stores val; returns the old value either way."""
    return tensor(_builder().atomic_cas(_pointer(pointer, "tl.atomic_cas"),
                                        _operand(cmp, "cmp"), _operand(val, "val"),
                                        _str_option(sem, "tl.atomic_cas's sem"),
                                        _str_option(scope, "tl.atomic_cas's scope")))


@builtin
def where(condition, x, y):
    return tensor(_builder().where(_operand(condition, "condition"), _operand(x),
                                   _operand(y)))


class PropagateNan:
    NONE = False
    ALL = True


@builtin
def maximum(x, y, propagate_nan=PropagateNan.NONE):
    return tensor(_builder().maximum(_operand(x), _operand(y), bool(_unwrap(propagate_nan))))


@builtin
def minimum(x, y, propagate_nan=PropagateNan.NONE):
    return tensor(_builder().minimum(_operand(x), _operand(y), bool(_unwrap(propagate_nan))))


@builtin
def clamp(x, min, max, propagate_nan=PropagateNan.NONE):
    return minimum(maximum(x, min, propagate_nan), max, propagate_nan)


@builtin
def cast(input, dtype, fp_downcast_rounding=None, bitcast=False):
    d = _unwrap(dtype)
    x = _value(input, "tl.cast's input")
    b = _builder()
    if isinstance(d, block_type):  # Triton casts to a block type's element type
        d = d.element_ty
    if isinstance(d, pointer_type):
        return tensor(b.cast_to_pointer(x, d.to_ir()))
    d = _to_dtype(d, "tl.cast's dtype")
    rounding = _unwrap(fp_downcast_rounding)
    if rounding is not None and not isinstance(rounding, str):
        raise TypeError(f"fp_downcast_rounding must be \"rtne\" or \"rtz\", got {rounding!r}")
    return tensor(b.cast(x, d.ir_name, bool(_unwrap(bitcast)), rounding or ""))


def _reduce(input, axis, kind, keep_dims):
    x = _unwrap(input)
    if not isinstance(x, tensor):
        raise TypeError(f"tl.{kind} expects a tensor, got {x!r}")
    return tensor(_builder().reduce(x.handle, _axis(axis), kind, bool(_unwrap(keep_dims))))


@builtin
def sum(input, axis=None, keep_dims=False, dtype=None):
    dtype = _unwrap(dtype)
    if dtype is not None:
        input = cast(input, dtype)
    r = _reduce(input, axis, "sum", keep_dims)
    if dtype is not None and dtype.is_int() and r.dtype != dtype:
        # An explicit narrow integer dtype accumulates in that type, as Triton's combine
        # does: the (wider) sum wraps to it; int1 sums modulo 2.
        r = cast(r & 1, dtype) if dtype.primitive_bitwidth == 1 else cast(r, dtype)
    return r


@builtin
def max(input, axis=None, return_indices=False, return_indices_tie_break_left=True,
        keep_dims=False):
    if _unwrap(return_indices):
        return (_reduce(input, axis, "max", keep_dims),
                _reduce(input, axis, "argmax", keep_dims))
    return _reduce(input, axis, "max", keep_dims)


@builtin
def min(input, axis=None, return_indices=False, return_indices_tie_break_left=True,
        keep_dims=False):
    if _unwrap(return_indices):
        return (_reduce(input, axis, "min", keep_dims),
                _reduce(input, axis, "argmin", keep_dims))
    return _reduce(input, axis, "min", keep_dims)


@builtin
def argmax(input, axis, tie_break_left=True, keep_dims=False):
    return _reduce(input, axis, "argmax", keep_dims)


@builtin
def argmin(input, axis, tie_break_left=True, keep_dims=False):
    return _reduce(input, axis, "argmin", keep_dims)


@builtin
def xor_sum(input, axis=None, keep_dims=False):
    return _reduce(input, axis, "xor_sum", keep_dims)


@builtin
def dot(input, other, acc=None, input_precision=None, allow_tf32=None,
        max_num_imprecise_acc=None, out_dtype=float32):
    """input @ other (+ acc): 2-D (MxK @ KxN) or batched 3-D (BxMxK @ BxKxN), with M, N, K >= 16.

    fp32 operands follow input_precision: "tf32" (the default; allow_tf32=False means "ieee"),
    "tf32x3" or "ieee"; lib/exec/dot.cpp defines each bit for bit. max_num_imprecise_acc is kept
    on the op for fp8 operands but changes no result: fp8 products always accumulate in full fp32.
    """
    a, b_ = _unwrap(input), _unwrap(other)
    if not isinstance(a, tensor) or not isinstance(b_, tensor):
        raise TypeError("tl.dot's operands must be tensors")
    precision = _unwrap(input_precision)
    allow_tf32 = _unwrap(allow_tf32)
    if precision is not None and allow_tf32 is not None:
        raise ValueError("tl.dot: pass input_precision or allow_tf32, not both")
    if precision is None:
        precision = "tf32" if allow_tf32 in (None, True) else "ieee"
    if not isinstance(precision, str):
        raise TypeError(f"tl.dot's input_precision must be a string constexpr (tf32, tf32x3 or ieee), "
                        f"got {precision!r}")
    imprecise = _unwrap(max_num_imprecise_acc)
    imprecise = 0 if imprecise is None else _constexpr_int(imprecise, "tl.dot's max_num_imprecise_acc")
    acc = _unwrap(acc)
    out = _to_dtype(out_dtype, "tl.dot's out_dtype")
    return tensor(_builder().dot(a.handle, b_.handle,
                                 None if acc is None else _value(acc, "acc"),
                                 precision, out.ir_name, imprecise))


@builtin
def trans(input, *dims):
    x = _unwrap(input)
    if not isinstance(x, tensor):
        raise TypeError("tl.trans expects a tensor")
    order = _shape_args(dims, "tl.trans's dims") if dims else None
    if order is None:
        rank = len(x.shape)
        order = list(reversed(_py_range(rank)))
    return tensor(_builder().trans(x.handle, order))


@builtin
def permute(input, *dims):
    return trans(input, *dims)


@builtin
def reshape(input, *shape, can_reorder=False):
    x = _unwrap(input)
    return tensor(_builder().reshape(_value(x, "tl.reshape's input"),
                                     _shape_args(shape, "tl.reshape's shape")))


@builtin
def view(input, *shape):
    return reshape(input, *shape)


@builtin
def ravel(input, can_reorder=False):
    x = _unwrap(input)
    return reshape(x, x.type.numel if x.type.is_block() else 1)


@builtin
def broadcast_to(input, *shape):
    return tensor(_builder().broadcast_to(_value(input, "tl.broadcast_to's input"),
                                          _shape_args(shape, "tl.broadcast_to's shape")))


@builtin
def broadcast(input, other):
    a, b_ = _builder().broadcast_pair(_value(input), _value(other))
    return tensor(a), tensor(b_)


@builtin
def expand_dims(input, axis):
    axis = _unwrap_deep(axis)
    axes = list(axis) if isinstance(axis, (tuple, list)) else [axis]
    axes = [_constexpr_int(a, "tl.expand_dims's axis") for a in axes]
    x = _unwrap(input)
    rank = len(x.shape) if isinstance(x, tensor) else 0
    # Every axis names a dimension of the result (rank + one per new axis);
    # a negative one counts from its end. Two axes naming the same dimension
    # would leave the result's rank short of what the caller asked for.
    new_rank = rank + len(axes)
    normalized = []
    for a in axes:
        if not -new_rank <= a < new_rank:
            raise ValueError(f"tl.expand_dims: invalid axis {a} for a result of rank "
                             f"{new_rank} (an axis must be in [{-new_rank}, {new_rank}))")
        normalized.append(a + new_rank if a < 0 else a)
    if len(set(normalized)) != len(normalized):
        # Triton's wording too ("duplicate axes, normalized axes = ..."), which code and
        # tests written against Triton look for.
        raise ValueError(f"tl.expand_dims: repeated axis in {axes}: duplicate axes, "
                         f"normalized axes = {normalized}")
    handle = _value(x, "tl.expand_dims's input")
    for a in sorted(normalized):
        handle = _builder().expand_dims(handle, a)
    return tensor(handle)


@builtin
def fma(x, y, z):
    return tensor(_builder().fma(_operand(x), _operand(y), _operand(z)))


@builtin
def cdiv(x, div):
    x, div = _unwrap(x), _unwrap(div)
    if not isinstance(x, tensor) and not isinstance(div, tensor):
        return constexpr((x + div - 1) // div)
    return (x + div - 1) // div


@builtin
def multiple_of(input, values):
    return input


@builtin
def max_contiguous(input, values):
    return input


@builtin
def max_constancy(input, values):
    return input


@builtin
def debug_barrier():
    """A barrier of the program's threads (bar.sync on the GPU): the memory
    accesses before it, by any thread of the program, happen before those
    after it. Kernels rely on it to order a scalar store after a block
    store to the same address (Liger-Kernel's cross entropy stores the
    target's gradient over the row it just wrote). One thread per program
    on the CPU executor: nothing to wait for there."""
    _builder().create_op("gpu.barrier", [], [], {})


@builtin
def assume(cond):
    """A hint that cond holds; tritium's analyses do not use it yet, so it
    builds nothing (a constant false condition is the user's mistake)."""
    c = literal_value(cond)
    if not isinstance(c, tensor) and not c:
        raise ValueError("tl.assume: the condition is always false")


@builtin
def static_print(*values, sep=" ", end="\n", file=None, flush=False):
    print(*[_unwrap(v) for v in values], sep=sep, end=end, file=file, flush=flush)


@builtin
def device_print(prefix, *args, hex=False):
    """Prints `prefix` and the values of args when the kernel runs."""
    prefix = _unwrap(prefix)
    if not isinstance(prefix, str):
        raise TypeError(f"tl.device_print's prefix must be a string, got {prefix!r}")
    values = []
    for a in args:
        a = _unwrap(a)
        if isinstance(a, str):
            raise TypeError("tl.device_print prints only values after its prefix; got the "
                            f"string {a!r}")
        values.append(_value(a, "tl.device_print argument"))
    _builder().create_op("tt.print", values, [], {"prefix": prefix, "hex": bool(_unwrap(hex))})


@builtin
def device_assert(cond, msg=""):
    """Fails the launch with an ExecutionError when cond is false somewhere:
    always on the CPU executor, on the GPU in debug builds only (as in
    Triton; see docs/gpu-debug.md)."""
    c = _unwrap(cond)
    msg = _unwrap(msg)
    if not isinstance(c, tensor):
        if not c:
            raise StaticAssertionError(f"device_assert is always false{': ' + str(msg) if msg else ''}")
        return
    if not c.dtype.is_bool():
        c = tensor(_builder().binary("ne", c.handle, 0))
    _builder().create_op("tt.assert", [c.handle], [], {"message": str(msg)})


@builtin
def inline_asm_elementwise(asm, constraints, args, dtype, is_pure, pack):
    """Runs PTX text `asm` on the elements of `args` (broadcast to one shape),
    `pack` elements per run, giving a tensor of `dtype` (a tuple of tensors
    when dtype is a tuple or list). In the text, `$i` is the i-th register of
    `constraints` (LLVM letters: the results' `=r`... first, then the
    arguments'); elements narrower than 32 bits are packed, up to `pack` of
    them, into one register. GPU only."""
    asm = _unwrap(asm)
    constraints = _unwrap(constraints)
    if not isinstance(asm, str) or not isinstance(constraints, str):
        raise TypeError("tl.inline_asm_elementwise: asm and constraints must be strings")
    args = _unwrap(args)
    if isinstance(args, tensor) or not isinstance(args, (list, tuple)):
        args = [args]
    dtypes = _unwrap(dtype)
    single = not isinstance(dtypes, (list, tuple))
    if single:
        dtypes = [dtypes]
    names = []
    for d in dtypes:
        d = _to_dtype(d, "tl.inline_asm_elementwise's dtype")
        if d.is_ptr() or d.is_void():
            raise TypeError(f"tl.inline_asm_elementwise cannot return {d!r}")
        names.append(d.ir_name)
    pack = _unwrap(pack)
    if isinstance(pack, bool) or not isinstance(pack, int):
        raise TypeError(f"tl.inline_asm_elementwise: pack must be an int, got {pack!r}")
    values = [_value(a, "tl.inline_asm_elementwise argument") for a in args]
    out = [tensor(h) for h in _builder().inline_asm_elementwise(
        asm, constraints, values, names, bool(_unwrap(is_pure)), pack)]
    return out[0] if single else tuple(out)


@builtin
def static_assert(cond, msg=""):
    c = _unwrap(cond)
    if isinstance(c, tensor):
        raise TypeError("tl.static_assert's condition must be constexpr")
    if not c:
        msg = _unwrap(msg)
        raise StaticAssertionError(f"static_assert failed{': ' + str(msg) if msg else ''}")


class StaticAssertionError(AssertionError):
    """A failed tl.static_assert (reported as a CompilationError)."""


def _math_fn(op, doc):
    def fn(x):
        return tensor(_builder().math(op, _operand(x)))

    fn.__name__ = op
    fn.__qualname__ = op
    fn.__doc__ = doc
    return builtin(fn)


exp = _math_fn("exp", "e ** x, elementwise.")
exp2 = _math_fn("exp2", "2 ** x, elementwise.")
log = _math_fn("log", "Natural logarithm, elementwise.")
log2 = _math_fn("log2", "Base-2 logarithm, elementwise.")
sqrt = _math_fn("sqrt", "Square root (approximate on GPUs: sqrt.approx.ftz, as Triton's), "
                        "elementwise.")
sqrt_rn = _math_fn("sqrt_rn", "Square root rounded to nearest, elementwise.")
rsqrt = _math_fn("rsqrt", "1 / sqrt(x), elementwise.")
abs = _math_fn("abs", "Absolute value, elementwise.")
sin = _math_fn("sin", "Sine, elementwise.")
cos = _math_fn("cos", "Cosine, elementwise.")
floor = _math_fn("floor", "Floor, elementwise.")
ceil = _math_fn("ceil", "Ceiling, elementwise.")
erf = _math_fn("erf", "Error function, elementwise.")
tanh = _math_fn("tanh", "Hyperbolic tangent, elementwise.")
sigmoid = _math_fn("sigmoid", "1 / (1 + exp(-x)), elementwise.")


@builtin
def umulhi(x, y):
    """The high 32 (or 64) bits of the full product of x and y, read as unsigned."""
    return tensor(_builder().binary("umulhi", _operand(x), _operand(y)))


@builtin
def div_rn(x, y):
    """x / y rounded to nearest (`/` may be approximate on GPUs, as in Triton)."""
    return tensor(_builder().binary("div_rn", _operand(x), _operand(y)))


@builtin
def fdiv(x, y, ieee_rounding=False):
    return tensor(_builder().binary("div_rn" if _unwrap(ieee_rounding) else "truediv",
                                    _operand(x), _operand(y)))


# ---------------------------------------------------------------------------
# Loop iterators (recognised by the code generator in `for` statements)
# ---------------------------------------------------------------------------


class range:
    """`for i in tl.range(lb, ub, step, num_stages=...)`: an scf.for loop;
    num_stages is a hint to the GPU pipeliner."""

    def __init__(self, arg1, arg2=None, step=None, num_stages=None, loop_unroll_factor=None,
                 disallow_acc_multi_buffer=False, flatten=False, warp_specialize=False):
        if arg2 is None:
            self.start, self.end = 0, arg1
        else:
            self.start, self.end = arg1, arg2
        self.step = 1 if step is None else step
        self.num_stages = num_stages
        self.loop_unroll_factor = loop_unroll_factor

    def __iter__(self):
        raise RuntimeError("tl.range can only be used as the iterable of a `for` loop "
                           "inside a @tritium.jit kernel")


class static_range:
    """`for i in tl.static_range(lb, ub, step)`: a loop the compiler unrolls
    fully; the bounds must be constexpr."""

    def __init__(self, arg1, arg2=None, step=None):
        if arg2 is None:
            self.start, self.end = 0, arg1
        else:
            self.start, self.end = arg1, arg2
        self.step = 1 if step is None else step

    def __iter__(self):
        raise RuntimeError("tl.static_range can only be used as the iterable of a `for` "
                           "loop inside a @tritium.jit kernel")


# Python's builtins the code generator treats specially keep their names.
_py_range = builtins.range

pi32_t = pointer_type(int32)
