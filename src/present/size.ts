// Sizes as people read them, in binary units: a file in the catalogue, an image's bytes.

/** `512 B`, `12.4 KiB`, `3.1 MiB`. */
export function formatSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}
