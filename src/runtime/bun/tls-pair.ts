/**
 * A TLS certificate chain and its private key read from PEM files (--tls-cert, --tls-key) and
 * checked before anything serves them: the first certificate parses, the key parses, and the key
 * is the certificate's. A pair that fails is an error naming the file, never a listener serving
 * a certificate its key cannot sign for. Node's crypto and fs (both work on Bun).
 */
import { createPrivateKey, X509Certificate } from "node:crypto";
import { readBoundedText } from "./bounded-file.ts";

/** A chain of a few certificates is a few KB; anything past this is the wrong file. */
const MAX_PEM_BYTES = 256 * 1024;

/** The pair cannot be served: the message names the file and why. */
export class TlsPairError extends Error {
  override readonly name = "TlsPairError";
}

export interface TlsPair {
  readonly cert: string;
  readonly key: string;
  /** The leaf's subject and expiry, for the log. */
  readonly subject: string;
  readonly notAfter: string;
}

export async function readTlsPair(certPath: string, keyPath: string): Promise<TlsPair> {
  const [cert, key] = await Promise.all([
    readBoundedText(certPath, MAX_PEM_BYTES).catch((e: Error) =>
      Promise.reject(new TlsPairError(`--tls-cert ${certPath}: cannot read (${e.message})`)),
    ),
    readBoundedText(keyPath, MAX_PEM_BYTES).catch((e: Error) =>
      Promise.reject(new TlsPairError(`--tls-key ${keyPath}: cannot read (${e.message})`)),
    ),
  ]);
  let leaf: X509Certificate;
  try {
    leaf = new X509Certificate(cert);
  } catch (e) {
    throw new TlsPairError(
      `--tls-cert ${certPath}: not a PEM certificate (${(e as Error).message})`,
    );
  }
  let privateKey;
  try {
    privateKey = createPrivateKey(key);
  } catch (e) {
    throw new TlsPairError(`--tls-key ${keyPath}: not a PEM private key (${(e as Error).message})`);
  }
  if (!leaf.checkPrivateKey(privateKey)) {
    throw new TlsPairError(
      `--tls-key ${keyPath}: not the private key of the certificate in ${certPath} (${leaf.subject})`,
    );
  }
  return {
    cert,
    key,
    subject: leaf.subject.replace(/\n/g, ", "),
    notAfter: new Date(leaf.validTo).toISOString(),
  };
}
