"""
Reference outputs of small Jinja snippets rendered by transformers' own template environment
(transformers.utils.chat_template_utils._compile_jinja_template: Python jinja2's
ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loopcontrols, transformers'
tojson/raise_exception). They pin where @huggingface/jinja must behave like Python
(src/tokens/jinja-compat.ts). Run from the repository root:

    /tmp/tv/bin/python test/vectors/tokens/jinja_cases.py

Writes test/vectors/tokens/jinja.json: [{template, context, output}] (output null: Python raised).
"""
import json

from transformers.utils.chat_template_utils import _compile_jinja_template

S = "\r\n  hi there \n\n"
CASES = [
    ("{{ s.strip() }}|{{ s.lstrip() }}|{{ s.rstrip() }}", {"s": S}),
    ("{{ s.strip('\\n') }}|{{ s.lstrip('\\n') }}|{{ s.rstrip('\\n') }}", {"s": "\n\n\r\n x \n"}),
    ("{{ s.strip('ab') }}|{{ s.lstrip('xa') }}|{{ s.rstrip('b') }}", {"s": "abxaab"}),
    ("[{{ s.strip() }}]", {"s": "\ufeff x \x1c\x1d\x85"}),
    ("[{{ s | trim }}]", {"s": "\ufeff y \x1f\u3000"}),
    ("{{ s.split() | join('|') }}", {"s": "  a\x1cb\tc\u00a0d \ufeffe  "}),
    ("{{ s.split(none, 1) | join('|') }}", {"s": "  a b  c  "}),
    ("{{ s.split('</think>')[-1].lstrip('\\n') }}", {"s": "<think>x</think>\n\n\r\nanswer"}),
    ("{{ s.capitalize() }}|{{ s.upper() }}|{{ s.lower() }}", {"s": "hELLO wORLD"}),
    ("{{ x | tojson }}", {"x": {"b": [1, 2.5, None, True], "a": "é\"\n\t😀<>&'", "c": {}}}),
    ("{{ x | tojson(indent=2) }}", {"x": {"k": [1, {"z": None}], "e": []}}),
    ("{{ x | tojson(separators=(',', ':')) }}", {"x": {"k": [1, 2]}}),
    ("{{ x | tojson(sort_keys=true) }}", {"x": {"b": 1, "a": 2}}),
    ("{% for m in messages[::-1] %}{{ m }}{% endfor %}", {"messages": ["a", "b", "c"]}),
    ("{% for i in range(5) %}{% if i == 3 %}{% break %}{% endif %}{{ i }}{% endfor %}", {}),
    ("{% for i in range(1, 8, 3) %}{% if i == 4 %}{% continue %}{% endif %}{{ i }}{% endfor %}", {}),
    ("{%- set ns = namespace(n=0) %}{%- for x in xs %}{%- set ns.n = ns.n + x %}{%- endfor %}{{ ns.n }}", {"xs": [1, 2, 3]}),
    ("{{ 'yes' if x is string else 'no' }}{{ 'm' if y is mapping else 'n' }}", {"x": "s", "y": {"a": 1}}),
    ("{{ x is defined }}{{ z is defined }}{{ n is none }}", {"x": 1, "n": None}),
    ("  {% if true %}\n  kept\n  {% endif %}\nend", {}),
    ("a\n{%- if true %}\n b{% endif -%}\n c", {}),
    ("{{ d.items() | list | length }}{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}", {"d": {"z": 1, "a": 2}}),
    ("{{ '<' + s + '>' }}", {"s": "<|im_start|>"}),
    ("{{ s[1:3] }}|{{ s[-2:] }}", {"s": "abcdef"}),
    ("{{ xs | length }} {{ xs | first }} {{ xs | last }}", {"xs": [3, 4, 5]}),
    ("{{ s.startswith('<tool') }}{{ s.endswith('>') }}", {"s": "<tool_response>"}),
    ("{{ s.replace('a', 'b') }}|{{ s.title() }}", {"s": "a cat sat"}),
    ("{{ '%s-%d' | format('x', 3) }}", {}),
    ("{{ 7 // 2 }} {{ 7 % 3 }} {{ 2 ** 5 }} {{ 'ab' * 2 }}", {}),
    ("{{ raise_exception('bad input') }}", {}),
    # Met on vLLM's example tool templates (Hermes, Llama 3.1 JSON, Mistral 3):
    ("[{{ p.description | trim }}]{% for k, v in p.missing | items %}x{% endfor %}{{ p.missing | length }}", {"p": {}}),
    ("{{ xs | map('trim') | join('|') }}", {"xs": [" a ", "b\n"]}),
    ("{{ xs | selectattr('type', 'equalto', 'text') | map(attribute='text') | map('upper') | join(',') }}",
     {"xs": [{"type": "text", "text": "a"}, {"type": "image"}, {"type": "text", "text": "b"}]}),
    ("{{ c | string }}|{{ n | string }}|{{ b | string }}|{{ 3 | string }}", {"c": [{"type": "text", "text": "it's"}], "n": None, "b": True}),
    ("{{ out[:-1] }}{{ id[-9:] }}", {"out": "{\"a\": 1}", "id": "call_0123456789"}),
    ("{% for k, v in d.items() if k != 'b' %}{{ k }}{{ loop.last }}{% endfor %}", {"d": {"a": 1, "b": 2, "c": 3}}),
    ("{{ m.get('x') }}{{ m.get('y', 'dflt') }}", {"m": {"x": 1}}),
    # Gemma 3 / Qwen3-Coder tool templates:
    ("{% set x = 1 %}{% for i in [1, 2] %}{{ x }}{% set x = 2 %}{{ x }}{% endfor %}{{ x }}", {}),
    ("{% for k, v in d.items() %}{% if not first is defined %}{% endif %}{%- set first = true -%}{{ k }}{% endfor %}{{ first is defined }}",
     {"d": {"a": 1, "b": 2}}),
    ("{% for m in ms | rejectattr('role', 'equalto', 'tool') | selectattr('tool_calls', 'undefined') %}{{ m.role }}{{ loop.index0 }},{% endfor %}",
     {"ms": [{"role": "user"}, {"role": "assistant", "tool_calls": []}, {"role": "tool"}, {"role": "user"}]}),
    ("{{ d is iterable }}{{ d is mapping }}{{ d is sequence }}{{ s is iterable }}{{ 3 is iterable }}", {"d": {"a": 1}, "s": "x"}),
    ("[{{ n | trim }}][{{ 3 | upper }}][{{ b | lower }}]", {"n": None, "b": True}),
    ("{% for m in ms %}{{ loop.previtem.role if loop.previtem else '-' }}>{{ loop.nextitem.role if not loop.last else '-' }};{% endfor %}",
     {"ms": [{"role": "a"}, {"role": "b"}, {"role": "c"}]}),
]


def main():
    out = []
    for template, ctx in CASES:
        try:
            output = _compile_jinja_template(template).render(**ctx)
        except Exception:
            output = None
        out.append({"template": template, "context": ctx, "output": output})
    with open("test/vectors/tokens/jinja.json", "w") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
