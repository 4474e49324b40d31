// The local stack's bootstrap admin key. With TALLY_ADMIN_KEY unset, `tally up` keeps one
// in .tally/admin-key (mode 0600), creating it on first start, so the README's two
// commands work as they are and the key survives restarts. It is never printed: the
// banner says where it is.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, relative, resolve } from 'node:path';
import { newAdminKey } from '@tally/platform-auth';

export interface LocalAdminKey {
  readonly key: string;
  /** Where it is kept, relative to the checkout; undefined when it came from TALLY_ADMIN_KEY. */
  readonly file: string | undefined;
}

export function localAdminKey(root: string, env: NodeJS.ProcessEnv): LocalAdminKey {
  const given = env['TALLY_ADMIN_KEY'];
  if (given !== undefined && given !== '') return { key: given, file: undefined };
  const file = resolve(root, env['TALLY_DATA_DIR'] ?? '.tally', 'admin-key');
  if (!existsSync(file)) {
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, `${newAdminKey()}\n`, { mode: 0o600, flag: 'wx' });
  }
  return { key: readFileSync(file, 'utf8').trim(), file: relative(root, file) };
}
