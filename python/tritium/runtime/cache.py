"""The on-disk cache of compiled kernels.

Where: $TRITIUM_CACHE_DIR, else ~/.cache/tritium (directories created with
mode 0700: compiled code is executable content). TRITIUM_CACHE_DISABLE=1
turns the cache off.

Key: sha256 of everything the compiled code depends on -- the kernel's
source and the sources of every @jit function it references (recursively),
the global constants it reads, the specialisation key, the options
(num_warps, num_stages, target) and the compiler's own version (a hash of
the `_C` extension and of tritium's Python sources, computed once per
process).

Entry: one file `<key[:2]>/<key>.tkc`, written atomically (a temporary file
in the same directory, then os.replace; not fsync'ed: see KernelCache.put), laid
out as

    magic b"TRITIUMC" | format u32 | payload length u64 | sha256(payload) | payload
    payload = index length u32 | index (JSON [[name, size], ...]) | blobs

so a truncated file, a flipped byte or an entry of another format is
detected on read; such an entry is deleted (unless another process has
replaced it since it was read) and reported as a miss (the caller recompiles
and replaces it), never loaded.
"""

import ast
import hashlib
import inspect
import json
import os
import struct
import sys
import tempfile
import textwrap
import types
import warnings
import weakref

MAGIC = b"TRITIUMC"
FORMAT_VERSION = 1
_HEADER = struct.Struct("<8sIQ32s")  # magic, format, payload length, sha256
_SUFFIX = ".tkc"


class CorruptEntry(Exception):
    """A cache entry that fails its checks (truncated, modified, other format)."""


# ---------------------------------------------------------------------------
# entry encoding


def encode_entry(blobs):
    """bytes of an entry holding `blobs` ({name: bytes | str})."""
    names = sorted(blobs)
    data = []
    for n in names:
        v = blobs[n]
        if isinstance(v, str):
            v = v.encode("utf-8")
        if not isinstance(v, (bytes, bytearray)):
            raise TypeError(f"cache blob {n!r} must be bytes or str, got {type(v).__name__}")
        data.append(bytes(v))
    index = json.dumps([[n, len(d)] for n, d in zip(names, data)]).encode("utf-8")
    payload = struct.pack("<I", len(index)) + index + b"".join(data)
    return _HEADER.pack(MAGIC, FORMAT_VERSION, len(payload),
                        hashlib.sha256(payload).digest()) + payload


def decode_entry(raw):
    """{name: bytes} of an entry; CorruptEntry when any check fails."""
    if len(raw) < _HEADER.size:
        raise CorruptEntry(f"truncated header ({len(raw)} bytes)")
    magic, fmt, size, digest = _HEADER.unpack_from(raw, 0)
    if magic != MAGIC:
        raise CorruptEntry("not a tritium cache entry (bad magic)")
    if fmt != FORMAT_VERSION:
        raise CorruptEntry(f"cache format {fmt}, expected {FORMAT_VERSION}")
    payload = raw[_HEADER.size:]
    if len(payload) != size:
        raise CorruptEntry(f"payload of {len(payload)} bytes, header says {size}")
    if hashlib.sha256(payload).digest() != digest:
        raise CorruptEntry("checksum mismatch")
    try:
        (n,) = struct.unpack_from("<I", payload, 0)
        index = json.loads(payload[4:4 + n].decode("utf-8"))
        out, pos = {}, 4 + n
        for name, length in index:
            out[name] = payload[pos:pos + length]
            pos += length
    except (ValueError, struct.error, TypeError) as e:
        raise CorruptEntry(f"bad index: {e}") from None
    if pos != len(payload):
        raise CorruptEntry("index does not cover the payload")
    return out


# ---------------------------------------------------------------------------
# the cache directory


def default_cache_dir():
    d = os.environ.get("TRITIUM_CACHE_DIR")
    if d:
        return os.path.abspath(os.path.expanduser(d))
    return os.path.join(os.path.expanduser("~"), ".cache", "tritium")


def cache_disabled():
    return os.environ.get("TRITIUM_CACHE_DISABLE", "") not in ("", "0")


def _makedirs_private(path):
    """Creates path (and missing parents) with mode 0700."""
    if os.path.isdir(path):
        return
    parent = os.path.dirname(path)
    if parent and parent != path:
        _makedirs_private(parent)
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        return
    os.chmod(path, 0o700)  # whatever the umask said


def _unlink_if_same(path, st):
    """Deletes the corrupt entry at path -- unless another process has
    replaced it (os.replace) since it was read: that file is a new, likely
    valid entry, and deleting it would throw away that process's work.
    (A replace between the check and the unlink can still lose an entry; the
    cost is one more miss, never a wrong load.)"""
    try:
        now = os.stat(path)
    except OSError:
        return
    if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
        return
    try:
        os.unlink(path)
    except OSError:
        pass


