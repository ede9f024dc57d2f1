// Which recorded images are shown: only PNG, JPEG, GIF and WebP, only as a data: URL of plain
// base64 (checked, so the URL can carry nothing else). Everything else is a notice saying why.

const SHOWN_TYPES = new Set(["image/png", "image/jpeg", "image/gif", "image/webp"]);
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/** Whether images of `mimeType` are shown at all (PNG, JPEG, GIF, WebP). */
export function isShownImageType(mimeType: string): boolean {
  return SHOWN_TYPES.has(mimeType);
}

/** Why an image is not shown (`type`: not one of the four; `data`: not base64), or null. */
export function imageRefusal(mimeType: string, data: string): "type" | "data" | null {
  if (!isShownImageType(mimeType)) return "type";
  if (!BASE64.test(data)) return "data";
  return null;
}
