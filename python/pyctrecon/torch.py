"""The projector pair as differentiable PyTorch operations (docs/python.md,
"Operators"): ``ProjectorFunction`` (a ``torch.autograd.Function``: forward
A x, backward A^T g; with ``adjoint=True`` the other way round),
``ProjectorModule`` (A) and ``BackprojectorModule`` (A^T) as
``torch.nn.Module`` layers, and the functions ``project`` / ``backproject``.

Tensors in, tensors out, of the input's dtype and device. CPU tensors are
passed to the library as numpy views of their memory (float32 C-contiguous:
no copy; the result is written into a new tensor in place). CUDA tensors go
to the library's device entry points through DLPack, without a copy, and
need a Projector on a CUDA context. The library computes in float32: other
floating dtypes (float64, float16, bfloat16) are converted to float32 and the
result back to the input's dtype. Leading batch dimensions are allowed:
``(*batch, *projector.volume_shape)`` gives ``(*batch,
*projector.projection_shape)``.

The gradient of A is A^T only with pair "matched" (the exact adjoint); with
pair "fast" backward uses the unmatched FDK backprojector, an approximate
gradient.

Importing this module needs PyTorch (``pip install torch``); ``import
pyctrecon`` alone does not import it."""
from __future__ import annotations

from typing import Any, Tuple

try:
    import torch
except ImportError:
    raise ImportError("pyctrecon.torch needs PyTorch: pip install torch") from None

from .iterative import Projector

__all__ = ["ProjectorFunction", "ProjectorModule", "BackprojectorModule", "project",
           "backproject"]


class _DLPackView:
    """A CUDA tensor seen by the package's GPU path through DLPack alone
    (``__dlpack__`` / ``__dlpack_device__``): the library receives the
    tensor's own device pointer."""

    def __init__(self, t: "torch.Tensor"):
        self.t = t

    def __dlpack__(self, stream: Any = None) -> Any:
        return self.t.__dlpack__()

    def __dlpack_device__(self) -> Tuple[int, int]:
        return self.t.__dlpack_device__()


def _shapes(projector: Projector, adjoint: bool) -> Tuple[Tuple[int, ...], Tuple[int, ...]]:
    v, p = tuple(projector.volume_shape), tuple(projector.projection_shape)
    return (p, v) if adjoint else (v, p)


def _apply(projector: Projector, adjoint: bool, x: "torch.Tensor") -> "torch.Tensor":
    """A x (A^T x with adjoint) of a tensor, as a new tensor of x's dtype and
    device (no autograd: the Function records the graph)."""
    name = "projections" if adjoint else "volume"
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, not {type(x).__name__}")
    if not x.is_floating_point():
        raise TypeError(f"{name} has dtype {x.dtype}: expected a floating-point tensor")
    in_shape, out_shape = _shapes(projector, adjoint)
    k = len(in_shape)
    if x.dim() < k or tuple(x.shape[x.dim() - k:]) != in_shape:
        raise ValueError(f"{name} has shape {tuple(x.shape)}: expected {in_shape} "
                         f"(or (*batch, {', '.join(map(str, in_shape))}))")
    if x.device.type not in ("cpu", "cuda"):
        raise TypeError(f"{name} is on device {x.device}: expected a CPU or CUDA tensor")
    batch = tuple(x.shape[:x.dim() - k])
    # float32 C-contiguous: x's own memory (no copy); anything else one conversion
    xs = x.detach().to(torch.float32).contiguous().reshape((-1,) + in_shape)
    out = torch.empty((xs.shape[0],) + out_shape, dtype=torch.float32, device=x.device)
    fn = projector.adjoint if adjoint else projector.forward
    for i in range(xs.shape[0]):
        if x.device.type == "cuda":
            fn(_DLPackView(xs[i]), out=_DLPackView(out[i]), progress=False)
        else:
            fn(xs[i].numpy(), out=out[i].numpy(), progress=False)
    return out.reshape(batch + out_shape).to(x.dtype)


class ProjectorFunction(torch.autograd.Function):
    """``ProjectorFunction.apply(x, projector, adjoint=False)``: A x (forward
    projection of volumes x) whose backward is A^T; with ``adjoint=True``,
    A^T x (backprojection of projections x) whose backward is A. The
    backward is itself this Function, so second derivatives work too."""

    @staticmethod
    def forward(ctx: Any, x: "torch.Tensor", projector: Projector,
                adjoint: bool = False) -> "torch.Tensor":
        if not isinstance(projector, Projector):
            raise TypeError(f"projector must be a pyctrecon.Projector, not "
                            f"{type(projector).__name__}")
        ctx.projector, ctx.adjoint = projector, bool(adjoint)
        return _apply(projector, bool(adjoint), x)

    @staticmethod
    def backward(ctx: Any, grad: "torch.Tensor") -> Tuple[Any, None, None]:
        if not ctx.needs_input_grad[0]:
            return None, None, None
        return ProjectorFunction.apply(grad, ctx.projector, not ctx.adjoint), None, None


def project(volume: "torch.Tensor", projector: Projector) -> "torch.Tensor":
    """A volume (differentiable; the gradient is A^T)."""
    return ProjectorFunction.apply(volume, projector, False)


def backproject(projections: "torch.Tensor", projector: Projector) -> "torch.Tensor":
    """A^T projections (differentiable; the gradient is A)."""
    return ProjectorFunction.apply(projections, projector, True)


class ProjectorModule(torch.nn.Module):
    """A layer computing A x for volumes x of shape (*batch,
    *projector.volume_shape); backward A^T. It has no parameters."""

    def __init__(self, projector: Projector):
        super().__init__()
        if not isinstance(projector, Projector):
            raise TypeError(f"projector must be a pyctrecon.Projector, not "
                            f"{type(projector).__name__}")
        self.projector = projector

    def forward(self, volume: "torch.Tensor") -> "torch.Tensor":
        return project(volume, self.projector)

    def extra_repr(self) -> str:
        return (f"volume_shape={tuple(self.projector.volume_shape)}, "
                f"projection_shape={tuple(self.projector.projection_shape)}, "
                f"matched={self.projector.matched}")


class BackprojectorModule(ProjectorModule):
    """A layer computing A^T y for projections y of shape (*batch,
    *projector.projection_shape); backward A."""

    def forward(self, projections: "torch.Tensor") -> "torch.Tensor":
        return backproject(projections, self.projector)
