// What one image in a prompt can cost, in input tokens, by the providers' published formulas
// (ADR 0042). The size comes from the image's own header when its data is inline (PNG, JPEG,
// WebP); an image by URL, or one whose header cannot be read, costs the most any image can
// cost on that provider. Every rounding goes up: this sizes a hold, never a bill.

export interface ImageSize {
  readonly width: number;
  readonly height: number;
}

/** OpenAI, high detail: 85 tokens for the image and 170 for each 512-pixel tile it covers after scaling. */
export const OPENAI_IMAGE_BASE_TOKENS = 85;
export const OPENAI_IMAGE_TILE_TOKENS = 170;
const OPENAI_TILE_PX = 512;
/** OpenAI first fits the image in a 2048-pixel square, then scales it so its short side is 768 pixels. */
const OPENAI_FIT_PX = 2_048;
const OPENAI_SHORT_SIDE_PX = 768;
/** After that scaling at most 2 × 4 tiles remain (768 × 2048): the most one image costs on OpenAI. */
export const OPENAI_IMAGE_TOKENS_MAX = OPENAI_IMAGE_BASE_TOKENS + OPENAI_IMAGE_TILE_TOKENS * 8;

/** Anthropic: width × height / 750 tokens, after scaling the long edge down to 1568 pixels. */
const ANTHROPIC_PIXELS_PER_TOKEN = 750;
const ANTHROPIC_LONG_EDGE_PX = 1_568;
/** A square at the long-edge limit: no image Anthropic accepts costs more after its scaling. */
export const ANTHROPIC_IMAGE_TOKENS_MAX = Math.ceil(
  (ANTHROPIC_LONG_EDGE_PX * ANTHROPIC_LONG_EDGE_PX) / ANTHROPIC_PIXELS_PER_TOKEN,
);

/** Scales both sides by target/side, rounding up, so the scaled image is never smaller than the provider's. */
function scaled(size: ImageSize, side: number, target: number): ImageSize {
  return { width: Math.ceil((size.width * target) / side), height: Math.ceil((size.height * target) / side) };
}

/**
 * OpenAI's tile formula. "low" detail is a flat 85 tokens. OpenAI's text says the short side is
 * scaled to 768 pixels without saying whether a smaller image is scaled up, so the bound assumes
 * it is (a small image is held as if its short side were 768 pixels, the long side capped at 2048).
 */
export function openAiImageTokens(size: ImageSize | undefined, detail: string | undefined): number {
  if (detail === 'low') return OPENAI_IMAGE_BASE_TOKENS;
  if (size === undefined) return OPENAI_IMAGE_TOKENS_MAX;
  const long = Math.max(size.width, size.height);
  const fitted = long > OPENAI_FIT_PX ? scaled(size, long, OPENAI_FIT_PX) : size;
  const short = Math.min(fitted.width, fitted.height);
  const { width, height } = scaled(fitted, short, OPENAI_SHORT_SIDE_PX);
  const tiles =
    Math.ceil(Math.min(width, OPENAI_FIT_PX) / OPENAI_TILE_PX) *
    Math.ceil(Math.min(height, OPENAI_FIT_PX) / OPENAI_TILE_PX);
  return OPENAI_IMAGE_BASE_TOKENS + OPENAI_IMAGE_TILE_TOKENS * tiles;
}

/** Anthropic's pixel formula; Anthropic only ever scales images down. */
export function anthropicImageTokens(size: ImageSize | undefined): number {
  if (size === undefined) return ANTHROPIC_IMAGE_TOKENS_MAX;
  const long = Math.max(size.width, size.height);
  const { width, height } = long > ANTHROPIC_LONG_EDGE_PX ? scaled(size, long, ANTHROPIC_LONG_EDGE_PX) : size;
  return Math.min(Math.ceil((width * height) / ANTHROPIC_PIXELS_PER_TOKEN), ANTHROPIC_IMAGE_TOKENS_MAX);
}

/** The most JPEG segments read looking for the frame header; past it the size is unknown (and held at the maximum). */
const JPEG_SEGMENTS_MAX = 64;

/** The pixel size an inline image's header declares (base64, as the dialects carry it), or undefined. */
export function imageSizeOf(base64: string): ImageSize | undefined {
  const bytes = new Base64Bytes(base64);
  const size = pngSize(bytes) ?? jpegSize(bytes) ?? webpSize(bytes);
  return size && size.width > 0 && size.height > 0 ? size : undefined;
}

