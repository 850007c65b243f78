"""A BERT encoder forward pass in float64 numpy, for unpadded inference only.

Why not torch or transformers: torch is a multi-GB install (its PyPI wheel is the CUDA
build) serving a 22M-parameter model, and float32 BLAS kernels sum in a CPU-specific
order, so their last bits differ between machines. This is the same arithmetic as
transformers' BertModel in float64, whose rounding noise (~1e-15) is far below the grid
membench.retrieval.embedding rounds vectors to. It covers the one case membench needs: batches
whose texts all have the same length, so no attention mask, no dropout, no pooler,
token type 0 everywhere.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

# GELU's normal CDF is evaluated from tables of Taylor coefficients: nodes every
# 1/NODES_PER_UNIT on [-CDF_RANGE, CDF_RANGE], TAYLOR_TERMS terms each. Outside the range
# the CDF is within 1e-18 of 0 or 1. Remainder <= (1/1024)^5/5! * max|phi^(4)| ~ 1e-17,
# below float64 rounding (tested against math.erf). One gather per term: a denser table
# with fewer terms would outgrow the L2 cache.
CDF_RANGE = 9.0
NODES_PER_UNIT = 512
TAYLOR_TERMS = 5
# GELU runs over chunks of about this many values, so its temporaries stay in L2 cache
# (several times faster than one pass over a whole batch).
CHUNK_VALUES = 32768


def _normal_cdf_tables() -> list[np.ndarray]:
    """Table n, row j: the n-th Taylor coefficient of Phi at node x_j, in units of the
    node spacing (Phi^(n)(x_j) / n! / NODES_PER_UNIT^n), x_j = j/NODES_PER_UNIT - CDF_RANGE.

    Phi^(n)(x) = (-1)^(n-1) He_(n-1)(x) phi(x) (probabilists' Hermite polynomials), so
    the tables need only math.erfc and math.exp, computed once at import.
    """
    count = int(2 * CDF_RANGE * NODES_PER_UNIT) + 1
    table = np.zeros((TAYLOR_TERMS, count), dtype=np.float64)
    for row in range(count):
        x = row / NODES_PER_UNIT - CDF_RANGE
        density = math.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)
        table[0, row] = 0.5 * math.erfc(-x / math.sqrt(2))
        previous, hermite = 0.0, 1.0  # He_(n-2), He_(n-1)
        for n in range(1, TAYLOR_TERMS):
            scale = math.factorial(n) * NODES_PER_UNIT**n
            table[n, row] = (-1) ** (n - 1) * hermite * density / scale
            previous, hermite = hermite, x * hermite - (n - 1) * previous
    return [np.ascontiguousarray(column) for column in table]


_CDF_TABLES = _normal_cdf_tables()


def normal_cdf(x: np.ndarray) -> np.ndarray:
    """Standard normal CDF of float64 x, absolute error ~2e-16 (no scipy needed)."""
    scaled = np.multiply(x, NODES_PER_UNIT)
    scaled += CDF_RANGE * NODES_PER_UNIT
    np.clip(scaled, 0.0, 2 * CDF_RANGE * NODES_PER_UNIT, out=scaled)
    nodes = np.rint(scaled)
    scaled -= nodes  # offset from the nearest node, in node spacings: exact
    index = nodes.astype(np.intp)
    result = np.take(_CDF_TABLES[-1], index)
    term = np.empty_like(result)
    for table in reversed(_CDF_TABLES[:-1]):
        result *= scaled
        result += np.take(table, index, out=term)
    return result


def erf(x: np.ndarray) -> np.ndarray:
    """Error function of float64 x via normal_cdf: erf(x) = 2 Phi(x sqrt 2) - 1."""
    return 2.0 * normal_cdf(np.asarray(x, dtype=np.float64) * math.sqrt(2)) - 1.0


def gelu_in_place(x: np.ndarray) -> None:
    """Exact GELU, x * Phi(x), as BERT's hidden_act "gelu" (not the tanh approximation)."""
    x *= normal_cdf(x)


class BertEncoder:
    """Last hidden states of a BERT checkpoint (HF config.json + model.safetensors)."""

    def __init__(self, weights: dict[str, np.ndarray], config: dict) -> None:
        if (
            config.get("hidden_act") != "gelu"
            or config.get("position_embedding_type", "absolute") != "absolute"
        ):
            raise ValueError("only BERT with exact GELU and absolute positions is implemented")
        self.hidden_size = int(config["hidden_size"])
        self.heads = int(config["num_attention_heads"])
        self.layers = int(config["num_hidden_layers"])
        self.eps = float(config["layer_norm_eps"])
        self.max_positions = int(config["max_position_embeddings"])
        # The word table stays float32 (exact in float64 once gathered): 47 MB less.
        self._words = weights["embeddings.word_embeddings.weight"]
        w = {name: np.asarray(value, dtype=np.float64) for name, value in weights.items()
             if name != "embeddings.word_embeddings.weight"}
        self._type0_positions = (
            w["embeddings.token_type_embeddings.weight"][0]
            + w["embeddings.position_embeddings.weight"]
        )
        self._embedding_norm = self._norm_params(w, "embeddings.LayerNorm")
        self._layer_params = [self._layer(w, f"encoder.layer.{i}") for i in range(self.layers)]

    @staticmethod
    def _norm_params(w: dict[str, np.ndarray], name: str) -> tuple[np.ndarray, np.ndarray]:
        return w[f"{name}.weight"], w[f"{name}.bias"]

    @staticmethod
    def _linear_params(w: dict[str, np.ndarray], *names: str) -> tuple[np.ndarray, np.ndarray]:
        """(in, out) weight, contiguous for x @ W, and bias; several names side by side."""
        weight = np.concatenate([w[f"{name}.weight"] for name in names], axis=0)
        bias = np.concatenate([w[f"{name}.bias"] for name in names])
        return np.ascontiguousarray(weight.T), bias

    def _layer(self, w: dict[str, np.ndarray], prefix: str) -> dict:
        attention = f"{prefix}.attention"
        scale = 1.0 / math.sqrt(self.hidden_size // self.heads)
        for part in ("weight", "bias"):  # softmax(q k^T / sqrt(d)) with q pre-scaled
            w[f"{attention}.self.query.{part}"] = w[f"{attention}.self.query.{part}"] * scale
        return {
            "qkv": self._linear_params(
                w, *(f"{attention}.self.{name}" for name in ("query", "key", "value"))
            ),
            "attention_out": self._linear_params(w, f"{attention}.output.dense"),
            "attention_norm": self._norm_params(w, f"{attention}.output.LayerNorm"),
            "intermediate": self._linear_params(w, f"{prefix}.intermediate.dense"),
            "output": self._linear_params(w, f"{prefix}.output.dense"),
            "output_norm": self._norm_params(w, f"{prefix}.output.LayerNorm"),
        }

    @classmethod
    def from_directory(cls, path: Path) -> BertEncoder:
        from safetensors.numpy import load_file

        config = json.loads((path / "config.json").read_text(encoding="utf-8"))
        return cls(load_file(str(path / "model.safetensors")), config)

    def _layer_norm(self, x: np.ndarray, params: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
        mean = x.mean(axis=-1, keepdims=True)
        centred = x - mean
        variance = np.mean(centred * centred, axis=-1, keepdims=True)
        centred /= np.sqrt(variance + self.eps)
        centred *= params[0]
        centred += params[1]
        return centred

    def _attention(self, x: np.ndarray, batch: int, length: int, params: dict) -> np.ndarray:
        weight, bias = params["qkv"]  # the query part pre-scaled by 1/sqrt(head size)
        qkv = x @ weight
        qkv += bias
        size, hidden = self.hidden_size // self.heads, self.hidden_size
        context = np.empty_like(x)
        # Per text and head, 2-D views into qkv: BLAS reads them in place, no copies.
        for start in range(0, batch * length, length):
            rows = slice(start, start + length)
            for offset in range(0, hidden, size):
                query = qkv[rows, offset : offset + size]
                key = qkv[rows, hidden + offset : hidden + offset + size]
                value = qkv[rows, 2 * hidden + offset : 2 * hidden + offset + size]
                weights = query @ key.T
                weights -= weights.max(axis=1, keepdims=True)
                np.exp(weights, out=weights)
                # Normalise after weighting the values: length x head, not length x length.
                context[rows, offset : offset + size] = (weights @ value) / weights.sum(
                    axis=1, keepdims=True
                )
        weight, bias = params["attention_out"]
        out = context @ weight
        out += bias
        return out

    def __call__(self, input_ids: np.ndarray) -> np.ndarray:
        """(batch, length) token ids, no padding -> (batch, length, hidden) float64."""
        batch, length = input_ids.shape
        if length > self.max_positions:
            raise ValueError(f"{length} tokens exceed {self.max_positions} positions")
        # Same addition order as transformers: words + (token type + positions).
        x = self._words[input_ids].astype(np.float64) + self._type0_positions[:length]
        x = self._layer_norm(x.reshape(batch * length, self.hidden_size), self._embedding_norm)
        for params in self._layer_params:
            attended = self._attention(x, batch, length, params)
            attended += x
            x = self._layer_norm(attended, params["attention_norm"])
            weight, bias = params["intermediate"]
            inner = x @ weight
            inner += bias
            step = max(1, CHUNK_VALUES // inner.shape[1])
            for start in range(0, len(inner), step):
                gelu_in_place(inner[start : start + step])
            weight, bias = params["output"]
            out = inner @ weight
            out += bias
            out += x
            x = self._layer_norm(out, params["output_norm"])
        return x.reshape(batch, length, self.hidden_size)
