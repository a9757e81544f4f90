"""Hugging Face decoders as ONNX exports see them: small random-weight models built from configs (no download), with a
``StaticCache`` whose key and value tensors are the module's inputs and outputs, so that each layer's cache write
(transformers 5.x: ``keys.index_copy_(2, cache_position, k)``) is a write into a graph input.

``CacheWriter(family, batch, tokens)``: ``forward(input_ids, position, *keys, *values) -> (logits, *keys, *values)``,
``position`` a 0-d int64 tensor (how many tokens the cache holds already). ``inputs()`` gives example inputs (a cache
holding ``position`` tokens), ``reference(*inputs)`` eager PyTorch's outputs, as NumPy arrays, on copies of the inputs.
"""

from __future__ import annotations

import numpy as np

MAX_CACHE = 16
FAMILIES = ("llama", "qwen2", "gpt2", "gpt_neox")  # gpt_neox: keys and values split from one fused projection


def config(family):
    """A 2-layer config of ``family`` with 4 heads (2 key/value heads where the family has them) of 16 dims."""
    import transformers

    common = dict(vocab_size=64, num_hidden_layers=2, num_attention_heads=4, max_position_embeddings=64)
    if family == "gpt2":
        return transformers.GPT2Config(n_embd=64, n_layer=2, n_head=4, n_positions=64, vocab_size=64, bos_token_id=0, eos_token_id=0,
                                       attn_implementation="eager")
    if family == "gpt_neox":
        return transformers.GPTNeoXConfig(hidden_size=64, intermediate_size=128, attn_implementation="eager", **common)
    configs = {"llama": transformers.LlamaConfig, "qwen2": transformers.Qwen2Config}
    return configs[family](hidden_size=64, intermediate_size=128, num_key_value_heads=2, attn_implementation="eager", **common)


def model(family):
    import torch
    import transformers

    torch.manual_seed(0)
    classes = {"llama": transformers.LlamaForCausalLM, "qwen2": transformers.Qwen2ForCausalLM, "gpt2": transformers.GPT2LMHeadModel,
               "gpt_neox": transformers.GPTNeoXForCausalLM}
    return classes[family](config(family)).eval()


def _module():
    import torch

    class CacheWriter(torch.nn.Module):
        """One decoder step (``tokens`` new tokens) that writes its keys and values into a static cache of ``MAX_CACHE``."""

        def __init__(self, family, batch=1, tokens=1):
            super().__init__()
            self.family, self.batch, self.tokens = family, batch, tokens
            self.decoder = model(family)
            self.layers = self.decoder.config.num_hidden_layers
            text = self.decoder.config
            self.heads = getattr(text, "num_key_value_heads", None) or text.num_attention_heads
            self.head_dim = text.hidden_size // text.num_attention_heads

        def forward(self, input_ids, position, *caches):
            from transformers import StaticCache

            cache = StaticCache(config=self.decoder.config, max_cache_len=MAX_CACHE)
            for layer, keys, values in zip(cache.layers, caches[: self.layers], caches[self.layers :]):
                layer.keys, layer.values = keys, values
                layer.device, layer.batch_size, layer.num_heads = keys.device, keys.shape[0], keys.shape[1]
                layer.k_head_dim = layer.v_head_dim = keys.shape[-1]
                layer.cumulative_length = position.clone()  # the layer adds to it in place
                layer.is_initialized = True
            positions = (torch.arange(input_ids.shape[1]) + position).unsqueeze(0)
            out = self.decoder(input_ids=input_ids, position_ids=positions, cache=cache, use_cache=True)
            return (out.logits, *[layer.keys for layer in cache.layers], *[layer.values for layer in cache.layers])

        def input_names(self):
            return ["input_ids", "position"] + [f"key{i}" for i in range(self.layers)] + [f"value{i}" for i in range(self.layers)]

        def output_names(self):
            return ["logits"] + [f"key{i}_out" for i in range(self.layers)] + [f"value{i}_out" for i in range(self.layers)]

        def inputs(self, position=3, seed=0):
            generator = torch.Generator().manual_seed(seed)
            ids = torch.randint(0, 64, (self.batch, self.tokens), generator=generator)
            shape = (self.batch, self.heads, MAX_CACHE, self.head_dim)
            caches = [torch.randn(shape, generator=generator) for _ in range(2 * self.layers)]
            for cache in caches:
                cache[:, :, position:] = 0  # what a cache holding `position` tokens holds
            return (ids, torch.tensor(position), *caches)

        def reference(self, *inputs):
            with torch.no_grad():
                return [output.numpy() for output in self(*[value.clone() for value in inputs])]

    return CacheWriter


def cache_writer(family, batch=1, tokens=1):
    return _module()(family, batch, tokens)


def feeds(module, inputs):
    """The inputs as an ONNX feed dict (by the module's input names)."""
    return {name: np.asarray(value.detach().numpy()) for name, value in zip(module.input_names(), inputs)}
