"""TRITIUM_DUMP_DIR: every compile writes its stages there, one folder per kernel compile
(`<kernel>-<n>`): tir-raw.tir (the tile IR as generated from the AST), tir.tir (after the tile
passes), and for the GPU gir.tir (GPU IR after the GPU passes), kernel.ptx, kernel.cubin and
metadata.json. The IR between every two passes: `tritium-opt tir.tir --print-after=all
--emit-ptx` (build/tritium-opt)."""
import itertools
import json
import os

_counter = itertools.count()
_SUFFIX = {"tir-raw": "tir-raw.tir", "tir": "tir.tir", "gir": "gir.tir", "ptx": "kernel.ptx",
           "cubin": "kernel.cubin"}


def dump_dir():
    return os.environ.get("TRITIUM_DUMP_DIR") or None


def dump_stages(name, asm, metadata=None):
    """Writes `asm` (stage -> text or bytes) and metadata under TRITIUM_DUMP_DIR, if set;
    returns the folder (None when dumping is off)."""
    root = dump_dir()
    if root is None:
        return None
    folder = os.path.join(root, f"{name}-{os.getpid()}-{next(_counter)}")
    os.makedirs(folder, exist_ok=True)
    for stage, data in asm.items():
        path = os.path.join(folder, _SUFFIX.get(stage, stage))
        with open(path, "wb" if isinstance(data, (bytes, bytearray)) else "w") as f:
            f.write(data)
    if metadata is not None:
        with open(os.path.join(folder, "metadata.json"), "w") as f:
            json.dump(metadata, f, indent=1, default=str)
    return folder
