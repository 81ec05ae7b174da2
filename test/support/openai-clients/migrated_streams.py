"""The official Python `openai` client streaming several answers at once through a router, one
thread each (argv: base_url requests_file; the file is a JSON list of {"kind": "chat" or
"completions", "body": {...}}). Prints JSON lines as it goes, flushed: {"event": "started", "i",
"worker"} once a stream has assembled 3 characters (so a test knows every stream is under way
before it kills an engine), then one {"event": "result", "i", "text", "usage", "logprobs",
"error"} per stream, with what the client assembled: the choice's text, the last usage, and the
choice's logprobs entries in order (completions: tokens, token_logprobs, top_logprobs,
text_offset; chat: content entries)."""
import json
import sys
import threading

import openai

base_url, requests_file = sys.argv[1], sys.argv[2]
with open(requests_file) as f:
    requests = json.load(f)
client = openai.OpenAI(base_url=base_url, api_key="unused", max_retries=0, timeout=120)
lock = threading.Lock()


def say(obj):
    with lock:
        print(json.dumps(obj), flush=True)


def run(i, kind, body):
    text, usage, error, worker, started = "", None, None, "", False
    logprobs = {"tokens": [], "token_logprobs": [], "top_logprobs": [], "text_offset": []} if kind == "completions" else []
    try:
        api = client.chat.completions if kind == "chat" else client.completions
        with api.with_streaming_response.create(**body, stream=True) as response:
            worker = response.headers.get("x-switchyard-worker", "")
            for c in response.parse():
                if c.usage is not None:
                    usage = c.usage.model_dump(mode="json")
                for ch in c.choices:
                    if kind == "chat":
                        text += ch.delta.content or ""
                        if ch.logprobs is not None and ch.logprobs.content:
                            logprobs.extend(e.model_dump(mode="json") for e in ch.logprobs.content)
                    else:
                        text += ch.text or ""
                        if ch.logprobs is not None:
                            lp = ch.logprobs.model_dump(mode="json")
                            for k in logprobs:
                                logprobs[k].extend(lp.get(k) or [])
                if not started and len(text) >= 3:
                    started = True
                    say({"event": "started", "i": i, "worker": worker})
    except Exception as e:  # what the client raised is the finding
        error = f"{type(e).__name__}: {e}"
    if not started:
        say({"event": "started", "i": i, "worker": worker})
    say({"event": "result", "i": i, "text": text, "usage": usage, "logprobs": logprobs, "error": error})


threads = [threading.Thread(target=run, args=(i, r["kind"], r["body"])) for i, r in enumerate(requests)]
for t in threads:
    t.start()
for t in threads:
    t.join()
say({"event": "end", "client": "python openai " + openai.__version__})
