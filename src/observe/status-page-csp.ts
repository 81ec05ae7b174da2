/**
 * The status page's Content-Security-Policy, defence in depth behind its rule of rendering
 * every payload as text: should a worker name, model or error ever reach the DOM as markup,
 * no script but the page's own runs (script-src holds only the SHA-256 of its one inline
 * script), it can talk only to this router (connect-src 'self'), load nothing from elsewhere,
 * and cannot be framed. Styles stay inline-allowed: the page sets style attributes, and a
 * style cannot run code.
 */
import { STATUS_PAGE_HTML } from "./status-page.ts";

/** The text between the page's <script> and </script>, exactly as the browser hashes it. */
function inlineScript(html: string): string {
  const open = html.indexOf("<script>");
  const close = html.indexOf("</script>", open);
  if (open < 0 || close < 0) throw new Error("status page: no inline script to hash");
  return html.slice(open + "<script>".length, close);
}

async function sha256Base64(text: string): Promise<string> {
  const digest = new Uint8Array(
    await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)),
  );
  let bin = "";
  for (const b of digest) bin += String.fromCharCode(b);
  return btoa(bin);
}

export async function statusPageCsp(html: string = STATUS_PAGE_HTML): Promise<string> {
  const hash = await sha256Base64(inlineScript(html));
  return [
    "default-src 'none'",
    `script-src 'sha256-${hash}'`,
    "style-src 'unsafe-inline'",
    "connect-src 'self'",
    "img-src 'self' data:",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join("; ");
}
