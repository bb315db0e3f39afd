"""Recognise an untrusted PyTorch upload's format and statically verify its archive (nothing in it is
executed), before infaas/runtimes/pytorch_io.py loads it.

Nothing here unpickles unverified bytes. What torch 2.13 does on load (read in its source, then tested):

* `torch.jit.load` parses pickles with TorchScript's C++ Unpickler (csrc/jit/serialization/unpickler.cpp):
  REDUCE/BUILD only call C++ handlers `readGlobal` registers for fixed names (tensor/storage rebuilders,
  `torch.jit._pickle` helpers, OrderedDict, device); any other global resolves to a TorchScript class
  compiled from the archive's own `code/` (import.cpp). So pickles cannot reach a Python callable. It is
  still unsafe: loading runs that class's TorchScript `__setstate__`, and TorchScript may call any
  registered operator: `torch.save` in `__setstate__` writes an arbitrary file during `torch.jit.load`.
  Hence the pickle allow-list, no `__setstate__` in archive code, and, after loading but before anything
  runs, no file-touching operator (or uninspectable interface / C++ class call) in any graph (that last
  check is pytorch_io's, on the loaded module).
* `torch.export.load` unpickles with `torch.load(weights_only=False)` (use_pickle payloads, and as the
  fallback for sample inputs) and `pickle.loads` (opaque constants), loads AOTInductor shared libraries,
  `sympy.sympify`s every `expr_str` of the program JSON (an `eval`: a crafted archive runs Python), and
  resolves node targets as any attribute path under `torch`/`operator`/`math`. The scan refuses all that
  before `torch.export.load` sees the bytes: what passes is raw tensors plus a graph of aten/prims ops.

Residual risk (operator bugs, resource exhaustion) is why loading belongs in a worker with limits.
"""

from __future__ import annotations

import io
import json
import pickletools
import re
import zipfile
from enum import StrEnum
from typing import Any

import onnx

from infaas.core.errors import InvalidModel


class ModelFormat(StrEnum):
    ONNX = "onnx"
    TORCHSCRIPT = "torchscript"
    TORCH_EXPORT = "torch_export"


MAX_UNCOMPRESSED = 4 * 2**30
MAX_MEMBERS = 10_000
_MAX_PARSED = 256 * 2**20  # a member we read into memory (pickle, JSON, code) is metadata, never this big
_ZIP_MAGIC = b"PK\x03\x04"
_RESAVE = "save the model with torch.jit.save or torch.export.save"

# Exactly what `torch.jit.save`/`torch.export.save` write for ordinary models (tensors, parameters, list
# type tags) and what both TorchScript's C++ unpickler and `torch.load(weights_only=True)` handle natively;
# parameters and devices come from plain `torch.save`. No builtins, no dtype/Size objects: never needed.
_ALLOWED_GLOBALS = {
    ("torch._utils", "_rebuild_tensor_v2"),
    ("torch._utils", "_rebuild_parameter"),
    ("collections", "OrderedDict"),
    ("torch", "device"),
    *(("torch", f"{t}Storage") for t in "Float Double Half BFloat16 Long Int Short Char Byte Bool".split()),
}
# Only meaningful to the TorchScript unpickler, which maps them to C++ handlers.
_JIT_HELPERS = set("build_intlist build_tensorlist build_doublelist build_boollist restore_type_tag".split())
# Opcodes that reach `find_class` other than through a visible module/name pair, or build objects in ways
# torch never writes: refused outright rather than modelled.
_REFUSED_OPCODES = {"INST", "OBJ", "EXT1", "EXT2", "EXT4", "NEWOBJ_EX", "PERSID"}
_STRING_OPS = set("SHORT_BINUNICODE BINUNICODE BINUNICODE8 UNICODE STRING BINSTRING SHORT_BINSTRING".split())
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")

# Registered operators that touch the filesystem (found by listing every JIT schema with a path argument).
_FILE_OPS = {"save", "from_file", "load_tensor"}
_SETSTATE = re.compile(r"\b__setstate__\b")

