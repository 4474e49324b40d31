// Who may call a route is part of its signature: every HTTP handler declares its access
// rules with @Access, next to its path. The guard enforces them, and the route table built
// from the same metadata lets the boot refuse an undeclared route and lets the access-table
// test enumerate every route with its rule.
import { SetMetadata } from '@nestjs/common';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants.js';

/**
 * - `public`: no credential at all (liveness, the OpenAPI document, published keys).
 * - `admin`: an operator key or OIDC token with role admin.
 * - `issuer`: role issuer (of the resource's tenant, which the handler's query enforces), or admin.
 * - `reader`: any operator role (reader, issuer, admin), scoped to its tenant by the handler's query.
 * - `capability`: a capability token (Authorization: Bearer, x-api-key, or the body's `token`).
 * - `possession`: the handler checks a proof carried in the body (a parent token, a token of the
 *   capability or an ancestor, an admission proof), or decides how much the caller is shown
 *   (/readyz: the status to anyone, the report to an operator); the guard lets a call without a
 *   credential through, and refuses one whose credential does not verify.
 */
export type AccessRule = 'public' | 'admin' | 'issuer' | 'reader' | 'capability' | 'possession';

export const ACCESS_RULES: readonly AccessRule[] = ['public', 'admin', 'issuer', 'reader', 'capability', 'possession'];

const ACCESS_METADATA = 'tally:access';

/** Declares who may call this route. A route without it makes the service refuse to boot. */
export function Access(...rules: [AccessRule, ...AccessRule[]]): MethodDecorator {
  if (rules.includes('public') && rules.length > 1) throw new Error('@Access: public cannot be combined');
  return SetMetadata(ACCESS_METADATA, Object.freeze([...rules]));
}

export function accessOf(handler: object): readonly AccessRule[] | undefined {
  return Reflect.getMetadata(ACCESS_METADATA, handler) as readonly AccessRule[] | undefined;
}

export interface RouteEntry {
  readonly controller: string;
  readonly handler: string;
  readonly method: string;
  /** The path with Nest's `:param` placeholders, without a leading slash. */
  readonly path: string;
  readonly access: readonly AccessRule[] | undefined;
}

// Nest's RequestMethod enum, by index (GET = 0 …), as written in its route metadata.
const METHODS = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'ALL', 'OPTIONS', 'HEAD', 'SEARCH'] as const;

/** Every HTTP route of these controllers, with its declared access (undefined when it declares none). */
export function routeTable(controllers: readonly (abstract new (...args: never[]) => unknown)[]): RouteEntry[] {
  const out: RouteEntry[] = [];
  for (const controller of controllers) {
    const base = String(Reflect.getMetadata(PATH_METADATA, controller) ?? '');
    const proto = controller.prototype as Record<string, unknown>;
    for (const name of Object.getOwnPropertyNames(proto)) {
      const handler = proto[name];
      if (name === 'constructor' || typeof handler !== 'function') continue;
      const path = Reflect.getMetadata(PATH_METADATA, handler) as string | string[] | undefined;
      if (path === undefined) continue;
      const method = METHODS[Number(Reflect.getMetadata(METHOD_METADATA, handler) ?? 0)] ?? 'GET';
      for (const p of Array.isArray(path) ? path : [path]) {
        out.push({
          controller: controller.name,
          handler: name,
          method,
          path: joinPath(base, p),
          access: accessOf(handler),
        });
      }
    }
  }
  return out;
}

function joinPath(base: string, path: string): string {
  return [base, path]
    .map((s) => s.replace(/^\/+|\/+$/g, ''))
    .filter((s) => s.length > 0)
    .join('/');
}

/** Throws naming every route that declares no access: an undeclared route is never open by default. */
export function assertEveryRouteDeclared(routes: readonly RouteEntry[]): void {
  const open = routes.filter((r) => r.access === undefined || r.access.length === 0);
  if (open.length === 0) return;
  const list = open.map((r) => `${r.method} /${r.path} (${r.controller}.${r.handler})`).join(', ');
  throw new Error(`every HTTP route must declare who may call it with @Access; these do not: ${list}`);
}
