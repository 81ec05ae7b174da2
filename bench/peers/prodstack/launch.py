"""Starts production-stack's router (`python -m vllm_router.app`, their unmodified source) after
one run-time compatibility patch for a dependency version this machine's wheel index lacks.

xxhash: production-stack pins xxhash==3.5.0; the only wheel here is 4.0.1, whose xxh64() no
longer accepts `str` ("TypeError: Strings must be encoded before hashing"). Their
prefix/hashtrie.py hashes 128-character `str` chunks of the prompt (`xxhash.xxh64(chunk)`),
so prefixaware fails on every request with 4.x. xxhash 3.x hashed a `str` as its UTF-8 bytes
(the C argument parser's "s*"), so wrapping xxh64 to encode `str` as UTF-8 gives the same
hash values 3.5.0 gave. Nothing else is changed.

Usage: python launch.py <vllm_router.app flags...>  (PYTHONPATH must hold their src/, the
shims/ folder and uhashring's source; run.sh sets it.)
"""
import runpy
import sys

import xxhash

_xxh64 = xxhash.xxh64


def _xxh64_str_as_utf8(data=b"", *args, **kwargs):
    if isinstance(data, str):
        data = data.encode("utf-8")
    return _xxh64(data, *args, **kwargs)


xxhash.xxh64 = _xxh64_str_as_utf8

sys.argv = ["vllm_router.app", *sys.argv[1:]]
runpy.run_module("vllm_router.app", run_name="__main__", alter_sys=True)