_OP_TARGET = re.compile(r"torch\.ops\.(?:aten|prims)\.([A-Za-z0-9_]+)\.[A-Za-z0-9_]+\Z")
# Plain Python callables an exported graph may use for shape arithmetic.
_PLAIN_TARGETS = {
    *(f"_operator.{n}" for n in "getitem add sub mul floordiv truediv mod pow neg eq ne lt le gt ge".split()),
    *(f"torch.sym_{n}" for n in "int float max min not".split()),
    *(f"math.{n}" for n in "ceil floor trunc".split()),
}
# `expr_str` is `sympy.srepr` output; only these names (sympy classes, torch's sympy functions, Symbol
# assumptions) may appear, so `sympify` can only construct expressions. No attribute access, no `_`.
_SYM_NAMES = set(
    """
    Symbol Integer Rational Float Add Mul Pow Max Min Mod Abs Eq Ne Lt Le Gt Ge StrictLessThan LessThan
    StrictGreaterThan GreaterThan Equality Unequality And Or Not True False true false oo Infinity
    NegativeInfinity positive negative nonnegative integer real finite precision FloorDiv ModularIndexing
    Where PythonMod CleanDiv CeilToInt FloorToInt CeilDiv LShift RShift PowByNatural FloatPow FloatTrueDiv
    IntTrueDiv IsNonOverlappingAndDenseIndicator TruncToFloat TruncToInt RoundToInt RoundDecimal ToFloat
    Identity""".split()
)
_SYM_TOKEN = re.compile(
    r"\s*(?:(?P<num>\d+(?:\.\d+)?(?:e[-+]?\d+)?)|(?P<name>[A-Za-z][A-Za-z0-9]*)"
    r"|(?P<str>'(?:[A-Za-z][A-Za-z0-9_]*|-?\d+(?:\.\d+)?(?:e[-+]?\d+)?)')|(?P<op>\*\*|//|[-+*/%(),=]))"
)
_SYMBOL_NAME = re.compile(r"[a-z]{1,4}\d+\Z")  # bare shape symbols (s0, u3), never a callable name
_RAW_PREFIXES = ("weight_", "tensor_")  # torch.export's raw (unpickled) weight and constant files


def sniff_format(data: bytes) -> ModelFormat:
    """Tell ONNX protobuf from TorchScript and torch.export zip archives; refuse anything else."""
    if data.startswith(_ZIP_MAGIC):
        names = _open_zip(data, MAX_UNCOMPRESSED).namelist()
        rels = {n.partition("/")[2] for n in names}
        if {n.rsplit("/", 1)[-1] for n in names} & {"serialized_exported_program.json", "archive_format"}:
            return ModelFormat.TORCH_EXPORT
        if any(r.startswith("code/") for r in rels) or {"data.pkl", "constants.pkl"} <= rels:
            return ModelFormat.TORCHSCRIPT
        raise InvalidModel(f"zip upload is neither a TorchScript nor a torch.export archive ({_RESAVE})")
    if data[:1] == b"\x80":
        raise InvalidModel(f"raw pickle files are refused ({_RESAVE})")
    try:
        model = onnx.load_model_from_string(data)
    except Exception as exc:  # protobuf raises DecodeError and friends
        raise InvalidModel("upload is not an ONNX model or a PyTorch archive") from exc
    if model.ir_version <= 0 or not model.HasField("graph") or not model.opset_import:
        raise InvalidModel("upload is not an ONNX model or a PyTorch archive")
    return ModelFormat.ONNX


def scan_archive(data: bytes, fmt: ModelFormat, limit: int = MAX_UNCOMPRESSED) -> None:
    """Statically verify a TorchScript / torch.export archive (nothing in it is executed); see module doc."""
    if fmt is ModelFormat.ONNX:
        return  # protobuf: no code paths to verify here
    zf = _open_zip(data, limit)
    script = fmt is ModelFormat.TORCHSCRIPT
    for info in zf.infolist():
        name, rel = info.filename, info.filename.partition("/")[2]
        if not script:
            _scan_export_member(zf, info, rel, limit)
        elif rel.endswith((".pkl", ".debug_pkl")):
            _scan_pickle(_read(zf, info), name, script=True)
        elif rel.startswith("code/") and rel.endswith(".py"):
            if _SETSTATE.search(_read(zf, info).decode("utf-8", "replace")):
                raise InvalidModel(f"{name}: TorchScript __setstate__ is refused (it would run on load)")


