// Wire DTOs of the directory events, validated when encoded and when read back, and the
// registry both services decode the directory stream with.
import { EventRegistry } from '@tally/contracts';
import { IsIn, IsInt, IsOptional, IsString, Length, Matches, Min } from 'class-validator';

const KEY_ID = /^key_[0-9a-f]{16}$/;
const KEY_HASH = /^sha256:[0-9a-f]{64}$/;
const TENANT_ID = /^[a-z0-9][a-z0-9_-]{0,62}$/;
const PUBLIC_KEY = /^[A-Za-z0-9_-]{43}$/;

export class TenantCreatedDto {
  @Matches(TENANT_ID) tenant_id!: string;
  @IsString() @Length(1, 256) display_name!: string;
  @IsInt() @Min(0) at_ms!: number;
}

export class OperatorKeyCreatedDto {
  @Matches(TENANT_ID) tenant_id!: string;
  @Matches(KEY_ID) key_id!: string;
  @IsIn(['admin', 'issuer', 'reader']) role!: 'admin' | 'issuer' | 'reader';
  @Matches(KEY_HASH) key_hash!: string;
  @IsOptional() @IsInt() @Min(0) expires_at_ms?: number;
  @IsInt() @Min(0) at_ms!: number;
}

export class OperatorKeyDeletedDto {
  @Matches(TENANT_ID) tenant_id!: string;
  @Matches(KEY_ID) key_id!: string;
  @IsInt() @Min(0) at_ms!: number;
}

export class SigningKeyRegisteredDto {
  @IsString() @Length(1, 64) key_id!: string;
  @IsIn(['ed25519']) algorithm!: 'ed25519';
  @Matches(PUBLIC_KEY) public_key!: string;
  @IsInt() @Min(0) at_ms!: number;
}

export class SigningKeyChangedDto {
  @IsString() @Length(1, 64) key_id!: string;
  @IsInt() @Min(0) at_ms!: number;
}

export function directoryEventRegistry(): EventRegistry {
  return new EventRegistry([
    { type: 'TenantCreated', version: 1, payload: TenantCreatedDto },
    { type: 'OperatorKeyCreated', version: 1, payload: OperatorKeyCreatedDto },
    { type: 'OperatorKeyDeleted', version: 1, payload: OperatorKeyDeletedDto },
    { type: 'SigningKeyRegistered', version: 1, payload: SigningKeyRegisteredDto },
    { type: 'SigningKeyActivated', version: 1, payload: SigningKeyChangedDto },
    { type: 'SigningKeyRetired', version: 1, payload: SigningKeyChangedDto },
  ]);
}
