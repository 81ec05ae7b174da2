"""
HF's Rust tokenizers called the fastest ways Python allows, on the texts bench/tokens/run.ts
hands over (a JSON list of strings in the file named by argv[2]; tokenizer.json in argv[1]):
`Tokenizer.encode` in a loop (one core, no thread pool involved) and `encode_batch` (Rust's own
thread pool; run with RAYON_NUM_THREADS=1 for one core). "cold": the first pass of a fresh
Tokenizer (its word cache empty), "warm": the next. Prints one JSON line: tokens/s per way.

    python3 -m venv /tmp/tv && /tmp/tv/bin/pip install --retries 0 --timeout 2 tokenizers
    RAYON_NUM_THREADS=1 /tmp/tv/bin/python bench/tokens/rust-reference.py TOKENIZER_JSON TEXTS_JSON
"""
import json
import sys
import time

import tokenizers


def timed(f):
    t0 = time.perf_counter()
    n = f()
    return n, time.perf_counter() - t0


def main():
    path, texts_file = sys.argv[1], sys.argv[2]
    texts = json.load(open(texts_file, encoding="utf-8"))
    out = {"tokenizers": tokenizers.__version__}
    for way in ("loop", "batch"):
        tok = tokenizers.Tokenizer.from_file(path)
        run = (lambda: sum(len(tok.encode(t, add_special_tokens=False).ids) for t in texts)) if way == "loop" else (
            lambda: sum(len(e.ids) for e in tok.encode_batch(texts, add_special_tokens=False)))
        n, cold = timed(run)
        warm = min(timed(run)[1] for _ in range(3))
        out[way] = {"tokens": n, "cold_tokens_per_s": round(n / cold), "warm_tokens_per_s": round(n / warm)}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