def _open_zip(data: bytes, limit: int) -> zipfile.ZipFile:
    """Open a zip only after bounding it (members, declared sizes) and vetting every name."""
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
        infos = zf.infolist()
    except Exception as exc:  # BadZipFile, ValueError, EOFError, ...
        raise InvalidModel(f"corrupt zip archive: {exc}") from exc
    if len(infos) > MAX_MEMBERS:
        raise InvalidModel(f"archive has {len(infos)} members (limit {MAX_MEMBERS})")
    if sum(i.file_size for i in infos) > limit:
        raise InvalidModel(f"archive expands beyond {limit} bytes", limit=limit)
    seen: set[str] = set()
    for info in infos:
        name = info.filename
        parts = name.split("/")
        if name.startswith("/") or "\\" in name or "\0" in name or ":" in parts[0] or ".." in parts:
            raise InvalidModel(f"archive member name {name!r} is refused (path traversal)")
        if name in seen or info.flag_bits & 0x1:  # duplicates: zipfile and torch's reader may differ
            raise InvalidModel(f"archive member {name!r} is duplicated or encrypted")
        seen.add(name)
        # torch writes everything under one folder; root-level files would reach torch.export.load's
        # legacy fallback, which unpickles with weights_only=False.
        if len(parts) < 2 or parts[0] != infos[0].filename.split("/")[0]:
            raise InvalidModel("archive members must all live under one top-level folder")
    return zf


