// class-transformer keeps its metadata storage in a module it does not list as an entry
// point; its types ship separately. The fast validation path reads @Type metadata from it.
declare module 'class-transformer/cjs/storage.js' {
  import type { MetadataStorage } from 'class-transformer/types/MetadataStorage';
  export const defaultMetadataStorage: MetadataStorage;
}
