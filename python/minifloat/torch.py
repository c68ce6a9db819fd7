"""minifloat inside torch models (inference only): `quantize_model` swaps each nn.Linear a recipe gives a scheme for a
`Linear` that holds minifloat's quantized weight and computes with minifloat.linear (act_quant of the activation to
e4m3 1x128, then fp8_gemm or fp4_gemm (mxfp4 and nvfp4 weights), f32 accumulation); `fake_quantize_model` only
rounds the weights in place (dequantize(quantize(w))), the cheaper proxy that also covers schemes without a GEMM
(mxfp6, ...). docs/models.md."""
from __future__ import annotations

import math
from collections import OrderedDict

import numpy as np
import torch

from . import _core
from ._quantize import QuantizedTensor, fake_quantize, quantize

_ACT_BLOCK = 128  # act_quant's 1x128 blocks: K must be a multiple of this
_BUFFERS_KEPT = 4  # input shapes whose buffers a Linear keeps (prefill and decode, batch sizes)
# Schemes tried, in this order, when suggesting one whose blocks fit a shape.
_BIAS_GONE = object()  # Linear.forward: the bias buffer replaced by a Parameter of that name
_SUGGEST = ("mxfp4", "mxfp8", "nvfp4", "fp8-1x128", "fp8-128x128", "fp8-32x32")


class RecipeMatchError(ValueError):
    """A recipe that gives no nn.Linear of the model a scheme."""


class ShapeError(ValueError):
    """A Linear whose weight a scheme cannot block (without pad)."""


class NoGemmError(ValueError):
    """A scheme linear() has no GEMM for (mxfp6, mxfp8-e5m2, ...): fake_quantize_model covers it."""


def recipe_targets(recipe: str, names: list) -> tuple:
    """(recipe name, profile, [target per name]) for weights called `names` (floating 2-D tensors): a scheme name,
    or "bf16", "f32", "keep". recipe: a built-in name (deepseek-v4, fp8-block, mxfp8, mxfp4, nvfp4, ...) or a JSON
    file (docs/checkpoints.md#recipes). ValueError naming the recipe when it is unknown."""
    if not isinstance(recipe, str):
        raise TypeError(f"recipe: a recipe name or JSON file path (str) is expected, not {type(recipe).__name__}")
    name, profile, targets = _core.recipe_targets(recipe, list(names))
    return name, profile, list(targets)


def _has_gemm(scheme: str, profile: str) -> bool:
    """Whether linear() has a GEMM for the scheme: e4m3 weights with 1x128 / 128x128 / 32x32 blocks or f32 scales
    (fp8_gemm), e2m1 1x32 with ue8m0 scales or nvfp4 (fp4_gemm). Tried on a zero weight: the core is the judge."""
    try:
        w = quantize(np.zeros((32, _ACT_BLOCK), np.float32), scheme, profile=profile, pad=True)
        _core.linear_quantized(np.zeros((1, _ACT_BLOCK), np.float32), w._q, np.empty((1, 32), np.float32), False, 1)
        return True
    except ValueError:
        return False


def _fitting_schemes(shape: tuple, profile: str) -> list:
    fits = []
    for s in _SUGGEST:
        try:
            quantize(np.zeros(shape, np.float32), s, profile=profile)
            fits.append(s)
        except ValueError:
            pass
    return fits


def _quantize_weight(w: np.ndarray, scheme: str, profile: str, pad: bool, name: str) -> QuantizedTensor:
    try:
        return quantize(w, scheme, profile=profile, pad=pad)
    except ValueError as e:
        fits = _fitting_schemes(w.shape, profile)
        hint = f"; schemes whose blocks fit it: {', '.join(fits)}" if fits else ""
        raise ShapeError(f"{name}: weight {list(w.shape)} cannot be blocked in {scheme}: {e}{hint}") from None