def _read(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
    if info.file_size > _MAX_PARSED:
        raise InvalidModel(f"archive member {info.filename!r} is too large to verify")
    try:
        return zf.read(info)
    except Exception as exc:  # BadZipFile (CRC), zlib.error, EOFError, unsupported compression...
        raise InvalidModel(f"archive member {info.filename!r} is corrupt: {exc}") from exc


def _scan_pickle(blob: bytes, where: str, *, script: bool) -> None:
    """Walk the opcodes (never executing) and check every global against the allow-list.

    STACK_GLOBAL takes module and name from the stack; they are resolved only when the two latest
    stack-changing opcodes are string pushes or memo gets of strings, else the pickle is refused.
    """
    recent: list[str | None] = []  # values pushed by the latest stack-changing opcodes; None = unknown
    memo: dict[int, str | None] = {}
    try:
        for op, arg, _pos in pickletools.genops(blob):
            kind = op.name
            if kind in _REFUSED_OPCODES:
                raise InvalidModel(f"{where}: pickle opcode {kind} is refused", member=where)
            if kind in ("PROTO", "FRAME", "STOP"):
                continue
            if kind in ("MEMOIZE", "PUT", "BINPUT", "LONG_BINPUT"):
                memo[arg if isinstance(arg, int) else len(memo)] = recent[-1] if recent else None
                continue
            if kind in ("GET", "BINGET", "LONG_BINGET"):
                recent.append(memo.get(arg) if isinstance(arg, int) else None)
                continue
            if kind in _STRING_OPS:
                recent.append(arg if isinstance(arg, str) else None)
                continue
            if kind == "GLOBAL":
                module, _, qual = str(arg).partition(" ")
                _check_global(module, qual, where, script)
            elif kind == "STACK_GLOBAL":
                module_s, qual_s = (recent[-2], recent[-1]) if len(recent) >= 2 else (None, None)
                if module_s is None or qual_s is None:
                    raise InvalidModel(f"{where}: unresolvable STACK_GLOBAL in pickle", member=where)
                _check_global(module_s, qual_s, where, script)
            recent.append(None)
    except InvalidModel:
        raise
    except Exception as exc:  # genops raises ValueError and others on malformed input
        raise InvalidModel(f"{where}: malformed pickle: {exc}", member=where) from exc


def _check_global(module: str, qual: str, where: str, script: bool) -> None:
    if (module, qual) in _ALLOWED_GLOBALS:
        return
    if script and _IDENT.match(qual):
        if module == "torch.jit._pickle" and qual in _JIT_HELPERS:
            return
        # A TorchScript class compiled from the archive's own code/, never a Python object. C++ custom
        # classes (__torch__.torch.classes) would run native __setstate__: refused.
        if f"{module}.".startswith("__torch__.") and not module.startswith("__torch__.torch.classes"):
            return
    raise InvalidModel(f"{where}: infaas refuses pickled object {module}.{qual}", member=where)


def _scan_export_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, rel: str, limit: int) -> None:
    name = info.filename
    if rel == "serialized_exported_program.json":
        raise InvalidModel("legacy torch.export archive (torch < 2.8) is refused: re-save it")
    if rel.startswith("data/aotinductor/") or rel.endswith((".so", ".dll", ".dylib", ".pyd")):
        raise InvalidModel(f"{name}: compiled native code in archives is refused")
    if rel.startswith("models/"):  # torch.export.load parses every file here as a program
        _check_program(_load_json(zf, info), name)
    elif rel.endswith(".pkl"):
        _scan_pickle(_read(zf, info), name, script=False)
    elif rel.endswith(".pt"):
        # Only sample inputs may be a torch.save payload, and only in zip form, whose pickles we verify.
        blob = _read(zf, info)
        if not rel.startswith("data/sample_inputs/") or not blob.startswith(_ZIP_MAGIC):
            raise InvalidModel(f"{name}: pickled payload is refused")
        nested = _open_zip(blob, limit)
        for inner in nested.infolist():
            if inner.filename.partition("/")[2].endswith(".pkl"):  # torch.load unpickles nothing else
                _scan_pickle(_read(nested, inner), f"{name}:{inner.filename}", script=False)
    elif rel.endswith(("_weights_config.json", "_constants_config.json")):
        config = _load_json(zf, info).get("config")
        for fqn, entry in (config if isinstance(config, dict) else {}).items():
            path = str(entry.get("path_name", "")) if isinstance(entry, dict) else ""
            # use_pickle payloads go to torch.load(weights_only=False); custom_obj_/opaque_obj_
            # constants to TorchScript's and Python's unpicklers. Only raw tensor bytes pass.
            if not isinstance(entry, dict) or entry.get("use_pickle") or not path.startswith(_RAW_PREFIXES):
                raise InvalidModel(f"{name}: {fqn!r} is stored as a pickled object, which is refused")


def _load_json(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> Any:
    try:
        doc = json.loads(_read(zf, info))
    except (ValueError, RecursionError) as exc:
        raise InvalidModel(f"{info.filename}: malformed JSON") from exc
    if not isinstance(doc, dict):
        raise InvalidModel(f"{info.filename}: malformed JSON")
    return doc


def _check_program(doc: Any, where: str) -> None:
    """Every symbolic expression must be plain sympy; every node must call an allowed operator."""
    stack = [doc]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            if {"target", "inputs", "outputs"} <= item.keys():
                _check_target(item["target"], where)
            for key, value in item.items():
                if key == "expr_str":
                    _check_sym_expr(value, where)
                elif key == "as_operator":
                    _check_target(value, where)
                stack.append(value)


def _check_target(target: Any, where: str) -> None:
    text = str(target)
    m = _OP_TARGET.match(text)
    if not (text in _PLAIN_TARGETS or (m is not None and m.group(1) not in _FILE_OPS)):
        raise InvalidModel(f"{where}: graph calls refused target {text[:200]!r}", member=where)


def _check_sym_expr(expr: Any, where: str) -> None:
    text = str(expr)
    pos = 0
    while pos < len(text) and len(text) <= 10_000:
        m = _SYM_TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            break
        name = m.group("name")
        if name is not None and name not in _SYM_NAMES and not _SYMBOL_NAME.match(name):
            break
        pos = m.end()
    if pos < len(text.rstrip()):
        raise InvalidModel(f"{where}: symbolic expression {text[:200]!r} is refused", member=where)
