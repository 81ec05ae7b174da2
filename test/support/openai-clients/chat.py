"""The official Python `openai` client against a router: one chat completion and one streamed,
trusting only the CA file given (argv: base_url ca_file). Prints one JSON line with what came
back; a TLS failure exits 3 with the error's text."""
import json
import sys

import openai

base_url, ca_file = sys.argv[1], sys.argv[2]
verify = ca_file if ca_file != "-" else True
client = openai.OpenAI(base_url=base_url, api_key="unused", http_client=openai.DefaultHttpxClient(verify=verify), max_retries=0)
try:
    done = client.chat.completions.create(model="switchyard-sim", messages=[{"role": "user", "content": "hello over tls"}], max_tokens=4)
    stream = client.chat.completions.create(model="switchyard-sim", messages=[{"role": "user", "content": "hello over tls"}], max_tokens=4, stream=True)
    pieces = [c.choices[0].delta.content or "" for c in stream if c.choices]
except openai.APIConnectionError as e:
    print(json.dumps({"error": repr(e.__cause__ or e)}))
    sys.exit(3)
print(json.dumps({"client": "python openai " + openai.__version__, "text": done.choices[0].message.content, "usage": done.usage.completion_tokens, "streamed": "".join(pieces)}))
