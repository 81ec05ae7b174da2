/**
 * vLLM's content-format detection (vllm/renderers/hf.py `_detect_content_format`, vLLM main
 * 2026): a template that loops over a message's `content` (`{% for c in message['content'] %}`)
 * gets content as OpenAI parts ("openai"); any other template gets it as one string of the
 * text parts joined by "\n" ("string"). Same walk as vLLM's, on @huggingface/jinja's AST:
 * variables assigned from `messages` (BFS over `set`), loops over them give message
 * variables, and a loop over `<message var>.content` / `['content']` means "openai".
 * It does not build a control-flow graph (neither does vLLM).
 */
import { Template } from "@huggingface/jinja";

export type ContentFormat = "string" | "openai";

interface Node {
  type: string;
  [key: string]: unknown;
}

function isNode(v: unknown): v is Node {
  return v !== null && typeof v === "object" && typeof (v as { type?: unknown }).type === "string";
}

function* walk(node: unknown): Generator<Node> {
  if (Array.isArray(node)) {
    for (const n of node) yield* walk(n);
    return;
  }
  if (!isNode(node)) return;
  yield node;
  for (const [k, v] of Object.entries(node)) {
    if (k !== "type" && v !== null && typeof v === "object") yield* walk(v);
  }
}

function isVar(node: unknown, name: string): boolean {
  return isNode(node) && node.type === "Identifier" && node.value === name;
}

/** `x.key` or `x['key']`. */
function isAttr(node: unknown, name: string, key: string): boolean {
  if (!isNode(node) || node.type !== "MemberExpression") return false;
  if (!isVar(node.object, name)) return false;
  const p = node.property as Node;
  if (node.computed) return p.type === "StringLiteral" && p.value === key;
  return p.type === "Identifier" && p.value === key;
}

/** vLLM's `_is_var_or_elems_access`: through filters, tests and slices. */
function isVarOrElems(node: unknown, name: string, key?: string): boolean {
  if (!isNode(node)) return false;
  if (node.type === "FilterExpression" || node.type === "TestExpression")
    return isVarOrElems(node.operand, name, key);
  if (
    node.type === "MemberExpression" &&
    node.computed &&
    isNode(node.property) &&
    node.property.type === "SliceExpression"
  ) {
    return isVarOrElems(node.object, name, key);
  }
  return key === undefined ? isVar(node, name) : isAttr(node, name, key);
}

function assignedFrom(root: unknown, varname: string): string[] {
  const names = [varname];
  const queue = [varname];
  while (queue.length > 0) {
    const v = queue.shift()!;
    for (const n of walk(root)) {
      if (n.type !== "Set" || !isNode(n.assignee) || n.assignee.type !== "Identifier") continue;
      if (!isVarOrElems(n.value, v)) continue;
      const lhs = n.assignee.value as string;
      if (!names.includes(lhs)) {
        names.push(lhs);
        queue.push(lhs);
      }
    }
  }
  return names;
}

function loopTargets(root: unknown, iterVars: readonly string[], key?: string): string[] {
  const out: string[] = [];
  for (const n of walk(root)) {
    if (n.type !== "For" || !isNode(n.loopvar) || n.loopvar.type !== "Identifier") continue;
    if (iterVars.some((v) => isVarOrElems(n.iterable, v, key))) out.push(n.loopvar.value as string);
  }
  return out;
}

export function detectContentFormat(source: string): ContentFormat {
  let root: unknown;
  try {
    root = new Template(source).parsed;
  } catch {
    return "string"; // vLLM's default when the template cannot be parsed
  }
  const messageVars = loopTargets(root, assignedFrom(root, "messages"));
  return loopTargets(root, messageVars, "content").length > 0 ? "openai" : "string";
}
