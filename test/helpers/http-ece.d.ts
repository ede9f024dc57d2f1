// Types for the one call the push endpoint test helper makes to `http_ece` (it ships none).
declare module "http_ece" {
  import type { ECDH } from "node:crypto";

  const ece: {
    decrypt(
      buffer: Buffer,
      params: { version: "aes128gcm"; privateKey: ECDH; authSecret: string },
    ): Buffer;
  };
  export default ece;
}
