// The Kubernetes install as a cluster would receive it: each overlay of deploy/kustomize
// rendered by `kubectl kustomize` (no cluster needed), for the tests that check it.
import { execFileSync } from 'node:child_process';
import { parseAllDocuments } from 'yaml';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

export const KUSTOMIZE_DIR = 'deploy/kustomize';
export const OVERLAYS = ['dev', 'prod'] as const;
export type Overlay = (typeof OVERLAYS)[number];

/** The digest an overlay carries until a release sets the real one (ADR 0056, ADR 0063). */
export const DIGEST_PLACEHOLDER = 'sha256:DIGEST-PLACEHOLDER-SET-AT-RELEASE';

const rendered = new Map<string, Json[]>();

/** Renders a kustomization directory (an overlay, or the base) into its objects. */
export function render(dir: string): Json[] {
  const cached = rendered.get(dir);
  if (cached) return cached;
  // Bounded: a render of these few files takes well under a second.
  const text = execFileSync('kubectl', ['kustomize', dir], { encoding: 'utf8', timeout: 60_000 });
  const objects: Json[] = [];
  for (const doc of parseAllDocuments(text)) {
    if (doc.errors.length > 0) throw new Error(`${dir}: ${doc.errors.map((e) => e.message).join('; ')}`);
    const object = doc.toJS() as Json | null;
    if (object) objects.push(object);
  }
  rendered.set(dir, objects);
  return objects;
}

export function renderOverlay(overlay: Overlay): Json[] {
  return render(`${KUSTOMIZE_DIR}/overlays/${overlay}`);
}
