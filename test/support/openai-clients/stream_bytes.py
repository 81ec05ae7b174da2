"""The official Python `openai` client streaming one answer through a router (argv: base_url model
kind include_usage prompt; kind: chat or completions). Its HTTP transport is wrapped to keep the
raw bytes the client parsed. Prints one JSON line: the raw bytes as text and the chunks the client
yielded, as the client built them."""
import json
import sys

import openai

try:
    import httpx2 as httpx  # what openai 3 is built on
except ImportError:
    import httpx

base_url, model, kind, include_usage, prompt = sys.argv[1:6]
raw = bytearray()


class Recording(httpx.BaseTransport):
    def __init__(self):
        self.inner = httpx.HTTPTransport()

    def handle_request(self, request):
        res = self.inner.handle_request(request)
        inner = res.stream

        class Kept(httpx.SyncByteStream):
            def __iter__(self):
                for chunk in inner:
                    raw.extend(chunk)
                    yield chunk

            def close(self):
                inner.close()

        return httpx.Response(res.status_code, headers=res.headers, stream=Kept(), extensions=res.extensions)


client = openai.OpenAI(base_url=base_url, api_key="unused", max_retries=0, http_client=openai.DefaultHttpxClient(transport=Recording()))
options = {"stream_options": {"include_usage": True}} if include_usage == "true" else {}
if kind == "chat":
    stream = client.chat.completions.create(model=model, messages=[{"role": "user", "content": prompt}], max_tokens=8, stream=True, **options)
else:
    stream = client.completions.create(model=model, prompt=prompt, max_tokens=8, stream=True, **options)
chunks = [c.model_dump(mode="json") for c in stream]
print(json.dumps({"client": "python openai " + openai.__version__, "raw": raw.decode(), "chunks": chunks}))
