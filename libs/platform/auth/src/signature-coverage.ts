// What a subject signature must be, beyond verifying (ADR 0049): exactly one member in each of
// `Signature` and `Signature-Input`, under the same label, and covering every part of the
// request the route reads. The signature does not cover its own label or the other members of
// the two headers, so they are checked here, and the replay ledger is keyed on the signature's
// bytes, never on header text an attacker may rewrite.
import { createHash } from 'node:crypto';

/** The components every signature must cover. */
export const SIGNED_COMPONENTS = ['@method', '@path', 'content-digest'] as const;

/**
 * Headers a signed route reads that change what the request does or buys: each must be
 * covered whenever the request carries it (the retry key, the fallback legs, the session, the
 * MCP session and its dispatch ceiling), so a captured request cannot be sent again under
 * another key or with other legs.
 */
export const COVERED_WHEN_PRESENT = [
  'idempotency-key',
  'x-tally-fallbacks',
  'x-tally-session-id',
  'x-tally-dispatch-ceiling',
  'mcp-session-id',
] as const;

/** An Ed25519 signature is 64 bytes. */
const ED25519_SIGNATURE_BYTES = 64;

type HeaderBag = Readonly<Record<string, string | string[] | undefined>>;

/**
 * The components a request's signature must cover: the base, `@query` whenever the target has
 * a query string (RFC 9421 §2.2.7), and each header of COVERED_WHEN_PRESENT the request carries.
 * Header names are the lower-case ones Node presents.
 */
export function requiredComponents(target: string, headers: HeaderBag): string[] {
  const out: string[] = [...SIGNED_COMPONENTS];
  if (target.includes('?')) out.push('@query');
  for (const name of COVERED_WHEN_PRESENT) if (headers[name] !== undefined) out.push(name);
  return out;
}

/** The `Accept-Signature` value that asks for these components (RFC 9421 §5.1). */
export function acceptSignatureOf(components: readonly string[]): string {
  return `sig=(${components.map((c) => `"${c}"`).join(' ')});created;alg="ed25519"`;
}

export interface SingleSignature {
  readonly label: string;
  /** The signature's bytes, decoded from the one member of `Signature`. */
  readonly bytes: Buffer;
  /** The component names its `Signature-Input` lists, parameters left off. */
  readonly covered: readonly string[];
}

/**
 * The one signature a request carries, or why it is refused: each header must hold exactly one
 * dictionary member, both under the same label, and the signature must be one canonical
 * base64 byte sequence of an Ed25519 signature's length, with no parameters.
 */
export function singleSignature(signature: string, input: string): SingleSignature | string {
  const signatures = dictionaryMembers(signature);
  const inputs = dictionaryMembers(input);
  if (signatures === undefined || inputs === undefined) return 'Signature or Signature-Input is malformed';
  if (signatures.length !== 1 || inputs.length !== 1)
    return 'exactly one signature is expected: one member in Signature and one in Signature-Input';
  const [member] = signatures as [Member];
  if (member.label !== inputs[0]!.label) return 'Signature and Signature-Input must name the same label';
  const match = /^:([A-Za-z0-9+/]*={0,2}):$/.exec(member.value);
  if (!match) return 'the signature must be one byte sequence (:base64:) without parameters';
  const bytes = Buffer.from(match[1]!, 'base64');
  // Canonical base64 only, so one signature has exactly one spelling.
  if (bytes.toString('base64') !== match[1] || bytes.length !== ED25519_SIGNATURE_BYTES)
    return 'the signature is not a canonical base64 Ed25519 signature';
  const list = /^\(([^()]*)\)/.exec(inputs[0]!.value);
  if (!list) return 'Signature-Input must be an inner list of components';
  const covered = [...list[1]!.matchAll(/"([^"\\]*)"/g)].map((m) => m[1]!);
  return { label: member.label, bytes, covered };
}

/** The required components a signature leaves out; empty when it covers them all. */
export function uncovered(required: readonly string[], covered: readonly string[]): string[] {
  return required.filter((c) => !covered.includes(c));
}

/** The ledger's id of a signature: a digest of its bytes, the same however the headers around it are spelled. */
export function replayIdOf(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('base64url');
}

interface Member {
  readonly label: string;
  readonly value: string;
}

/** More members than this are no request's signature: such a header is refused without reading on. */
const MEMBERS_MAX = 16;

/**
 * The members of an RFC 8941 dictionary, split at the commas outside strings and inner lists;
 * undefined when it cannot be one (an unclosed string or list, a key that is not an RFC 8941
 * key, a member without a value). A repeated key stays two members, so it is refused as such.
 */
export function dictionaryMembers(text: string): Member[] | undefined {
  const parts: string[] = [];
  let start = 0;
  let depth = 0;
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '\\') i++;
      else if (c === '"') quoted = false;
    } else if (c === '"') quoted = true;
    else if (c === '(') depth++;
    else if (c === ')' && --depth < 0) return undefined;
    else if (c === ',' && depth === 0) {
      parts.push(text.slice(start, i));
      start = i + 1;
      if (parts.length > MEMBERS_MAX) return undefined;
    }
  }
  if (quoted || depth !== 0) return undefined;
  parts.push(text.slice(start));
  const members: Member[] = [];
  for (const part of parts) {
    const match = /^[ \t]*([a-z*][a-z0-9_.*-]*)=(\S.*?)[ \t]*$/s.exec(part);
    if (!match) return undefined;
    members.push({ label: match[1]!, value: match[2]! });
  }
  return members;
}
