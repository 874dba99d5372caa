"""Server side of W2: MarianMT with the opus-mt-en-de architecture (6+6 layers,
d_model 512, 58101-token vocabulary), PyTorch, greedy decoding.

With Helsinki-NLP/opus-mt-en-de in the model cache
($CONTINUUM_MODEL_CACHE/opus-mt-en-de/, see docs/workloads.md) the real
model and tokenizer run. Otherwise the same architecture runs with seeded
random weights, and the tokenizer is a SentencePiece model trained here, in a
second, on the project's own corpus. Random weights never emit end-of-sentence,
so output length is bounded like a translation's: at most
`max_output_ratio` x input tokens + 4 (and `max_output_tokens`), which keeps
the decoding work, and so the latency, of a real translation."""

from __future__ import annotations

import tempfile
from pathlib import Path

from workloads.contract import ServerSettings
from workloads.translation.corpus import corpus

OPUS_MT_EN_DE = dict(vocab_size=58101, d_model=512, encoder_layers=6, decoder_layers=6, encoder_attention_heads=8,
                     decoder_attention_heads=8, encoder_ffn_dim=2048, decoder_ffn_dim=2048,
                     max_position_embeddings=512, activation_function="swish", scale_embedding=True,
                     share_encoder_decoder_embeddings=True, pad_token_id=58100, eos_token_id=0,
                     decoder_start_token_id=58100, forced_eos_token_id=0)


def train_tokenizer(seed: int, directory: Path, vocab_size: int = 4000):
    """A SentencePiece unigram model of the project's corpus (deterministic for a seed)."""
    import sentencepiece as spm

    text = directory / "corpus.txt"
    text.write_text("\n".join(corpus(seed, 20000)) + "\n")
    prefix = directory / "spm"
    spm.SentencePieceTrainer.train(input=str(text), model_prefix=str(prefix), vocab_size=vocab_size,
                                   model_type="unigram", character_coverage=1.0, num_threads=1, minloglevel=2,
                                   hard_vocab_limit=False, unk_id=1, bos_id=-1, eos_id=0, pad_id=2)
    return spm.SentencePieceProcessor(model_file=str(prefix) + ".model")


class Server:
    def __init__(self, s: ServerSettings) -> None:
        import torch
        import transformers
        from transformers import MarianConfig, MarianMTModel

        torch.set_num_threads(max(1, s.threads))
        self.torch = torch
        self.max_tokens = int(s.params.get("max_output_tokens", 128))
        self.ratio = float(s.params.get("max_output_ratio", 1.3))
        cached = Path(s.model_cache) / "opus-mt-en-de" if s.model_cache else None
        if cached and (cached / "config.json").is_file():
            from transformers import MarianTokenizer

            self.model = MarianMTModel.from_pretrained(cached, local_files_only=True)
            tok = MarianTokenizer.from_pretrained(cached, local_files_only=True)
            self.encode = lambda text: tok(text, return_tensors="pt")["input_ids"]
            self.decode = lambda ids: tok.decode(ids, skip_special_tokens=True)
            weights, tokenizer = f"opus-mt-en-de ({cached})", "opus-mt-en-de SentencePiece"
        else:
            torch.manual_seed(s.seed)
            self.model = MarianMTModel(MarianConfig(**OPUS_MT_EN_DE))
            with tempfile.TemporaryDirectory() as d:
                sp = train_tokenizer(s.seed, Path(d))
            size = sp.get_piece_size()
            self.encode = lambda text: torch.tensor([sp.encode(text) + [0]])
            # Random weights pick ids across all 58101; fold them onto the pieces this tokenizer has.
            self.decode = lambda ids: sp.decode([3 + i % (size - 3) for i in ids if i > 2])
            weights = f"random, seed {s.seed} (no opus-mt-en-de in the model cache)"
            tokenizer = f"SentencePiece unigram, {size} pieces, trained on the project corpus"
        self.model.eval()
        self.process("Warm up the model before the first request arrives, so it is not counted.".encode())
        self.info = {"app": "translation", "model": "MarianMT (opus-mt-en-de architecture)", "framework": "pytorch",
                     "torch": torch.__version__, "transformers": transformers.__version__, "weights": weights,
                     "tokenizer": tokenizer, "threads": s.threads,
                     "parameters": sum(p.numel() for p in self.model.parameters())}

    def process(self, payload: bytes) -> bytes:
        ids = self.encode(payload.decode())
        bound = min(self.max_tokens, int(self.ratio * ids.shape[1]) + 4)
        with self.torch.no_grad():
            out = self.model.generate(ids, max_new_tokens=bound, num_beams=1, do_sample=False)
        return self.decode(out[0].tolist()).encode()