class Linear(torch.nn.Module):
    """y = x W^T (+ bias) with minifloat.linear: x [..., in_features] (float32, bfloat16 or float16, CPU) is
    quantized by act_quant (e4m3 1x128; f32 activation scales when W's scales are f32, else ue8m0), multiplied with
    the quantized W by fp8_gemm or fp4_gemm in f32, and written as `out_dtype` (torch.float32 or torch.bfloat16).
    The bias is added in the same pass (the GEMM's accumulate: one rounded add, bf16 out: the bias rounded to bf16
    first). Inference only: a call that would need gradients raises RuntimeError.

    Each call returns a new tensor. With reuse_output=True the output is instead a buffer the module keeps per input
    shape and reuses (no allocation per call, for decode loops): it is then valid only until the module's next call
    with an input of that shape, so a model that calls one Linear twice and keeps both results must not use it.
    pad: K not a multiple of 128 is zero-padded (weight once, activation per call by the core, in a buffer it keeps),
    which gives the same blocks as partial edge blocks would. weight_only=True: x is not quantized (W4A16 / W8A16,
    minifloat.linear(..., weight_only=True)); float32 and bfloat16 inputs are taken as they are."""

    def __init__(self, weight, bias=None, scheme: str = "fp8-128x128", *, profile: str | None = None,
                 pad: bool = False, out_dtype=torch.float32, threads: int | None = None, name: str = "linear",
                 reuse_output: bool = False, weight_only: bool = False):
        super().__init__()
        w = weight.detach().to(torch.float32).contiguous().numpy() if isinstance(weight, torch.Tensor) \
            else np.ascontiguousarray(weight, dtype=np.float32)
        if w.ndim != 2:
            raise ValueError(f"{name}: a 2-D weight [out_features, in_features] is expected, not {list(w.shape)}")
        if out_dtype not in (torch.float32, torch.bfloat16):
            raise TypeError(f"{name}: out_dtype must be torch.float32 or torch.bfloat16, not {out_dtype}")
        self.out_features, self.in_features = (int(d) for d in w.shape)
        self.name, self.out_dtype, self.reuse_output = name, out_dtype, bool(reuse_output)
        self.weight_only = bool(weight_only)
        self.threads = 0 if threads is None else int(threads)
        k = self.in_features
        if k % _ACT_BLOCK and not pad:
            raise ShapeError(f"{name}: in_features {k} is not a multiple of 128, the activation block of act_quant "
                             f"(e4m3 1x128): use pad=True (--pad) to zero-pad K to {math.ceil(k / _ACT_BLOCK) * 128}")
        self.k_padded = math.ceil(k / _ACT_BLOCK) * _ACT_BLOCK
        if self.k_padded != k:
            w = np.pad(w, ((0, 0), (0, self.k_padded - k)))
        wq = _quantize_weight(w, scheme, profile, pad, name)
        if not _has_gemm(wq.scheme, wq.profile):
            raise NoGemmError(f"{name}: minifloat has no GEMM for {scheme} weights (fp8_gemm takes e4m3 with 1x128, "
                             "128x128, 32x32 blocks or f32 scales; fp4_gemm mxfp4 and nvfp4): use fake_quantize_model")
        self.weight_q = wq
        self.scheme = scheme
        self.register_buffer("bias", self._bias_as_added(bias))
        # The bias tensor the cached buffers view: forward() compares it with the buffer by identity, so that a bias
        # assigned later (lin.bias = t, None, or one .to() / load_state_dict(assign=True) replaced) is the one added.
        self._bias_src = self._buffers["bias"]
        self._buffers_by_lead = OrderedDict()  # input shape -> buffers (_buffers_for)
        self._last = None  # (input shape, its buffers): the shape of the last call
        self._out_bf16 = out_dtype is torch.bfloat16

    def __getstate__(self):
        """Pickled (copy.deepcopy, torch.save) without the per-input-shape buffers, which the next call makes again;
        the quantized weight goes as its codes and scales (QuantizedTensor pickles, checked when read back)."""
        state = self.__dict__.copy()
        state["_buffers_by_lead"] = OrderedDict()
        state["_last"] = None
        return state

    def _bias_as_added(self, bias):
        """bias as forward() adds it: [out_features] in out_dtype, contiguous, on the CPU (None stays None)."""
        if bias is None:
            return None
        b = bias.detach().to(torch.float32) if isinstance(bias, torch.Tensor) else torch.as_tensor(bias)
        if tuple(b.shape) != (self.out_features,):
            raise ValueError(f"{self.name}: bias shape {list(b.shape)} is not [{self.out_features}]")
        return b.to(device="cpu", dtype=self.out_dtype).contiguous()

    def _bias_replaced(self):
        """A new bias tensor in the buffer: checked and converted as the constructor does, the old views dropped."""
        bias = self._parameters.pop("bias") if "bias" in self._parameters else self._buffers.get("bias")
        self._buffers["bias"] = self._bias_as_added(bias)  # a Parameter assigned becomes the buffer again
        self._bias_src = self._buffers["bias"]
        self._buffers_by_lead.clear()
        self._last = None

    @property
    def weight_q(self) -> QuantizedTensor:
        """The quantized weight [out_features, in_features zero-padded to whole 1x128 blocks]."""
        return self._weight_q

    @weight_q.setter
    def weight_q(self, wq: QuantizedTensor):
        # forward() reads the core's tensor from _w, looked up once per weight: a weight assigned later replaces it too
        # (a stale _w would go on multiplying with the old weight).
        if not isinstance(wq, QuantizedTensor):
            raise TypeError(f"{self.name}: weight_q must be a minifloat.QuantizedTensor, not {type(wq).__name__}")
        if wq.shape != (self.out_features, self.k_padded):
            raise ValueError(f"{self.name}: weight_q {list(wq.shape)} is not [{self.out_features}, {self.k_padded}] "
                             "(out_features, in_features padded to whole 1x128 blocks)")
        self._weight_q, self._w = wq, wq._q

    @classmethod
    def from_linear(cls, linear: torch.nn.Linear, scheme: str, **kw) -> "Linear":
        return cls(linear.weight, linear.bias, scheme, **kw)

    @property
    def bits_per_parameter(self) -> float:
        """Bits of the quantized weight (codes, scales, tensor scale) per weight of the unpadded [N, K]."""
        return 8 * self.weight_q.nbytes / (self.out_features * self.in_features)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, scheme={self.scheme}, "
                f"bias={self.bias is not None}, out_dtype={self.out_dtype}")

    def _new_output(self, lead: tuple):
        """(raw out, torch out, its address) [*lead, out_features] in out_dtype (bf16 as uint16 bits in raw)."""
        if self.out_dtype == torch.float32:
            raw = np.empty(lead + (self.out_features,), np.float32)
            out = torch.from_numpy(raw)
        else:
            raw = np.empty(lead + (self.out_features,), np.uint16)
            out = torch.from_numpy(raw.view(np.int16)).view(torch.bfloat16)
        return raw, out, out.data_ptr()

    def _buffers_for(self, shape: torch.Size):
        """(raw out, torch out, out address, rows, raw bias) for inputs of `shape` [*lead, K], made on first use and
        keyed by the input's shape itself (no tuple built per call): the output already has the caller's shape."""
        bufs = self._buffers_by_lead.get(shape)
        if bufs is None:
            lead = tuple(shape[:-1])
            bias_raw = None
            if self.bias is not None:
                bias_raw = (self.bias.numpy() if self.out_dtype == torch.float32
                            else self.bias.view(torch.int16).numpy().view(np.uint16))
            bufs = self._new_output(lead) + (math.prod(lead), bias_raw)
            self._buffers_by_lead[shape] = bufs
            while len(self._buffers_by_lead) > _BUFFERS_KEPT:
                self._buffers_by_lead.popitem(last=False)
        else:
            self._buffers_by_lead.move_to_end(shape)
        return bufs

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.requires_grad:
            if torch.is_grad_enabled():
                raise RuntimeError(f"{self.name}: minifloat.torch.Linear is inference only (no gradients): run the "
                                   "model under torch.inference_mode() or torch.no_grad()")
            x = x.detach()
        if self._buffers.get("bias", _BIAS_GONE) is not self._bias_src:
            self._bias_replaced()
        shape = x.shape
        bufs = self._last
        if bufs is None or bufs[0] != shape:  # a decode loop's calls take the last shape's buffers, looked up once
            if not shape:
                raise ValueError(f"{self.name}: input is a scalar; [..., {self.in_features}] is expected")
            if shape[-1] != self.in_features:
                raise ValueError(f"{self.name}: input [..., {shape[-1]}] does not fit in_features {self.in_features}")
            bufs = self._last = (shape,) + self._buffers_for(shape)
        if not x.is_cpu:
            raise TypeError(f"{self.name}: minifloat runs on the CPU; the input is on {x.device}")
        # f32 as it is, bf16 as its bits: the core widens them and zero-pads K to k_padded, reading x at its address
        # (a numpy view would cost more than the rest of the call's Python); other dtypes (f16) widened by torch.
        dtype = x.dtype
        bf16 = dtype is torch.bfloat16
        if not bf16 and dtype is not torch.float32:
            x = x.to(torch.float32)
        if not x.is_contiguous():
            x = x.contiguous()
        _, raw, out, out_ptr, rows, bias_raw = bufs
        if not self.reuse_output:  # a new output per call, so that a result the caller keeps is never overwritten
            raw, out, out_ptr = self._new_output(tuple(shape[:-1]))
        if bias_raw is not None:
            raw[...] = bias_raw  # the GEMM adds the product to it: bias added after, in one rounding
        _core.linear_quantized_raw(x.data_ptr(), rows, self.in_features, bf16, self._w, out_ptr, self._out_bf16,
                                   bias_raw is not None, self.threads, self.weight_only)
        return out


