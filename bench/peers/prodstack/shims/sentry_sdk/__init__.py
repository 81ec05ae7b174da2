"""Import shim for `sentry_sdk` (not in this machine's wheel index).

production-stack's src/vllm_router/app.py does `import sentry_sdk` at module level and calls
sentry_sdk.init(...) only `if sentry_dsn := args.sentry_dsn` (error reporting to a Sentry
server). The bench never passes --sentry-dsn, so init is never called; if it were, it fails
loudly rather than silently dropping reports.
"""


def init(*a, **k):
    raise RuntimeError("sentry_sdk shim: run without --sentry-dsn")
