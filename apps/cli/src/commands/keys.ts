// `tally keys list|rotate|retire`: the authority's signing keys (ADR 0014). `list` reads the
// published keys (no credential needed), or with --all every key the ledger knows (admin);
// `rotate` adds a key and makes it active without invalidating what the old one signed;
// `retire` unpublishes a key that is no longer active; `generate` writes a key file offline,
// for keyrings the replicas read from a mounted secret (then `rotate --key-id`).
import { Command } from 'commander';
import { ExitCode } from '../cli/exit-codes.js';
import { TallyHttp } from '../cli/http.js';
import { printFields, printJson, printTable } from '../cli/output.js';
import { exitWith, globalsOf } from '../cli/program.js';

interface SigningKey {
  key_id: string;
  algorithm: string;
  public_key: string;
  status: string;
  registered_at?: string;
  activated_at?: string;
  retired_at?: string;
  held_here?: boolean;
  previous_key_id?: string;
}

export function keysCommand(): Command {
  const keys = new Command('keys').description("the authority's signing keys: list, rotate, retire, generate");
  keys
    .command('list')
    .description('the published signing keys (active first); --all: every key, retired ones too (admin)')
    .option('--all', 'include retired keys, with their dates (needs an admin key)')
    .action(
      exitWith(async (options: { all?: boolean }, command: Command) => {
        const globals = globalsOf(command);
        const http = new TallyHttp(globals);
        const body = options.all
          ? await http.get<{ active_key_id: string | null; keys: SigningKey[] }>('authority', '/v1/signing-keys')
          : await http.get<{ keys: SigningKey[] }>('authority', '/v1/keys');
        if (globals.json) printJson(body);
        else if (options.all)
          printTable(
            ['key_id', 'status', 'registered_at', 'activated_at', 'retired_at', 'held_here'],
            body.keys.map((k) => [k.key_id, k.status, k.registered_at, k.activated_at, k.retired_at, k.held_here]),
          );
        else
          printTable(
            ['key_id', 'status', 'algorithm', 'public_key'],
            body.keys.map((k) => [k.key_id, k.status, k.algorithm, k.public_key]),
          );
        return ExitCode.ok;
      }),
    );
  keys
    .command('rotate')
    .description('add a signing key and make it active; tokens and receipts of the old key keep verifying (admin)')
    .option('--key-id <id>', "activate this key from the authority's keyring instead of generating one")
    .action(
      exitWith(async (options: { keyId?: string }, command: Command) => {
        const globals = globalsOf(command);
        const key = await new TallyHttp(globals).post<SigningKey>(
          'authority',
          '/v1/signing-keys/rotate',
          options.keyId === undefined ? {} : { key_id: options.keyId },
        );
        if (globals.json) printJson(key);
        else
          printFields([
            ['key_id', key.key_id],
            ['status', key.status],
            ['public_key', key.public_key],
            ['activated_at', key.activated_at],
            ['previous_key_id', key.previous_key_id],
          ]);
        return ExitCode.ok;
      }),
    );
  keys
    .command('generate')
    .description(
      'offline: write a new signing key as <key_id>.pem (0600) into a keyring directory, for rotate --key-id',
    )
    .requiredOption('--out <dir>', 'the keyring directory (created 0700 when missing)')
    .action(
      exitWith(async (options: { out: string }, command: Command) => {
        const globals = globalsOf(command);
        const { generateKey } = await import('../generate-key.command.js');
        const out = generateKey(options.out);
        if (globals.json) printJson(out);
        else
          printFields([
            ['key_id', out.key_id],
            ['public_key', out.public_key],
            ['file', out.file],
          ]);
        return ExitCode.ok;
      }),
    );
  keys
    .command('retire')
    .description('unpublish a key that is not active: what it signed no longer verifies against /v1/keys (admin)')
    .argument('<key_id>', 'the key to retire')
    .action(
      exitWith(async (keyId: string, _options: unknown, command: Command) => {
        const globals = globalsOf(command);
        const key = await new TallyHttp(globals).post<SigningKey>(
          'authority',
          `/v1/signing-keys/${encodeURIComponent(keyId)}/retire`,
          {},
        );
        if (globals.json) printJson(key);
        else
          printFields([
            ['key_id', key.key_id],
            ['status', key.status],
            ['retired_at', key.retired_at],
          ]);
        return ExitCode.ok;
      }),
    );
  return keys;
}
