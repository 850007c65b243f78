"""A BERT encoder forward pass in plain torch, for unpadded inference only.

Why not transformers.BertModel: importing it costs ~3 s and ~150 MB on a cold
start, more than a third of embedding a whole relationship's setup, and its code
changes between releases. This is the same arithmetic (checked against
sentence-transformers within 1e-4 by the tests), for the one case membench needs:
batches whose texts all have the same length, so no attention mask, no dropout,
no pooler, token type 0 everywhere.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors.torch import load_file


class BertEncoder:
    """Last hidden states of a BERT checkpoint (HF config.json + model.safetensors)."""

    def __init__(self, weights: dict[str, torch.Tensor], config: dict) -> None:
        if (
            config.get("hidden_act") != "gelu"
            or config.get("position_embedding_type", "absolute") != "absolute"
        ):
            raise ValueError("only BERT with exact GELU and absolute positions is implemented")
        self.weights = weights
        self.hidden_size = int(config["hidden_size"])
        self.heads = int(config["num_attention_heads"])
        self.layers = int(config["num_hidden_layers"])
        self.eps = float(config["layer_norm_eps"])
        self.max_positions = int(config["max_position_embeddings"])

    @classmethod
    def from_directory(cls, path: Path) -> BertEncoder:
        config = json.loads((path / "config.json").read_text(encoding="utf-8"))
        return cls(load_file(str(path / "model.safetensors"), device="cpu"), config)

    def _linear(self, x: torch.Tensor, name: str) -> torch.Tensor:
        return F.linear(x, self.weights[f"{name}.weight"], self.weights[f"{name}.bias"])

    def _layer_norm(self, x: torch.Tensor, name: str) -> torch.Tensor:
        w = self.weights
        shape = (self.hidden_size,)
        return F.layer_norm(x, shape, w[f"{name}.weight"], w[f"{name}.bias"], self.eps)

    def _embed(self, input_ids: torch.Tensor) -> torch.Tensor:
        w = self.weights
        length = input_ids.shape[1]
        if length > self.max_positions:
            raise ValueError(f"{length} tokens exceed {self.max_positions} positions")
        # Same addition order as transformers: (words + token type) + positions.
        x = w["embeddings.word_embeddings.weight"][input_ids]
        x = x + w["embeddings.token_type_embeddings.weight"][0]
        x = x + w["embeddings.position_embeddings.weight"][:length]
        return self._layer_norm(x, "embeddings.LayerNorm")

    def _attention(self, x: torch.Tensor, prefix: str) -> torch.Tensor:
        batch, length, _ = x.shape

        def heads(name: str) -> torch.Tensor:
            projected = self._linear(x, f"{prefix}.attention.self.{name}")
            return projected.view(batch, length, self.heads, -1).transpose(1, 2)

        context = F.scaled_dot_product_attention(heads("query"), heads("key"), heads("value"))
        context = context.transpose(1, 2).reshape(batch, length, self.hidden_size)
        return self._linear(context, f"{prefix}.attention.output.dense")

    def __call__(self, input_ids: torch.Tensor) -> torch.Tensor:
        """(batch, length) token ids, no padding -> (batch, length, hidden) float32."""
        x = self._embed(input_ids)
        for index in range(self.layers):
            prefix = f"encoder.layer.{index}"
            x = self._layer_norm(
                self._attention(x, prefix) + x, f"{prefix}.attention.output.LayerNorm"
            )
            inner = F.gelu(self._linear(x, f"{prefix}.intermediate.dense"))
            x = self._layer_norm(
                self._linear(inner, f"{prefix}.output.dense") + x, f"{prefix}.output.LayerNorm"
            )
        return x
