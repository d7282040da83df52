"""Florence-2 in plain PyTorch, written so that torch.jit.script accepts it.

Parameter names follow the published checkpoints (shared/florence2/checkpoint-keys-*.txt), so a
Hugging Face state dict loads with load_state_dict(strict=True). The model is split into the three
modules the C++ engine runs:

- VisionEncoder: pixel values -> image features (DaViT, position embeddings, pooling, projection).
- TextEncoder: image features + prompt ids -> encoder hidden states (BART encoder).
- Decoder: BART decoder + LM head. `step` takes the self-attention cache and the precomputed
  cross-attention keys/values as explicit inputs and returns the updated cache; `forward_full`
  recomputes everything from the whole prefix, the way a traced model runs.

Everything here is fp32 and deterministic in eval mode (dropout and drop-path are inference
no-ops, so they are left out).
"""
import math
from typing import List, Optional, Tuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from . import ops


def linear(x: Tensor, weight: Tensor, bias: Optional[Tensor]) -> Tensor:
    """F.linear, except for the one to four rows of a decoding step: there the weights are read
    once, at memory speed, by florence::linear_rows (engine/ops/, AVX-512), where the GEMM that
    F.linear picks for a single row reaches about a third of it and OpenBLAS's matrix-vector
    product, or oneDNN's bfloat16 one, about 0.6-0.9x (single-thread microbenchmark, weights
    in DRAM). bfloat16 weights (the engine's reduced-precision mode) return float32 activations,
    so norms, softmax and residuals keep full precision. int8 weights (per-channel quantized, the
    engine's int8 mode) go to the operator for every row count: it alone reads them."""
    k = x.shape[-1]
    rows = x.numel() // k if k > 0 else 0
    if 0 < rows <= 4 or weight.dtype == torch.qint8:
        if torch.jit.is_scripting():
            return torch.ops.florence.linear_rows(x, weight, bias)
        else:
            return _linear_rows_eager(x, weight, bias)
    if weight.dtype == torch.bfloat16:
        # oneDNN's AVX512-BF16 kernels.
        b16 = bias.to(torch.bfloat16) if bias is not None else None
        return F.linear(x.to(torch.bfloat16), weight, b16).to(torch.float32)
    if rows >= 256 and k >= 512 and weight.shape[0] >= 512:
        # oneDNN's AVX-512 GEMM beats OpenBLAS's on the big products of the vision encoder's
        # later stages and the text encoder (1.4-1.8x measured, weight conversion included);
        # on small ones (stage 0/1) it loses, so they stay with F.linear.
        flat = x.reshape(rows, k).to_mkldnn()
        b = bias if bias is not None else torch.zeros(weight.shape[0])
        out = torch._C._nn.mkldnn_linear(flat, weight.to_mkldnn(), b.to_mkldnn()).to_dense()
        shape = list(x.shape[:-1])
        shape.append(weight.shape[0])
        return out.view(shape)
    return F.linear(x, weight, bias)


def _linear_rows_eager(x: Tensor, weight: Tensor, bias: Optional[Tensor]) -> Tensor:
    """linear() of a few rows outside TorchScript (never scripted): the operator when this
    process loaded it (florence2.ops) and no gradient is wanted, else what it computes, with
    LibTorch's products. Training and evaluation scripts run the model this way."""
    grad = torch.is_grad_enabled() and (x.requires_grad or weight.requires_grad)
    if not grad and ops.loaded():
        return torch.ops.florence.linear_rows(x, weight, bias)
    if weight.dtype == torch.qint8:
        return F.linear(x.to(torch.float32), weight.dequantize(), bias)
    if weight.dtype != torch.float32:
        b = bias.to(weight.dtype) if bias is not None else None
        return F.linear(x.to(weight.dtype), weight, b).to(torch.float32)
    return F.linear(x.to(torch.float32), weight, bias)


def attend(q: Tensor, k: Tensor, v: Tensor, mask: Tensor) -> Tensor:
    """q [B,H,T,d] (already scaled), k/v [B,H,S,d], mask additive and broadcastable to [B,H,T,S]."""
    if q.shape[2] == 1 and q.shape[0] == k.shape[0]:
        # One query per head (a decoding step): florence::attend_one (engine/ops/, AVX-512)
        # reads each head's keys and values once and keeps scores and sums in registers, where
        # the multiply-and-sum below writes and reads back two temporaries the size of the cache
        # (base, one thread: 2-3x faster per call, cached step 13.5 -> 11.9 ms).
        if torch.jit.is_scripting():
            return torch.ops.florence.attend_one(q, k, v, mask)
        grad = torch.is_grad_enabled() and (q.requires_grad or k.requires_grad
                                            or v.requires_grad)
        if not grad and ops.has("attend_one"):
            return torch.ops.florence.attend_one(q, k, v, mask)
        # Without the operator (training, or a process without the library): OpenBLAS would run
        # the batched products as one tiny, separately threaded GEMM per head (about 100 us
        # each, 2.4 ms of a 11.6 ms base step); multiply-and-sum reads the cache at memory speed.
        scores = (k * q).sum(-1).unsqueeze(2) + mask
        probs = scores.softmax(dim=-1)
        return (probs.transpose(-1, -2) * v).sum(-2, keepdim=True)
    # Several queries per head (the text encoder's self-attention, a prompt, the uncached path):
    # florence::attend_many keeps each head's scores in the cache a block of queries at a time,
    # where the products below write three tensors of [B, H, T, S] (16.7 MB each in the base text
    # encoder); float32 only, the operator leaves other dtypes to these products.
    if torch.jit.is_scripting():
        return torch.ops.florence.attend_many(q, k, v, mask)
    grad = torch.is_grad_enabled() and (q.requires_grad or k.requires_grad or v.requires_grad)
    if not grad and ops.has("attend_many"):
        return torch.ops.florence.attend_many(q, k, v, mask)
    scores = torch.matmul(q, k.transpose(-1, -2)) + mask
    return torch.matmul(scores.softmax(dim=-1), v)