function pngSize(b: Base64Bytes): ImageSize | undefined {
  if (b.u32be(0) !== 0x89504e47 || b.u32be(4) !== 0x0d0a1a0a || b.u32be(12) !== 0x49484452) return undefined;
  return sizeOf(b.u32be(16), b.u32be(20));
}

/** Start-of-frame markers carry the size: every SOFn except DHT (C4), JPG (C8) and DAC (CC). */
function isStartOfFrame(marker: number): boolean {
  return marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc;
}

function jpegSize(b: Base64Bytes): ImageSize | undefined {
  if (b.at(0) !== 0xff || b.at(1) !== 0xd8) return undefined;
  let at = 2;
  for (let segment = 0; segment < JPEG_SEGMENTS_MAX; segment++) {
    if (b.at(at) !== 0xff) return undefined;
    const marker = b.at(at + 1);
    if (marker === undefined || marker === 0xd9 || marker === 0xda) return undefined;
    if (marker === 0xff) at += 1;
    else if (isStartOfFrame(marker)) return sizeOf(b.u16be(at + 7), b.u16be(at + 5));
    else if (marker === 0x01 || (marker >= 0xd0 && marker <= 0xd8)) at += 2;
    else {
      const length = b.u16be(at + 2);
      if (length === undefined) return undefined;
      at += 2 + length;
    }
  }
  return undefined;
}

function webpSize(b: Base64Bytes): ImageSize | undefined {
  if (b.u32be(0) !== 0x52494646 || b.u32be(8) !== 0x57454250) return undefined;
  const chunk = b.u32be(12);
  if (chunk === 0x56503820) {
    // "VP8 ": a lossy frame; 14-bit sizes after the frame tag and start code.
    const w = b.u16le(26);
    const h = b.u16le(28);
    return w === undefined || h === undefined ? undefined : sizeOf(w & 0x3fff, h & 0x3fff);
  }
  if (chunk === 0x5650384c) {
    // "VP8L": lossless; after the 0x2f signature, 14 bits of width - 1 then 14 of height - 1.
    const [b0, b1, b2, b3] = [b.at(21), b.at(22), b.at(23), b.at(24)];
    if (b.at(20) !== 0x2f || b0 === undefined || b1 === undefined || b2 === undefined || b3 === undefined)
      return undefined;
    return sizeOf(1 + (((b1 & 0x3f) << 8) | b0), 1 + (((b3 & 0x0f) << 10) | (b2 << 2) | ((b1 & 0xc0) >> 6)));
  }
  if (chunk === 0x56503858) {
    // "VP8X": the extended format's canvas, 24 bits each of width - 1 and height - 1.
    const w = b.u24le(24);
    const h = b.u24le(27);
    return w === undefined || h === undefined ? undefined : sizeOf(w + 1, h + 1);
  }
  return undefined;
}

function sizeOf(width: number | undefined, height: number | undefined): ImageSize | undefined {
  return width === undefined || height === undefined ? undefined : { width, height };
}

/** Reads single bytes of base64 text (standard or URL alphabet) without decoding the whole image. */
class Base64Bytes {
  constructor(private readonly text: string) {}

  at(index: number): number | undefined {
    const quad = Math.floor(index / 3) * 4;
    const offset = index % 3;
    const first = sextet(this.text.charCodeAt(quad + offset));
    const second = sextet(this.text.charCodeAt(quad + offset + 1));
    if (first < 0 || second < 0) return undefined;
    if (offset === 0) return ((first << 2) | (second >> 4)) & 0xff;
    if (offset === 1) return ((first << 4) | (second >> 2)) & 0xff;
    return ((first << 6) | second) & 0xff;
  }

  u16be(index: number): number | undefined {
    return this.join(index, 2, false);
  }

  u16le(index: number): number | undefined {
    return this.join(index, 2, true);
  }

  u24le(index: number): number | undefined {
    return this.join(index, 3, true);
  }

  u32be(index: number): number | undefined {
    return this.join(index, 4, false);
  }

  private join(index: number, count: number, littleEndian: boolean): number | undefined {
    let value = 0;
    for (let i = 0; i < count; i++) {
      const byte = this.at(littleEndian ? index + count - 1 - i : index + i);
      if (byte === undefined) return undefined;
      value = value * 256 + byte;
    }
    return value;
  }
}

/** The 6-bit value of a base64 character, or -1 (padding, past the end, or not base64). */
function sextet(code: number): number {
  if (code >= 65 && code <= 90) return code - 65;
  if (code >= 97 && code <= 122) return code - 71;
  if (code >= 48 && code <= 57) return code + 4;
  if (code === 43 || code === 45) return 62;
  if (code === 47 || code === 95) return 63;
  return -1;
}
