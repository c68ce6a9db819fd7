"""Pickling a QuantizedTensor and a minifloat.torch.Linear (copy.deepcopy, torch.save / torch.load, pickle): the
parts come back byte for byte, the copy computes what the original computes, and a damaged state is an error naming
what does not fit, never a tensor whose codes and scales disagree with its scheme."""
import copy
import io
import pickle

import numpy as np
import pytest
import torch

import minifloat
import minifloat.torch as mt

CASES = [
    ("mxfp4", {}), ("mxfp4", {"rule": "rceil"}), ("mxfp4", {"layout": "ggml"}), ("mxfp4", {"layout": "unpacked"}),
    ("nvfp4", {}), ("nvfp4-ue5m3", {}), ("mxfp8", {}), ("mxfp6-e3m2", {}), ("fp8-128x128", {}),
    ("e4m3-1x128", {"profile": "deepseek"}), ("mxfp4", {"profile": "torchao"}), ("mxfp4", {"rotate": 32}),
]


def _same(a, b):
    for attr in ("shape", "scheme", "rule", "profile", "layout", "rotate", "block", "nbytes", "tensor_scale"):
        assert getattr(a, attr) == getattr(b, attr), attr
    assert np.array_equal(a.codes, b.codes) and a.codes.dtype == b.codes.dtype
    assert np.array_equal(a.scales, b.scales) and a.scales.dtype == b.scales.dtype
    assert np.array_equal(a.dequantize(), b.dequantize(), equal_nan=True)


@pytest.mark.parametrize("scheme,kw", CASES)
def test_quantized_tensor_round_trips(scheme, kw):
    x = np.random.default_rng(7).standard_normal((128, 256)).astype(np.float32) * 3
    x[5, :32] = 0  # an all-zero block: its scale code at the rule's floor
    q = minifloat.quantize(x, scheme, **kw)
    _same(q, pickle.loads(pickle.dumps(q)))
    _same(q, copy.deepcopy(q))
    c = copy.deepcopy(q)
    c.codes[...] = 0  # a deep copy owns its bytes
    assert np.array_equal(q.codes, minifloat.quantize(x, scheme, **kw).codes)


def test_act_quant_output_round_trips():
    x = np.random.default_rng(1).standard_normal((4, 384)).astype(np.float32)
    a = minifloat.act_quant(x)
    _same(a, pickle.loads(pickle.dumps(a)))


def _state(q):
    return list(q._q.__getstate__())


def _restore(q, state):
    t = type(q._q).__new__(type(q._q))
    t.__setstate__(tuple(state))
    return t


@pytest.mark.parametrize("field,value,message", [
    (6, lambda s: s[:-1], "codes hold 127 bytes; shape \\[4, 64\\] in mxfp4 \\(packed\\) needs 128"),
    (7, lambda s: s + b"\0", "scales"),
    (8, lambda s: [4, 3], "scales of shape \\[4, 3\\]"),
    (1, lambda s: "nosuch", "unknown scheme 'nosuch'"),
    (2, lambda s: "nosuch", "rule"),
    (4, lambda s: "nosuch", "layout"),
    (0, lambda s: [4, 65], "codes"),
])
def test_damaged_state_is_a_named_error(field, value, message):
    q = minifloat.quantize(np.random.default_rng(2).standard_normal((4, 64)).astype(np.float32), "mxfp4")
    state = _state(q)
    state[field] = value(state[field])
    with pytest.raises(ValueError, match=message):
        _restore(q, state)


@pytest.mark.parametrize("scheme", ["mxfp4", "nvfp4", "fp8-128x128"])
def test_linear_copies_compute_as_the_original(scheme):
    torch.manual_seed(0)
    w, b = torch.randn(256, 256), torch.randn(256)
    lin = mt.Linear(w, b, scheme=scheme, out_dtype=torch.bfloat16, reuse_output=True)
    x = torch.randn(3, 256)
    want = lin(x).clone()  # the original, after a call: its per-shape buffers exist and are not carried over
    product = minifloat.linear(x, lin.weight_q)  # the core call, and the bias added once, rounded to bf16 as Linear does
    assert torch.equal(want, (product + b.to(torch.bfloat16).float()).to(torch.bfloat16))
    deep = copy.deepcopy(lin)
    assert deep.weight_q is not lin.weight_q and deep._buffers_by_lead == {}
    buf = io.BytesIO()
    torch.save(lin, buf)
    buf.seek(0)
    loaded = torch.load(buf, weights_only=False)
    for other in (deep, loaded):
        assert torch.equal(other(x), want)
        assert torch.equal(other(x[:1]), lin(x[:1]))
    deep.bias = None  # the copy's bias is its own: the original still adds its bias
    assert torch.equal(lin(x), want) and not torch.equal(deep(x), want)