def linear_int8(x: Tensor, weight: Tensor, bias: Optional[Tensor]) -> Tensor:
    """An encoder's large product with int8 weights (the engine's int8 mode, which quantizes
    them only in code that has int8_products()): florence::linear_int8, oneDNN's int8 GEMM
    (engine/ops/LinearInt8.cpp). float32 out."""
    if torch.jit.is_scripting():
        return torch.ops.florence.linear_int8(x, weight, bias)
    grad = torch.is_grad_enabled() and x.requires_grad
    if not grad and ops.has("linear_int8"):
        return torch.ops.florence.linear_int8(x, weight, bias)
    return F.linear(x.to(torch.float32), weight.dequantize(), bias)


def linear_int8_gelu(x: Tensor, weight: Tensor, bias: Optional[Tensor]) -> Tensor:
    """GELU(linear_int8(x, weight, bias)), float32: florence::linear_int8_gelu, whose int8 GEMM
    applies GELU as it writes the product instead of making another tensor the hidden layer's
    size (engine/ops/LinearInt8.cpp)."""
    if torch.jit.is_scripting():
        return torch.ops.florence.linear_int8_gelu(x, weight, bias)
    grad = torch.is_grad_enabled() and x.requires_grad
    if not grad and ops.has("linear_int8_gelu"):
        return torch.ops.florence.linear_int8_gelu(x, weight, bias)
    return F.gelu(F.linear(x.to(torch.float32), weight.dequantize(), bias))


def project(x: Tensor, weight: Tensor, bias: Optional[Tensor], low: bool) -> Tensor:
    """An encoder's product: linear(), or with `low` (reduced-precision weights) a bfloat16
    result for the next bfloat16 product: bfloat16 weights multiply bfloat16 activations, int8
    weights go to linear_int8."""
    if weight.dtype == torch.qint8:
        y = linear_int8(x, weight, bias)
        return y.to(torch.bfloat16) if low else y
    if not low:
        return linear(x, weight, bias)
    return F.linear(x, weight, bias.to(torch.bfloat16) if bias is not None else None)


def out_low(weight: Tensor) -> bool:
    """Whether an encoder's output projection returns bfloat16 (with bfloat16 weights; float32
    from int8 ones, which linear_int8 returns): the residual sum reads either."""
    return weight.dtype == torch.bfloat16


def feed_forward(x: Tensor, w1: Tensor, b1: Optional[Tensor], w2: Tensor,
                 b2: Optional[Tensor], encoder: bool = False, low: bool = True) -> Tensor:
    """fc1, GELU, fc2 (the original uses exact GELU in both towers). `low`: an encoder's
    low_activations (below)."""
    k = x.shape[-1]
    rows = x.numel() // k if k > 0 else 0
    if encoder and not low and w1.dtype != torch.float32 and not 0 < rows <= 4:
        # int8 weights with float32 activations: linear_int8 for the int8 products, fc1's with
        # GELU applied as it is written (linear_int8_gelu; a separate GELU took 220 ms of a base
        # vision pass of 1.2 s on two AVX2 cores, the most after the products).
        if w1.dtype == torch.qint8:
            return project(linear_int8_gelu(x, w1, b1), w2, b2, False)
        return project(F.gelu(project(x, w1, b1, False)), w2, b2, False)
    if w1.dtype != torch.float32 and not 0 < rows <= 4 and (encoder or w1.dtype == torch.bfloat16):
        # The hidden layer is four times wider than the input: it stays bfloat16 between the two
        # products instead of going to float32 and back (a decoding step's few rows go through
        # linear(), whose kernels read bfloat16 and int8 weights and keep activations float32;
        # the decoder's int8 weights always do, so its prompt and uncached rows get what its
        # steps get). The output stays bfloat16 too: every caller adds it to the float32
        # residual, and that sum promotes it as it reads it, without a converted copy.
        h = F.gelu(project(x.to(torch.bfloat16), w1, b1, True))
        return project(h, w2, b2, out_low(w2))
    return linear(F.gelu(linear(x, w1, b1)), w2, b2)


# --------------------------------------------------------------------------------------------
# Vision tower (DaViT)
# --------------------------------------------------------------------------------------------

# The encoders' blocks (Mlp, WindowAttention, ChannelAttention, EncoderLayer) have a
# low_activations attribute: with reduced-precision weights they run bfloat16 activations from
# the normalized input to the output projection (oneDNN's bfloat16 batched products). The engine
# clears it where LibTorch sums bfloat16 products in bfloat16 (CPUs without AVX-512), so that
# int8 weights there run with float32 activations and float32 attention: the encoders stay
# float32 except for their int8 products (linear_int8).


