// The authority's published signing keys, with no credential: GET /v1/keys in Tally's own
// shape and GET /.well-known/jwks.json as an RFC 7517 key set (OKP/Ed25519). Both list
// every key that is not retired, so tokens, proofs and receipts verify by key id.
import { Controller, Get, Inject } from '@nestjs/common';
import type { PublishedKeys } from '@tally/directory-service';
import { Access } from '@tally/platform-auth';
import { PUBLISHED_KEYS } from './admissions.controller.js';

@Controller()
export class KeysController {
  constructor(@Inject(PUBLISHED_KEYS) private readonly keys: PublishedKeys) {}

  @Get('v1/keys')
  @Access('public')
  list() {
    return { keys: this.keys.list() };
  }

  @Get('.well-known/jwks.json')
  @Access('public')
  jwks() {
    return this.keys.jwks();
  }
}
