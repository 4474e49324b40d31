// Registers the TypeScript loader: `node --import ./tools/register.mjs file.ts`.
import { register } from 'node:module';
import 'reflect-metadata';

register('./ts-loader.mjs', import.meta.url);
