// The official npm `openai` client streaming one answer through a router (argv: base_url model kind
// include_usage prompt; kind: chat or completions). Its fetch is wrapped to keep the raw bytes
// the client parsed. Prints one JSON line: the raw bytes as text and the chunks the client
// yielded, as the client built them.
import OpenAI from "openai";

const [base, model, kind, includeUsage, prompt] = process.argv.slice(2);
let raw = "";
const decoder = new TextDecoder();
const keepBytes = async (url, init) => {
  const res = await fetch(url, init);
  if (res.body === null) return res;
  const [mine, kept] = res.body.tee();
  (async () => {
    for await (const c of kept) raw += decoder.decode(c, { stream: true });
  })();
  return new Response(mine, { status: res.status, statusText: res.statusText, headers: res.headers });
};
const client = new OpenAI({ baseURL: base, apiKey: "unused", maxRetries: 0, fetch: keepBytes });
const options = includeUsage === "true" ? { stream_options: { include_usage: true } } : {};
const stream =
  kind === "chat"
    ? await client.chat.completions.create({ model, messages: [{ role: "user", content: prompt }], max_tokens: 8, stream: true, ...options })
    : await client.completions.create({ model, prompt, max_tokens: 8, stream: true, ...options });
const chunks = [];
for await (const c of stream) chunks.push(c);
console.log(JSON.stringify({ client: `npm openai ${OpenAI.VERSION ?? ""}`.trim(), raw, chunks }));
