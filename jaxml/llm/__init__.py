"""Language-model utilities: tokenizers, generation with a KV cache, scoring."""
