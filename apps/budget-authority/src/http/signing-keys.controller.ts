// The authority's signing keys for admins (ADR 0014): every key with its state, rotation
// (a new key from the keyring, registered and made active; outstanding tokens and old
// receipts keep verifying by key id), and retirement of a key that is no longer active.
// The public halves are in the ledger; the private halves stay in the keyring.
import { Body, Controller, Get, HttpCode, Inject, Param, Post } from '@nestjs/common';
import type { Ed25519Signer, SigningKeyring } from '@tally/budget-infrastructure';
import type { Rejection, SigningKeyRecord } from '@tally/directory-domain';
import type { DirectoryCommands, DirectoryView } from '@tally/directory-service';
import { ProblemException } from '@tally/platform-app';
import { Access } from '@tally/platform-auth';
import { IsOptional, Matches } from 'class-validator';
import { DIRECTORY_COMMANDS, DIRECTORY_VIEW } from './tenants.controller.js';

export const SIGNING_KEYRING = Symbol('SIGNING_KEYRING');

export class RotateSigningKeyDto {
  /** A key already in the keyring (placed there by the operator, e.g. a mounted secret); else a new one. */
  @IsOptional()
  @Matches(/^[A-Za-z0-9_-]{1,64}$/, { message: 'key_id must be 1 to 64 of A-Z a-z 0-9 _ -' })
  key_id?: string;
}

const STATUS: Partial<Record<Rejection['code'], number>> = {
  signing_key_unknown: 404,
  signing_key_conflict: 409,
  signing_key_retired: 409,
  signing_key_active: 409,
};

function refusedBy(rejection: Rejection): ProblemException {
  return new ProblemException(STATUS[rejection.code] ?? 409, rejection.code, rejection.message);
}

const iso = (ms: number | undefined) => (ms === undefined ? undefined : new Date(ms).toISOString());

export function signingKeyToWire(k: SigningKeyRecord, heldHere: boolean) {
  return {
    key_id: k.key_id,
    algorithm: k.algorithm,
    public_key: k.public_key,
    status: k.status,
    registered_at: iso(k.registered_at_ms),
    ...(k.activated_at_ms === undefined ? {} : { activated_at: iso(k.activated_at_ms) }),
    ...(k.retired_at_ms === undefined ? {} : { retired_at: iso(k.retired_at_ms) }),
    /** Whether the replica that answers holds the private key (its keyring has the file). */
    held_here: heldHere,
  };
}

@Controller('v1/signing-keys')
export class SigningKeysController {
  constructor(
    @Inject(DIRECTORY_COMMANDS) private readonly commands: DirectoryCommands,
    @Inject(DIRECTORY_VIEW) private readonly view: DirectoryView,
    @Inject(SIGNING_KEYRING) private readonly keyring: SigningKeyring,
  ) {}

  /** Every key the ledger knows, retired ones too: an auditor can still check what they signed. */
  @Get()
  @Access('admin')
  list() {
    const keys = this.view.signingKeys().sort((a, b) => a.registered_at_ms - b.registered_at_ms);
    return {
      active_key_id: this.view.activeSigningKeyId ?? null,
      keys: keys.map((k) => signingKeyToWire(k, this.keyring.holds(k.key_id))),
    };
  }

  @Post('rotate')
  @HttpCode(200)
  @Access('admin')
  async rotate(@Body() body: RotateSigningKeyDto) {
    const previous = this.view.activeSigningKeyId;
    const key = this.keyOf(body.key_id);
    const registered = await this.commands.registerSigningKey(key.keyId, key.publicKeyBase64Url());
    if (!registered.ok) throw refusedBy(registered.rejection);
    const activated = await this.commands.activateSigningKey(key.keyId);
    if (!activated.ok) throw refusedBy(activated.rejection);
    const record = activated.value.keys.get(key.keyId)!;
    return { ...signingKeyToWire(record, true), ...(previous === undefined ? {} : { previous_key_id: previous }) };
  }

  @Post(':id/retire')
  @HttpCode(200)
  @Access('admin')
  async retire(@Param('id') id: string) {
    const out = await this.commands.retireSigningKey(id);
    if (!out.ok) throw refusedBy(out.rejection);
    return signingKeyToWire(out.value.keys.get(id)!, this.keyring.holds(id));
  }

  private keyOf(keyId: string | undefined): Ed25519Signer {
    if (keyId !== undefined) {
      const held = this.keyring.signer(keyId);
      if (!held)
        throw new ProblemException(404, 'signing_key_unknown', `signing key ${keyId} is not in this replica's keyring`);
      return held;
    }
    try {
      return this.keyring.generate();
    } catch {
      // The reason names a directory of this machine: it is for the operator's log, not the caller.
      throw new ProblemException(
        503,
        'keyring_unwritable',
        "A new signing key cannot be written to this replica's keyring; check authority.keyring_dir",
      );
    }
  }
}
