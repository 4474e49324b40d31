export * from './names.js';
export * from './validation.js';
export { passesFast } from './fast-validation.js';
export { tokenFingerprint, walkJson, type JsonNode } from './json-walk.js';
export * from './envelope.js';
export * from './commit.js';
export * from './money.js';
export * from './work.dto.js';
export * from './budget.dto.js';
