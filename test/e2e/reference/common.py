"""Pieces the NumPy references share (float64): activations, softmax, the
RMSNorm with weight w, top-k, a config reader, and YaRN as transformers v5's
_compute_yarn_parameters computes it (src/transformers/modeling_rope_utils.py,
the mscale / mscale_all_dim / original_max_position_embeddings / truncate
version), which make_family_goldens.py's YaRN goldens use too."""

import math

import numpy as np


def silu(x):
    return x / (1.0 + np.exp(-x))


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def softmax(x, axis=-1):
    """A row whose entries are all -inf (fully masked) is NaN, not an error."""
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    e = np.exp(x - m)
    return e / np.sum(e, axis=axis, keepdims=True)


def rms_norm(x, weight, eps):
    """weight * x / sqrt(mean(x^2) + eps): the weight is w, not 1 + w."""
    return weight * (x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps))


def topk_indices(v, k):
    """Indices of the k largest of each row, largest first, the lower index first
    among equals (tfm.route's order; torch.topk's order among exact ties is not
    specified, and random weights never tie)."""
    return np.argsort(-v, axis=-1, kind="stable")[..., :k]


def config_value(config, key, default=None):
    """config[key], or `default` where it is missing or null."""
    v = config.get(key, default)
    return default if v is None else v


def yarn_mscale(scale, mscale=1.0):
    """0.1 mscale ln(scale) + 1 (1 for scale <= 1): YaRN's magnitude."""
    return 1.0 if scale <= 1 else 0.1 * mscale * math.log(scale) + 1.0


def yarn_parameters(theta, dim, scaling, max_position_embeddings, truncate=None):
    """YaRN's inverse frequencies [dim / 2] and attention factor for `dim`
    rotary dimensions: each pair blended between theta^(-2i/dim)
    (extrapolation) and that over `factor` (interpolation) by a ramp between
    the correction dimensions of beta_fast and beta_slow rotations in the
    original context, rounded outwards unless `truncate` (default the
    config's, true) is false; the attention factor is attention_factor, else
    mscale / mscale_all_dim's ratio, else yarn_mscale(factor)."""
    factor = float(scaling["factor"])
    original = scaling.get("original_max_position_embeddings", max_position_embeddings)
    attention_factor = scaling.get("attention_factor")
    if attention_factor is None:
        mscale, mscale_all_dim = scaling.get("mscale"), scaling.get("mscale_all_dim")
        if mscale and mscale_all_dim:
            attention_factor = yarn_mscale(factor, mscale) / yarn_mscale(factor, mscale_all_dim)
        else:
            attention_factor = yarn_mscale(factor)
    beta_fast = scaling.get("beta_fast") or 32
    beta_slow = scaling.get("beta_slow") or 1
    if truncate is None:
        truncate = scaling.get("truncate", True)

    def correction_dim(rotations):
        return dim * math.log(original / (rotations * 2 * math.pi)) / (2 * math.log(theta))

    low, high = correction_dim(beta_fast), correction_dim(beta_slow)
    if truncate:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    if low == high:
        high += 0.001  # transformers' guard against a zero-width ramp
    ramp = np.clip((np.arange(dim // 2, dtype=np.float64) - low) / (high - low), 0.0, 1.0)
    extrapolation = 1.0 - ramp
    pos_freqs = float(theta) ** (np.arange(0, dim, 2, dtype=np.float64) / dim)
    inverse = (1.0 / (factor * pos_freqs)) * (1.0 - extrapolation) + (1.0 / pos_freqs) * extrapolation
    return inverse, float(attention_factor)