class KernelCache:
    """get(key) -> {name: bytes} | None; put(key, {name: bytes | str})."""

    def __init__(self, root=None):
        self.root = os.path.abspath(root) if root else default_cache_dir()
        self.hits = 0
        self.misses = 0
        self.corrupt = 0

    def path_for(self, key):
        if not key or any(c not in "0123456789abcdef" for c in key):
            raise ValueError(f"cache keys are lowercase hex digests, got {key!r}")
        return os.path.join(self.root, key[:2], key + _SUFFIX)

    def get(self, key):
        path = self.path_for(key)
        try:
            with open(path, "rb") as f:
                st = os.fstat(f.fileno())
                raw = f.read()
        except FileNotFoundError:
            self.misses += 1
            return None
        except OSError:
            self.misses += 1
            return None
        try:
            blobs = decode_entry(raw)
        except CorruptEntry:
            self.corrupt += 1
            self.misses += 1
            _unlink_if_same(path, st)
            return None
        self.hits += 1
        return blobs

    def put(self, key, blobs):
        """Writes the entry atomically; returns its path, or None when it
        cannot be written (an unwritable directory, a full disk): the compile
        that produced it still succeeds, the cache only misses next time."""
        path = self.path_for(key)
        data = encode_entry(blobs)
        d = os.path.dirname(path)
        try:
            _makedirs_private(d)
            fd, tmp = tempfile.mkstemp(prefix=".tmp-" + key[:16] + "-", dir=d)
        except OSError:
            return None
        try:
            # No fsync: it cost a few ms of every cold compile (the wait for the disk), and an
            # entry that a crash leaves short or empty fails its checksum on read, which makes
            # it a miss (deleted, recompiled), never a wrong load.
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, path)  # atomic: readers see the old or the new file
        except BaseException as e:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            if isinstance(e, OSError):
                warnings.warn(f"tritium: could not write cache entry {path}: {e}")
                return None
            raise
        return path


_default = None


def default_cache():
    """The process's KernelCache for the current TRITIUM_CACHE_DIR (None when
    the cache is disabled)."""
    global _default
    if cache_disabled():
        return None
    root = default_cache_dir()
    if _default is None or _default.root != root:
        _default = KernelCache(root)
    return _default


# ---------------------------------------------------------------------------
# keys

_compiler_version = None


def compiler_version():
    """A fingerprint of the `_C` extension and tritium's Python sources (the
    code generator is Python): any rebuild or edit changes every key.

    Computed once per process from each file's path, size and modification
    time (nanoseconds), not its bytes: hashing the 2.5 MB extension cost
    5-15 ms of every process's first compile. A rebuild or an edit always
    writes a new modification time; an install elsewhere gives new keys
    (a cold cache, never a wrong entry)."""
    global _compiler_version
    if _compiler_version is None:
        h = hashlib.sha256(f"format={FORMAT_VERSION}".encode())
        pkg = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        files = []
        for dirpath, dirnames, filenames in os.walk(pkg):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
            for fn in sorted(filenames):
                if fn.endswith(".py") or (fn.startswith("_C") and fn.endswith((".so", ".pyd"))):
                    files.append(os.path.join(dirpath, fn))
        for path in files:
            st = os.stat(path)
            h.update(f"{os.path.relpath(path, pkg)}:{st.st_size}:{st.st_mtime_ns}\n".encode())
        _compiler_version = h.hexdigest()
    return _compiler_version


def _is_jit(obj):
    return getattr(obj, "__tritium_jit__", False)


def _source_of(fn):
    try:
        return textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError):
        # No source (e.g. defined in a REPL): the bytecode still identifies it.
        code = getattr(fn, "__code__", None)
        return repr(code.co_code) + repr(code.co_consts) if code else repr(fn)


def _constant_repr(v):
    """A stable text for a global a kernel reads at compile time, or None when
    the value is not a compile-time constant we can fingerprint."""
    cls = type(v).__name__
    if v is None or isinstance(v, (bool, int, float, str)):
        return f"{cls}:{v!r}"
    if cls == "constexpr" and hasattr(v, "value"):
        inner = _constant_repr(v.value)
        return None if inner is None else "constexpr:" + inner
    if cls in ("dtype", "pointer_type"):
        return f"{cls}:{v}"
    if isinstance(v, tuple):
        parts = [_constant_repr(x) for x in v]
        return None if None in parts else "tuple:(" + ",".join(parts) + ")"
    return None


def _name_chains(tree):
    """The distinct name chains the function's body mentions: ("x",) for a
    name, ("mod", "helper") for `mod.helper` (and its prefixes)."""

    def chain(node):
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name):
            parts.append(node.id)
            return tuple(reversed(parts))
        return None

    out = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.Name, ast.Attribute)):
            parts = chain(node)
            if parts:
                out.setdefault(parts, None)
    return tuple(out)