def _linears(model: torch.nn.Module, recipe: str):
    mods = [(n, m) for n, m in model.named_modules() if isinstance(m, torch.nn.Linear)]
    if not mods:
        raise RecipeMatchError(f"recipe {recipe}: the model has no torch.nn.Linear to quantize")
    name, profile, targets = recipe_targets(recipe, [n + ".weight" for n, _ in mods])
    chosen = [(n, m, t) for (n, m), t in zip(mods, targets) if t not in ("keep", "bf16", "f32")]
    if not chosen:
        raise RecipeMatchError(f"recipe {name}: matches none of the model's {len(mods)} nn.Linear modules "
                               f"(e.g. {mods[0][0]}.weight): nothing would be quantized")
    return profile, chosen


def _set_module(model: torch.nn.Module, name: str, module: torch.nn.Module):
    parent, _, leaf = name.rpartition(".")
    setattr(model.get_submodule(parent) if parent else model, leaf, module)


def quantize_model(model: torch.nn.Module, recipe: str, *, pad: bool = False, out_dtype=torch.float32,
                   threads: int | None = None, reuse_output: bool = False) -> dict:
    """Replace each nn.Linear whose weight (`NAME.weight`) the recipe gives a scheme with a `Linear` in that scheme,
    in place. Targets bf16 / f32 / keep leave the module as it is. Returns {module name: scheme}. Errors (before any
    module is replaced): RecipeMatchError when the recipe matches no Linear; ShapeError naming a module whose shape
    the scheme cannot block (suggesting schemes that fit, or pad=True); ValueError for a scheme with no GEMM.
    reuse_output: as Linear's (only for a model that uses each Linear's result before calling it again)."""
    profile, chosen = _linears(model, recipe)
    new = {n: Linear(m.weight, m.bias, t, profile=profile, pad=pad, out_dtype=out_dtype, threads=threads, name=n,
                     reuse_output=reuse_output)
           for n, m, t in chosen}
    for n, lin in new.items():
        _set_module(model, n, lin)
    return {n: lin.scheme for n, lin in new.items()}


@torch.no_grad()
def fake_quantize_model(model: torch.nn.Module, recipe: str, *, pad: bool = False) -> dict:
    """Round each nn.Linear weight the recipe gives a scheme to dequantize(quantize(w)), in place, in the weight's
    dtype (f32 values of a bf16 weight are rounded to bf16 once more). Returns {module name: scheme}. Errors as
    quantize_model (all checked before any weight changes)."""
    profile, chosen = _linears(model, recipe)
    faked = {}
    for n, m, t in chosen:
        w = m.weight.detach().to(torch.float32).contiguous().numpy()
        try:
            faked[n] = fake_quantize(w, t, profile=profile, pad=pad)
        except ValueError:
            _quantize_weight(w, t, profile, pad, n)  # raises ShapeError naming the module
            raise
    for n, m, t in chosen:
        m.weight.copy_(torch.from_numpy(faked[n]).to(m.weight.dtype))
    return {n: t for n, m, t in chosen}