def window_attention(qkv: Tensor, heads: int, scale: float) -> Tensor:
    """qkv [windows, n, 3 c]: each window's q, k and v projections side by side; returns
    softmax(scale q k^T) v per window and head, [windows, n, c] with the heads merged. float32:
    florence::attend_windows (engine/ops/), every window and head split over the cores, where the
    batched products below run one small GEMM per window and head in turn (about 12 G
    multiply-adds per second on two AVX2 cores, 400 ms of the base vision encoder)."""
    if qkv.dtype == torch.float32:
        if torch.jit.is_scripting():
            return torch.ops.florence.attend_windows(qkv, heads, scale)
        grad = torch.is_grad_enabled() and qkv.requires_grad
        if not grad and ops.has("attend_windows"):
            return torch.ops.florence.attend_windows(qkv, heads, scale)
    bw, n, c3 = qkv.shape
    c = c3 // 3
    parts = qkv.reshape(bw, n, 3, heads, c // heads).permute(2, 0, 3, 1, 4)
    q, k, v = parts[0], parts[1], parts[2]
    attn = torch.matmul(q * scale, k.transpose(-2, -1)).softmax(dim=-1)
    return torch.matmul(attn, v).transpose(1, 2).reshape(bw, n, c)


def channel_attention(qkv: Tensor, groups: int, scale: float) -> Tensor:
    """qkv [b, n, 3 c]: each position's q, k and v projections side by side; returns [b, n, c],
    per image and group of c / groups channels v softmax(scale q^T k)^T, the attention over
    channels rather than positions. float32: florence::attend_channels (engine/ops/), which reads
    q, k and v in place and writes the groups merged, where the batched products below ran on
    permuted views and the result was copied back (about 90 ms of a base vision pass on two AVX2
    cores; the operator's calls add up to about 25)."""
    if qkv.dtype == torch.float32:
        if torch.jit.is_scripting():
            return torch.ops.florence.attend_channels(qkv, groups, scale)
        grad = torch.is_grad_enabled() and qkv.requires_grad
        if not grad and ops.has("attend_channels"):
            return torch.ops.florence.attend_channels(qkv, groups, scale)
    b, n, c3 = qkv.shape
    c = c3 // 3
    parts = qkv.reshape(b, n, 3, groups, c // groups).permute(2, 0, 3, 1, 4)
    q, k, v = parts[0], parts[1], parts[2]
    q = q * scale
    attn = torch.matmul(q.transpose(-1, -2), k).softmax(dim=-1)
    x = torch.matmul(attn, v.transpose(-1, -2)).transpose(-1, -2)
    return x.transpose(1, 2).reshape(b, n, c)


def conv_tokens(x: Tensor, h: int, w: int, weight: Tensor, bias: Optional[Tensor], stride: int,
                padding: int) -> Tensor:
    """A convolution of channels-last tokens x [B, h*w, C] (the vision encoder's downsampling
    between stages), tokens out, [B, h2*w2, out]. float32: florence::conv_tokens (engine/ops/),
    which on the AVX2 kernel path runs it as its own product over patches gathered from the
    tokens, where oneDNN's AVX2 convolution of a channels-last view reached 11-37 G multiply-adds
    a second on one core at base size (an NCHW copy 25-43); elsewhere the convolution below."""
    if x.dtype == torch.float32:
        if torch.jit.is_scripting():
            return torch.ops.florence.conv_tokens(x, h, w, weight, bias, stride, padding)
        grad = torch.is_grad_enabled() and (x.requires_grad or weight.requires_grad)
        if not grad and ops.has("conv_tokens"):
            return torch.ops.florence.conv_tokens(x, h, w, weight, bias, stride, padding)
    b, n, c = x.shape
    # A channels-last view, no copy: oneDNN's 3x3 stride-2 convolution reads it 2-6x faster than
    # an NCHW copy on AVX-512 (base stage 1, two cores: 14-26 against 77-82 ms in float32, 6.6
    # against 11.4 ms in bfloat16).
    y = F.conv2d(x.reshape(b, h, w, c).permute(0, 3, 1, 2), weight, bias, stride, padding)
    return y.permute(0, 2, 3, 1).reshape(b, -1, y.shape[1])


def residual_dwconv(x: Tensor, h: int, w: int, weight: Tensor, bias: Optional[Tensor]) -> Tensor:
    """x + the 3x3 depthwise convolution of channels-last tokens x [B, h*w, C] (the vision
    blocks' position encoding). float32: florence::residual_dwconv (engine/ops/), one pass over
    the tokens on the AVX2 kernel path, where oneDNN's AVX2 depthwise convolution of the view and
    the addition after it were two; elsewhere the convolution below."""
    if x.dtype == torch.float32:
        if torch.jit.is_scripting():
            return torch.ops.florence.residual_dwconv(x, h, w, weight, bias)
        grad = torch.is_grad_enabled() and (x.requires_grad or weight.requires_grad)
        if not grad and ops.has("residual_dwconv"):
            return torch.ops.florence.residual_dwconv(x, h, w, weight, bias)
    b, n, c = x.shape
    # Tokens [B, H*W, C] are already channels-last: the convolution reads them through a permuted
    # view and writes channels-last, so no layout copy is made either way (2-13x faster than
    # transposing to NCHW and back, measured per stage at base size).
    y = F.conv2d(x.reshape(b, h, w, c).permute(0, 3, 1, 2), weight, bias, 1, 1, 1, c)
    return x + y.permute(0, 2, 3, 1).reshape(b, h * w, c)


class ConvEmbed(nn.Module):
    """Patch embedding; stage 0 normalizes after the conv, later stages before it."""

    def __init__(self, patch_size: int, in_chans: int, embed_dim: int, stride: int, padding: int,
                 pre_norm: bool):
        super().__init__()
        self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=patch_size, stride=stride,
                              padding=padding)
        self.norm = nn.LayerNorm(in_chans if pre_norm else embed_dim)
        self.pre_norm = pre_norm
        self.stride = stride
        self.padding = padding

    def forward(self, x: Tensor, h: int, w: int) -> Tuple[Tensor, int, int]:
        # x: [B, C, H, W] for the image, [B, H*W, C] between stages
        if x.dim() == 3:
            if self.pre_norm:
                x = self.norm(x)
            h2 = (h + 2 * self.padding - self.proj.weight.shape[2]) // self.stride + 1
            w2 = (w + 2 * self.padding - self.proj.weight.shape[3]) // self.stride + 1
            x = conv_tokens(x, h, w, self.proj.weight, self.proj.bias, self.stride, self.padding)
        else:
            x = self.proj(x)
            b, c, h2, w2 = x.shape
            x = x.permute(0, 2, 3, 1).reshape(b, h2 * w2, c)
        if not self.pre_norm:
            x = self.norm(x)
        return x, h2, w2


class DepthWiseConv2d(nn.Module):
    """The position encoding's 3x3 depthwise convolution: holds its parameters (the checkpoints'
    `.fn.dw.weight` and `.bias`); ResidualConv runs it with residual_dwconv()."""

    def __init__(self, dim: int):
        super().__init__()
        self.dw = nn.Conv2d(dim, dim, kernel_size=3, padding=1, groups=dim, stride=1)


class ResidualConv(nn.Module):
    """PreNorm(None, DepthWiseConv2d) of the original: x + dwconv(x)."""

    def __init__(self, dim: int):
        super().__init__()
        self.fn = DepthWiseConv2d(dim)

    def forward(self, x: Tensor, h: int, w: int) -> Tensor:
        return residual_dwconv(x, h, w, self.fn.dw.weight, self.fn.dw.bias)


class Mlp(nn.Module):
    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.net = nn.Sequential()
        self.net.add_module("fc1", nn.Linear(dim, hidden))
        self.net.add_module("act", nn.GELU())
        self.net.add_module("fc2", nn.Linear(hidden, dim))
        self.low_activations = True

    def forward(self, x: Tensor) -> Tensor:
        return feed_forward(x, self.net.fc1.weight, self.net.fc1.bias, self.net.fc2.weight,
                            self.net.fc2.bias, True, self.low_activations)


class ResidualMlp(nn.Module):
    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fn = Mlp(dim, hidden)

    def forward(self, x: Tensor) -> Tensor:
        return x + self.fn(self.norm(x))


class WindowAttention(nn.Module):
    def __init__(self, dim: int, num_heads: int, window_size: int):
        super().__init__()
        self.num_heads = num_heads
        self.window_size = window_size
        self.scale = float((dim // num_heads) ** -0.5)
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)
        self.low_activations = True

    def forward(self, x: Tensor, h: int, w: int) -> Tensor:
        b, n, c = x.shape
        ws = self.window_size
        # Reduced-precision weights (bfloat16, or int8 in the int8 mode): from the normalized
        # input to the output projection everything stays bfloat16, so the per-window products
        # run on oneDNN's bfloat16 batched kernels (3-13x faster here than OpenBLAS's float32
        # GEMM per window and head) and nothing is converted between the products. float32
        # activations go to florence::attend_windows (window_attention()).
        low = self.qkv.weight.dtype != torch.float32 and self.low_activations
        if low:
            x = x.to(torch.bfloat16)
        x = x.view(b, h, w, c)
        pad_r = (ws - w % ws) % ws
        pad_b = (ws - h % ws) % ws
        # The original pads with zeros after the norm and lets the padding take part in attention.
        # constant_pad_nd, not F.pad: PyTorch 2.x scripts F.pad as a Python wrapper function, 1.13
        # as the builtin, and one archive code for both releases keeps one allow-list.
        x = torch.constant_pad_nd(x, [0, 0, 0, pad_r, 0, pad_b], 0.0)
        hp = h + pad_b
        wp = w + pad_r
        x = x.view(b, hp // ws, ws, wp // ws, ws, c).permute(0, 1, 3, 2, 4, 5)
        x = x.reshape(-1, ws * ws, c)
        qkv = project(x, self.qkv.weight, self.qkv.bias, low)
        x = window_attention(qkv, self.num_heads, self.scale)
        x = project(x, self.proj.weight, self.proj.bias, out_low(self.proj.weight))
        x = x.view(b, hp // ws, wp // ws, ws, ws, c).permute(0, 1, 3, 2, 4, 5)
        x = x.reshape(b, hp, wp, c)
        if pad_r > 0 or pad_b > 0:
            x = x[:, :h, :w, :].contiguous()
        # bfloat16 or float32: the residual sum (float32 + bfloat16) promotes it as it reads it.
        return x.reshape(b, h * w, c)


class ResidualWindowAttention(nn.Module):
    def __init__(self, dim: int, num_heads: int, window_size: int):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fn = WindowAttention(dim, num_heads, window_size)

    def forward(self, x: Tensor, h: int, w: int) -> Tensor:
        return x + self.fn(self.norm(x), h, w)


class ChannelAttention(nn.Module):
    def __init__(self, dim: int, groups: int):
        super().__init__()
        self.groups = groups
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)
        self.low_activations = True

    def forward(self, x: Tensor) -> Tensor:
        b, n, c = x.shape
        # Reduced-precision weights: bfloat16 from input to output projection, as WindowAttention.
        low = self.qkv.weight.dtype != torch.float32 and self.low_activations
        if low:
            x = x.to(torch.bfloat16)
        qkv = project(x, self.qkv.weight, self.qkv.bias, low)
        x = channel_attention(qkv, self.groups, float(n) ** -0.5)
        return project(x, self.proj.weight, self.proj.bias, out_low(self.proj.weight))


class ResidualChannelAttention(nn.Module):
    def __init__(self, dim: int, groups: int):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fn = ChannelAttention(dim, groups)

    def forward(self, x: Tensor) -> Tensor:
        return x + self.fn(self.norm(x))


class SpatialBlock(nn.Module):
    def __init__(self, dim: int, num_heads: int, window_size: int, mlp_ratio: float):
        super().__init__()
        self.conv1 = ResidualConv(dim)
        self.window_attn = ResidualWindowAttention(dim, num_heads, window_size)
        self.conv2 = ResidualConv(dim)
        self.ffn = ResidualMlp(dim, int(dim * mlp_ratio))

    def forward(self, x: Tensor, h: int, w: int) -> Tensor:
        x = self.conv1(x, h, w)
        x = self.window_attn(x, h, w)
        x = self.conv2(x, h, w)
        return self.ffn(x)


class ChannelBlock(nn.Module):
    def __init__(self, dim: int, groups: int, mlp_ratio: float):
        super().__init__()
        self.conv1 = ResidualConv(dim)
        self.channel_attn = ResidualChannelAttention(dim, groups)
        self.conv2 = ResidualConv(dim)
        self.ffn = ResidualMlp(dim, int(dim * mlp_ratio))

    def forward(self, x: Tensor, h: int, w: int) -> Tensor:
        x = self.conv1(x, h, w)
        x = self.channel_attn(x)
        x = self.conv2(x, h, w)
        return self.ffn(x)


class DaViTBlock(nn.Module):
    def __init__(self, dim: int, num_heads: int, groups: int, window_size: int, mlp_ratio: float):
        super().__init__()
        self.spatial_block = SpatialBlock(dim, num_heads, window_size, mlp_ratio)
        self.channel_block = ChannelBlock(dim, groups, mlp_ratio)

    def forward(self, x: Tensor, h: int, w: int) -> Tensor:
        return self.channel_block(self.spatial_block(x, h, w), h, w)


class DaViT(nn.Module):
    def __init__(self, vc: dict):
        super().__init__()
        dims = vc["dim_embed"]
        convs = []
        stages = []
        for i in range(len(dims)):
            convs.append(ConvEmbed(vc["patch_size"][i], 3 if i == 0 else dims[i - 1], dims[i],
                                   vc["patch_stride"][i], vc["patch_padding"][i],
                                   vc["patch_prenorm"][i]))
            stages.append(nn.ModuleList([
                DaViTBlock(dims[i], vc["num_heads"][i], vc["num_groups"][i], vc["window_size"],
                           float(vc.get("mlp_ratio", 4.0)))
                for _ in range(vc["depths"][i])]))
        self.convs = nn.ModuleList(convs)
        self.blocks = nn.ModuleList(stages)

    def forward(self, x: Tensor) -> Tensor:
        h = x.shape[2]
        w = x.shape[3]
        for conv, stage in zip(self.convs, self.blocks):
            x, h, w = conv(x, h, w)
            for block in stage:
                x = block(x, h, w)
        return x


class LearnedAbsolutePositionEmbedding2D(nn.Module):
    def __init__(self, embedding_dim: int, num_pos: int):
        super().__init__()
        self.row_embeddings = nn.Embedding(num_pos, embedding_dim // 2)
        self.column_embeddings = nn.Embedding(num_pos, embedding_dim - embedding_dim // 2)

    def forward(self, h: int, w: int) -> Tensor:
        x_emb = self.column_embeddings.weight[:w]
        y_emb = self.row_embeddings.weight[:h]
        return torch.cat([x_emb.unsqueeze(0).expand(h, w, x_emb.shape[1]),
                          y_emb.unsqueeze(1).expand(h, w, y_emb.shape[1])], dim=-1)


class CosineTemporalEmbedding(nn.Module):
    def __init__(self, embed_dim: int, max_seq_len: int):
        super().__init__()
        half = embed_dim // 2
        freq = torch.exp(torch.arange(half).float() * -(math.log(10000) / half))
        angles = torch.arange(max_seq_len).float().unsqueeze(1) * freq.unsqueeze(0)
        table = torch.empty(max_seq_len, embed_dim)
        table[:, 0::2] = torch.sin(angles)
        table[:, 1::2] = torch.cos(angles)
        self.register_buffer("pos_idx_to_embed", table)


class VisionEncoder(nn.Module):
    """pixel_values [B, 3, H, W] -> image features [B, 1 + (H/32)*(W/32), projection_dim]."""

    def __init__(self, config: dict):
        super().__init__()
        vc = config["vision_config"]
        dim = vc["dim_embed"][-1]
        proj_dim = config.get("projection_dim", vc.get("projection_dim"))
        self.vision_tower = DaViT(vc)
        self.image_pos_embed = LearnedAbsolutePositionEmbedding2D(
            dim, vc["image_pos_embed"]["max_pos_embeddings"])
        self.visual_temporal_embed = CosineTemporalEmbedding(
            dim, vc["visual_temporal_embedding"]["max_temporal_embeddings"])
        self.image_projection = nn.Parameter(torch.empty(dim, proj_dim))
        self.image_proj_norm = nn.LayerNorm(proj_dim)

    def forward(self, pixel_values: Tensor) -> Tensor:
        x = self.vision_tower(pixel_values)
        b, n, c = x.shape
        side = int(math.sqrt(n))
        x = x + self.image_pos_embed(side, side).reshape(1, n, c)
        # One frame: the temporal embedding of frame 0 is added to every token.
        x = x + self.visual_temporal_embed.pos_idx_to_embed[0].reshape(1, 1, c)
        # image_feature_source = [spatial_avg_pool, temporal_avg_pool]: the mean token, then the
        # tokens themselves (the temporal mean of one frame).
        x = torch.cat([x.mean(dim=1, keepdim=True), x], dim=1)
        x = torch.matmul(x, self.image_projection)
        return self.image_proj_norm(x)

    @torch.jit.export
    def int8_products(self) -> bool:
        """Present in code that runs int8 weights in this encoder's large products
        (linear_int8): the engine's int8 mode quantizes them only then (packages of an earlier
        exporter keep bfloat16 encoders)."""
        return True


# --------------------------------------------------------------------------------------------
# Language model (BART)
# --------------------------------------------------------------------------------------------


class Attention(nn.Module):
    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.heads = heads
        self.head_dim = dim // heads
        self.scaling = float(self.head_dim ** -0.5)
        self.k_proj = nn.Linear(dim, dim)
        self.v_proj = nn.Linear(dim, dim)
        self.q_proj = nn.Linear(dim, dim)
        self.out_proj = nn.Linear(dim, dim)

    def split(self, x: Tensor) -> Tensor:
        b, t, _ = x.shape
        return x.view(b, t, self.heads, self.head_dim).transpose(1, 2)

    def merge(self, x: Tensor) -> Tensor:
        b, h, t, d = x.shape
        return x.transpose(1, 2).reshape(b, t, h * d)

    def query(self, x: Tensor) -> Tensor:
        return self.split(linear(x, self.q_proj.weight, self.q_proj.bias) * self.scaling)

    def keys_values(self, x: Tensor) -> Tuple[Tensor, Tensor]:
        return (self.split(linear(x, self.k_proj.weight, self.k_proj.bias)),
                self.split(linear(x, self.v_proj.weight, self.v_proj.bias)))

    def output(self, x: Tensor) -> Tensor:
        return linear(self.merge(x), self.out_proj.weight, self.out_proj.bias)


class EncoderLayer(nn.Module):
    def __init__(self, dim: int, heads: int, ffn: int):
        super().__init__()
        self.self_attn = Attention(dim, heads)
        self.self_attn_layer_norm = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, ffn)
        self.fc2 = nn.Linear(ffn, dim)
        self.final_layer_norm = nn.LayerNorm(dim)
        self.low_activations = True

    def forward(self, x: Tensor, mask: Tensor) -> Tensor:
        if self.self_attn.q_proj.weight.dtype == torch.float32:
            k, v = self.self_attn.keys_values(x)
            a = self.self_attn.output(attend(self.self_attn.query(x), k, v, mask))
        elif self.low_activations:
            a = self.attention_low(x, mask)
        else:
            a = self.attention_int8(x, mask)
        x = self.self_attn_layer_norm(x + a)
        return self.final_layer_norm(x + self.ffn(x))

    def attention_low(self, x: Tensor, mask: Tensor) -> Tensor:
        """Self-attention with reduced-precision weights (bfloat16, or int8 in the int8 mode):
        bfloat16 from the input to the output projection, as the vision encoder's attention
        (oneDNN's batched bfloat16 products)."""
        at = self.self_attn
        x = x.to(torch.bfloat16)
        q = at.split(project(x, at.q_proj.weight, at.q_proj.bias, True) * at.scaling)
        k = at.split(project(x, at.k_proj.weight, at.k_proj.bias, True))
        v = at.split(project(x, at.v_proj.weight, at.v_proj.bias, True))
        scores = torch.matmul(q, k.transpose(-1, -2)) + mask.clamp_min(-1e30).to(torch.bfloat16)
        a = at.merge(torch.matmul(scores.softmax(dim=-1), v))
        # bfloat16: the residual sum promotes it (float32 + bfloat16 -> float32) as it reads it.
        return project(a, at.out_proj.weight, at.out_proj.bias, out_low(at.out_proj.weight))

    def attention_int8(self, x: Tensor, mask: Tensor) -> Tensor:
        """Self-attention with int8 weights and float32 activations (low_activations cleared):
        the products on linear_int8, the attention as with float32 weights."""
        at = self.self_attn
        q = at.split(project(x, at.q_proj.weight, at.q_proj.bias, False) * at.scaling)
        k = at.split(project(x, at.k_proj.weight, at.k_proj.bias, False))
        v = at.split(project(x, at.v_proj.weight, at.v_proj.bias, False))
        a = at.merge(attend(q, k, v, mask))
        return project(a, at.out_proj.weight, at.out_proj.bias, False)

    def ffn(self, x: Tensor) -> Tensor:
        return feed_forward(x, self.fc1.weight, self.fc1.bias, self.fc2.weight, self.fc2.bias,
                            True, self.low_activations)


class DecoderLayer(nn.Module):
    def __init__(self, dim: int, heads: int, ffn: int):
        super().__init__()
        self.self_attn = Attention(dim, heads)
        self.self_attn_layer_norm = nn.LayerNorm(dim)
        self.encoder_attn = Attention(dim, heads)
        self.encoder_attn_layer_norm = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, ffn)
        self.fc2 = nn.Linear(ffn, dim)
        self.final_layer_norm = nn.LayerNorm(dim)

    def forward(self, x: Tensor, self_k: Tensor, self_v: Tensor, self_mask: Tensor,
                cross_k: Tensor, cross_v: Tensor, cross_mask: Tensor) -> Tensor:
        a = attend(self.self_attn.query(x), self_k, self_v, self_mask)
        x = self.self_attn_layer_norm(x + self.self_attn.output(a))
        q = self.encoder_attn.query(x)
        if cross_k.shape[0] == 1 and q.shape[0] > 1 and q.shape[2] == 1:
            # Beams of one request share the encoder output: their one-token queries become the
            # rows of a single attention instead of copies of the keys and values per beam.
            a = attend(q.transpose(0, 2), cross_k, cross_v, cross_mask).transpose(0, 2)
        else:
            a = attend(q, cross_k, cross_v, cross_mask)
        x = self.encoder_attn_layer_norm(x + self.encoder_attn.output(a))
        return self.final_layer_norm(x + self.ffn(x))

    def ffn(self, x: Tensor) -> Tensor:
        return feed_forward(x, self.fc1.weight, self.fc1.bias, self.fc2.weight, self.fc2.bias)


POSITION_OFFSET = 2  # BART's learned positions start at row 2


def padding_mask(mask: Tensor) -> Tensor:
    """[B, S] of 1 (attend) / 0 (padding) -> additive [B, 1, 1, S]."""
    return ((1.0 - mask.to(torch.float32)) * -3.4028234663852886e38).view(
        mask.shape[0], 1, 1, mask.shape[1])


class BartEncoder(nn.Module):
    def __init__(self, tc: dict):
        super().__init__()
        d = tc["d_model"]
        self.embed_tokens = nn.Embedding(tc["vocab_size"], d)
        self.embed_positions = nn.Embedding(tc["max_position_embeddings"] + POSITION_OFFSET, d)
        self.layers = nn.ModuleList([
            EncoderLayer(d, tc["encoder_attention_heads"], tc["encoder_ffn_dim"])
            for _ in range(tc["encoder_layers"])])
        self.layernorm_embedding = nn.LayerNorm(d)


class TextEncoder(nn.Module):
    """Image features [B, N, D] + prompt ids [B, P] (+ mask [B, P]) -> hidden states [B, N+P, D].

    The prompt mask lets prompts of different lengths share a batch: padding positions are
    masked out of attention (the original code attends to them).
    """

    def __init__(self, config: dict):
        super().__init__()
        tc = config["text_config"]
        self.embed_scale = float(math.sqrt(tc["d_model"])) if tc.get("scale_embedding") else 1.0
        self.position_offset = POSITION_OFFSET
        self.encoder = BartEncoder(tc)

    def forward(self, image_features: Tensor, input_ids: Tensor, prompt_mask: Tensor) -> Tensor:
        embeds = self.encoder.embed_tokens(input_ids) * self.embed_scale
        x = torch.cat([image_features, embeds], dim=1)
        b, s, _ = x.shape
        positions = torch.arange(s, device=x.device) + self.position_offset
        x = self.encoder.layernorm_embedding(x + self.encoder.embed_positions(positions).unsqueeze(0))
        full_mask = torch.cat([torch.ones(b, image_features.shape[1], dtype=prompt_mask.dtype,
                                          device=x.device), prompt_mask], dim=1)
        mask = padding_mask(full_mask)
        for layer in self.encoder.layers:
            x = layer(x, mask)
        return x

    @torch.jit.export
    def int8_products(self) -> bool:
        """Present in code that runs int8 weights in this encoder's large products
        (linear_int8): the engine's int8 mode quantizes them only then (packages of an earlier
        exporter keep bfloat16 encoders)."""
        return True


class BartDecoder(nn.Module):
    def __init__(self, tc: dict):
        super().__init__()
        d = tc["d_model"]
        self.embed_tokens = nn.Embedding(tc["vocab_size"], d)
        self.embed_positions = nn.Embedding(tc["max_position_embeddings"] + POSITION_OFFSET, d)
        self.layers = nn.ModuleList([
            DecoderLayer(d, tc["decoder_attention_heads"], tc["decoder_ffn_dim"])
            for _ in range(tc["decoder_layers"])])
        self.layernorm_embedding = nn.LayerNorm(d)


class Decoder(nn.Module):
    """BART decoder with an explicit key/value cache, and the LM head.

    Cache layout: self_cache [layers, 2, B, heads, capacity, head_dim] (keys, values) is
    preallocated by the caller and written in place at positions [past, past + T); cross_kv
    [layers, 2, B, heads, S, head_dim] is computed once per request by `cross_kv`.
    """

    def __init__(self, config: dict):
        super().__init__()
        tc = config["text_config"]
        self.embed_scale = float(math.sqrt(tc["d_model"])) if tc.get("scale_embedding") else 1.0
        self.position_offset = POSITION_OFFSET
        self.num_layers = int(tc["decoder_layers"])
        self.heads = int(tc["decoder_attention_heads"])
        self.head_dim = int(tc["d_model"]) // self.heads
        self.decoder = BartDecoder(tc)
        self.lm_head = nn.Linear(tc["d_model"], tc["vocab_size"], bias=False)
        self.register_buffer("final_logits_bias", torch.zeros(1, tc["vocab_size"]))

    def embed(self, input_ids: Tensor, past: int) -> Tensor:
        t = input_ids.shape[1]
        positions = torch.arange(past, past + t, device=input_ids.device) + self.position_offset
        x = self.decoder.embed_tokens(input_ids) * self.embed_scale
        return self.decoder.layernorm_embedding(x + self.decoder.embed_positions(positions).unsqueeze(0))

    def logits(self, x: Tensor) -> Tensor:
        return linear(x, self.lm_head.weight, None) + self.final_logits_bias

    @torch.jit.export
    def cross_kv(self, encoder_hidden: Tensor) -> Tensor:
        kvs: List[Tensor] = []
        for layer in self.decoder.layers:
            k, v = layer.encoder_attn.keys_values(encoder_hidden)
            kvs.append(torch.stack([k, v]))
        return torch.stack(kvs)

    @torch.jit.export
    def new_cache(self, batch: int, capacity: int) -> Tensor:
        return torch.zeros(self.num_layers, 2, batch, self.heads, capacity, self.head_dim)

    # engine/decoding/NativeStep.cpp runs this method in C++ for one token of one to four
    # hypotheses, operator for operator (with DecoderLayer.forward, linear(), attend() and
    # padding_mask() as they go for those shapes), for the code of code-allowlist.txt: a change
    # here needs the same change there (tests/engine/TestNativeStep.cpp compares them bit for bit).
    @torch.jit.export
    def step(self, input_ids: Tensor, past: int, self_cache: Tensor, cross_kv: Tensor,
             encoder_mask: Tensor) -> Tuple[Tensor, Tensor]:
        """input_ids [B, T] at positions [past, past+T). Returns logits of the last position
        [B, vocab] and the cache (written in place)."""
        t = input_ids.shape[1]
        end = past + t
        x = self.embed(input_ids, past)
        self_mask = self.causal_mask(t, past, x.dtype)
        cross_mask = padding_mask(encoder_mask)
        i = 0
        for layer in self.decoder.layers:
            k, v = layer.self_attn.keys_values(x)
            self_cache[i, 0, :, :, past:end] = k
            self_cache[i, 1, :, :, past:end] = v
            x = layer(x, self_cache[i, 0, :, :, :end], self_cache[i, 1, :, :, :end], self_mask,
                      cross_kv[i, 0], cross_kv[i, 1], cross_mask)
            i += 1
        return self.logits(x[:, -1]), self_cache

    def causal_mask(self, t: int, past: int, dtype: torch.dtype) -> Tensor:
        if t == 1:
            return torch.zeros(1, 1, 1, past + 1, dtype=dtype)
        rows = torch.arange(t).unsqueeze(1) + past
        cols = torch.arange(past + t).unsqueeze(0)
        return torch.where(cols > rows, -3.4028234663852886e38, 0.0).to(dtype).view(
            1, 1, t, past + t)

    @torch.jit.export
    def forward_full(self, input_ids: Tensor, encoder_hidden: Tensor, encoder_mask: Tensor,
                     last_only: bool) -> Tensor:
        """The whole prefix through the decoder, cross-attention keys/values included, as a
        traced model without cache runs every step. Logits [B, T, vocab] or [B, vocab]."""
        t = input_ids.shape[1]
        x = self.embed(input_ids, 0)
        self_mask = self.causal_mask(t, 0, x.dtype)
        cross_mask = padding_mask(encoder_mask)
        for layer in self.decoder.layers:
            k, v = layer.self_attn.keys_values(x)
            ck, cv = layer.encoder_attn.keys_values(encoder_hidden)
            x = layer(x, k, v, self_mask, ck, cv, cross_mask)
        if last_only:
            return self.logits(x[:, -1])
        return self.logits(x)

    def forward(self, input_ids: Tensor, encoder_hidden: Tensor, encoder_mask: Tensor) -> Tensor:
        return self.forward_full(input_ids, encoder_hidden, encoder_mask, False)


class Florence2(nn.Module):
    """The whole model with the published parameter names, for loading a state dict."""

    def __init__(self, config: dict):
        super().__init__()
        self.vision = VisionEncoder(config)
        self.text = TextEncoder(config)
        self.dec = Decoder(config)

    def tie_weights(self) -> None:
        """The published model shares one matrix between decoder embedding and LM head; sharing
        it here too halves the decoder file and the memory it takes."""
        self.dec.lm_head.weight = self.dec.decoder.embed_tokens.weight

    def tie_encoder_embedding(self) -> None:
        """The published checkpoints also give the text encoder the decoder's token embedding
        (BART's `shared`); the exporter then stores it once (manifest "shared_parameters")."""
        self.text.encoder.embed_tokens.weight = self.dec.decoder.embed_tokens.weight

    # published name -> our name
    @staticmethod
    def map_name(name: str) -> str:
        for prefix in ("vision_tower.", "image_pos_embed.", "visual_temporal_embed.",
                       "image_projection", "image_proj_norm."):
            if name.startswith(prefix):
                return "vision." + name
        if name.startswith("language_model.model.encoder."):
            return "text.encoder." + name[len("language_model.model.encoder."):]
        if name.startswith("language_model.model.decoder."):
            return "dec.decoder." + name[len("language_model.model.decoder."):]
        if name == "language_model.lm_head.weight":
            return "dec.lm_head.weight"
        if name == "language_model.final_logits_bias":
            return "dec.final_logits_bias"
        raise KeyError(name)
