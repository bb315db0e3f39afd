"""Load verified PyTorch archives (TorchScript, torch.export) and convert them to ONNX.

Each loader first verifies the archive statically (infaas/runtimes/torch_archives.py, whose docstring says
what torch runs on load and why each check is there). A loaded TorchScript module is then checked again
before anything runs: no file-touching operator, interface or C++ class call in any graph, since
TorchScript may call any registered operator.
"""

from __future__ import annotations

import io
import warnings
from typing import Any

import onnx
import torch

from infaas.core.errors import InvalidModel
from infaas.runtimes.torch_archives import ModelFormat, scan_archive, sniff_format

# The registered operators that touch the filesystem, as graph node kinds (infaas/runtimes/torch_archives.py
# lists them by name for exported graphs).
_FORBIDDEN_KINDS = {"aten::save", "aten::from_file", "debugprims::load_tensor"}


def load_torchscript(data: bytes) -> torch.jit.ScriptModule:
    if sniff_format(data) is not ModelFormat.TORCHSCRIPT:
        raise InvalidModel("upload is not a TorchScript archive")
    scan_archive(data, ModelFormat.TORCHSCRIPT)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            module = torch.jit.load(io.BytesIO(data), map_location="cpu")  # type: ignore[no-untyped-call]
    except Exception as exc:
        raise InvalidModel(f"TorchScript archive does not load: {exc}") from exc
    if not isinstance(module, torch.jit.ScriptModule):
        raise InvalidModel("TorchScript archive does not hold a module")
    # Nothing has run yet (no __setstate__); refuse before forward ever can.
    if problems := _script_problems(module):
        raise InvalidModel(
            f"TorchScript module uses refused operators or types: {', '.join(sorted(problems))}"
        )
    return module.eval()


def load_exported(data: bytes) -> torch.export.ExportedProgram:
    if sniff_format(data) is not ModelFormat.TORCH_EXPORT:
        raise InvalidModel("upload is not a torch.export archive")
    scan_archive(data, ModelFormat.TORCH_EXPORT)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return torch.export.load(io.BytesIO(data))
    except Exception as exc:
        raise InvalidModel(f"torch.export archive does not load: {exc}") from exc


def static_batch(program: torch.export.ExportedProgram) -> int | None:
    """The batch size `program` fixes (its first input exported without a dynamic dim 0, as
    `torch.export.export(model, (example,))` does), or None when that dimension is dynamic."""
    first = next(iter(program.graph_signature.user_inputs), None)
    for node in program.graph.nodes:
        if node.op == "placeholder" and node.name == first:
            shape: tuple[Any, ...] = tuple(getattr(node.meta.get("val"), "shape", ()))
            return shape[0] if shape and isinstance(shape[0], int) else None
    return None


def to_onnx(
    module_or_program: torch.jit.ScriptModule | torch.export.ExportedProgram,
    *,
    input_names: list[str],
    example_inputs: tuple[torch.Tensor, ...],
    output_names: list[str] | None = None,
    dynamic_batch: bool = True,
) -> bytes:
    """ONNX with dim 0 of every input and output dynamic; InvalidModel says why when that is impossible.
    `dynamic_batch=False`: the program's own shapes, a batch it fixes included (the registry then makes
    that batch dynamic where the graph allows, `services/registry/intake/batch_axis.py`)."""
    if len(input_names) != len(example_inputs):
        raise ValueError("one input name per example input")
    names: dict[str, Any] = {"input_names": input_names, "output_names": output_names}
    try:
        with warnings.catch_warnings():  # both exporters warn (deprecation, missing torchvision, ...)
            warnings.simplefilter("ignore")
            if isinstance(module_or_program, torch.export.ExportedProgram):
                # The dynamo exporter keeps the program's own shapes: its batch must be a torch.export.Dim.
                program = torch.onnx.export(module_or_program, example_inputs, dynamo=True, **names)
                if program is None:
                    raise RuntimeError("exporter returned no program")
                proto = program.model_proto
            else:  # TorchScript: only the legacy exporter takes it; dynamic_axes names dim 0
                axes = {n: {0: "batch"} for n in input_names + (output_names or [])}
                buf = io.BytesIO()
                torch.onnx.export(
                    module_or_program,
                    example_inputs,
                    buf,  # type: ignore[arg-type]  # the legacy exporter does write to file objects
                    dynamic_axes=axes,
                    dynamo=False,
                    **names,
                )
                proto = onnx.load_model_from_string(buf.getvalue())
        onnx.checker.check_model(proto)
    except Exception as exc:
        raise InvalidModel(f"model cannot be converted to ONNX: {exc}") from exc
    for value in [*proto.graph.input, *proto.graph.output] if dynamic_batch else []:
        dims = value.type.tensor_type.shape.dim
        if not dims or not dims[0].dim_param:
            hint = "export the program with a torch.export.Dim on dim 0"
            raise InvalidModel(
                f"ONNX {value.name!r} has no dynamic batch dimension ({hint})", tensor=value.name
            )
    return bytes(proto.SerializeToString())


def _script_problems(module: torch.jit.ScriptModule) -> set[str]:
    """Refused operators and types in every method and hook: calls inlined, fork subgraphs included.

    Interface-typed values are refused because calls through them cannot be inlined (the implementation
    is picked at run time), so this walk would not see that code; custom C++ classes run native methods.
    """
    graphs: list[torch._C.Graph] = []
    for sub in module.modules():
        c = getattr(sub, "_c", None)
        if isinstance(c, torch._C.ScriptModule):
            functions: list[Any] = [c._get_method(n) for n in c._method_names()]
            functions += [*c._get_forward_hooks(), *c._get_forward_pre_hooks()]  # type: ignore[attr-defined]
            graphs += [fn.graph for fn in functions]
    problems: set[str] = set()
    while graphs:
        graph = graphs.pop().copy()
        torch._C._jit_pass_inline(graph)
        values, blocks = list(graph.inputs()), [graph.block()]
        while blocks:
            for node in blocks.pop().nodes():
                if node.kind() in _FORBIDDEN_KINDS:
                    problems.add(node.kind())
                values += node.outputs()
                blocks += node.blocks()
                # e.g. prim::fork bodies, which inlining does not enter
                graphs += [node.g(a) for a in node.attributeNames() if node.kindOf(a) == "g"]
        problems |= {str(v.type()) for v in values if v.type().kind() == "InterfaceType"}
        problems |= {str(v.type()) for v in values if "torch.classes." in str(v.type())}
    return problems
