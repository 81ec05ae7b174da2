// The official npm `openai` client against a router: one chat completion and one streamed
// (argv: base_url). Trust comes from the environment only (NODE_EXTRA_CA_CERTS), as an operator
// would set it. Prints one JSON line; a connection failure exits 3 with the cause's text.
import OpenAI from "openai";

const client = new OpenAI({ baseURL: process.argv[2], apiKey: "unused", maxRetries: 0 });
try {
  const done = await client.chat.completions.create({ model: "switchyard-sim", messages: [{ role: "user", content: "hello over tls" }], max_tokens: 4 });
  const stream = await client.chat.completions.create({ model: "switchyard-sim", messages: [{ role: "user", content: "hello over tls" }], max_tokens: 4, stream: true });
  let streamed = "";
  for await (const c of stream) streamed += c.choices[0]?.delta?.content ?? "";
  console.log(JSON.stringify({ client: `npm openai ${OpenAI.VERSION ?? ""}`.trim(), text: done.choices[0].message.content, usage: done.usage.completion_tokens, streamed }));
} catch (e) {
  if (e instanceof OpenAI.APIConnectionError) {
    console.log(JSON.stringify({ error: String(e.cause?.cause ?? e.cause ?? e) }));
    process.exit(3);
  }
  throw e;
}