def _referenced(fn, chains):
    """(name, value) of the globals and closure variables of `chains` (see
    _name_chains), following attribute chains (`mod.helper`) through modules.
    Read at every call: a global may be rebound between two compiles."""
    env = getattr(fn, "__globals__", {})
    closure = {}
    if getattr(fn, "__closure__", None):
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__):
            try:
                closure[name] = cell.cell_contents
            except ValueError:
                pass
    out = {}
    for parts in chains:
        head = parts[0]
        if head in closure:
            v = closure[head]
        elif head in env:
            v = env[head]
        else:
            continue
        out.setdefault(head, v)
        path = head
        for attr in parts[1:]:
            if not isinstance(v, types.ModuleType):
                break
            v = getattr(v, attr, None)
            path += "." + attr
            out.setdefault(path, v)
    return out


# Python function -> (source text, name chains or None when the text does not parse): what
# source_fingerprint reads of a function, once per function and process (reading and
# tokenizing the source of a kernel and of each of its callees took most of a cold compile's
# cache lookup, for every compile of Inductor's kernels). Values are looked up per call.
_fn_sources = weakref.WeakKeyDictionary()


def _function_source(f, fn):
    """(text, chains) of the Python function `fn` of @jit function `f`: the text the code
    generator parsed (f.parse(), which it keeps) where there is one, else the source read
    here (or the bytecode, without a source)."""
    # A JITFunction whose text was replaced (_unsafe_update_src) shares `fn` with others:
    # its text is its own, never the per-function memo's.
    own_text = getattr(f, "__dict__", {}).get("_src_override") is not None
    if not own_text:
        try:
            return _fn_sources[fn]
        except (KeyError, TypeError):
            pass
    text = tree = None
    parse = getattr(f, "parse", None) if f is not fn else None
    if parse is not None:
        try:
            parsed = parse()
            text, tree = parsed.text, parsed.fdef
        except Exception:  # noqa: BLE001 -- no readable source: the fallback below
            text = tree = None
    if text is None:
        text = _source_of(fn)
        try:
            tree = ast.parse(text)
        except SyntaxError:
            tree = None
    entry = (text, _name_chains(tree) if tree is not None else None)
    if own_text:
        return entry
    try:
        _fn_sources[fn] = entry
    except TypeError:  # not weak-referenceable: not kept
        pass
    return entry


def source_fingerprint(jit_fn):
    """sha256 of the kernel's source, the sources of every @jit function it
    references (recursively) and the global constants they read."""
    seen = {}
    stack = [jit_fn]
    while stack:
        f = stack.pop()
        fn = getattr(f, "fn", f)
        ident = f"{getattr(fn, '__module__', '?')}:{getattr(fn, '__qualname__', repr(fn))}"
        if ident in seen:
            continue
        src, chains = _function_source(f, fn)
        parts = [src, f"version={getattr(f, 'version', None)!r}",
                 f"noinline={getattr(f, 'noinline', False)!r}"]
        if chains is not None:
            for name, v in sorted(_referenced(fn, chains).items(), key=lambda kv: kv[0]):
                if _is_jit(v):
                    stack.append(v)
                    parts.append(f"jit {name}")
                    continue
                c = _constant_repr(v)
                if c is not None:
                    parts.append(f"const {name}={c}")
        # Keyed by what the code is, not where it lives: the same source in
        # another module compiles to the same thing.
        seen[ident] = getattr(fn, "__qualname__", "?") + "\n" + "\n".join(parts)
    h = hashlib.sha256()
    for text in sorted(seen.values()):
        h.update(text.encode())
        h.update(b"\0")
    return h.hexdigest()


def _spec_text(spec):
    """A stable text for a specialisation key; @jit functions passed as
    constexprs contribute their source fingerprint."""
    if _is_jit(spec):
        return "jit:" + source_fingerprint(spec)
    if isinstance(spec, (tuple, list)):
        return "(" + ",".join(_spec_text(x) for x in spec) + ")"
    if isinstance(spec, dict):
        return "{" + ",".join(f"{_spec_text(k)}:{_spec_text(v)}"
                              for k, v in sorted(spec.items(), key=lambda kv: repr(kv[0]))) + "}"
    return repr(spec)


def make_key(jit_fn, specialization, options, extra=""):
    """The cache key (hex sha256) of one compilation. options: a dict
    (num_warps, num_stages, target, ...)."""
    h = hashlib.sha256()
    for part in (f"tritium-cache-format={FORMAT_VERSION}",
                 "compiler=" + compiler_version(),
                 "source=" + source_fingerprint(jit_fn),
                 "spec=" + _spec_text(specialization),
                 "options=" + json.dumps(options, sort_keys=True, default=str),
                 "extra=" + extra,
                 f"python={sys.version_info[:2]}"):
        h.update(part.encode("utf-8"))
        h.update(b"\0")
    return h.hexdigest()
