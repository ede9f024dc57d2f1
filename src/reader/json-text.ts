// JSON text of a value that came from JSON.parse, at any nesting depth. V8's JSON.stringify
// recurses on the native stack and throws RangeError a few thousand levels down (a 10 KB line
// of nested arrays is enough), while its JSON.parse accepts any depth: so a value the parser
// gave us must be serialized without recursion. The result equals JSON.stringify's.
import { constants } from "node:buffer";

type Frame =
  | { array: unknown[]; next: number }
  | { object: Record<string, unknown>; keys: string[]; next: number };

/**
 * JSON.stringify(value) for a value JSON.parse made (plain objects, arrays, strings, numbers,
 * booleans, null), or null when the text would be longer than the longest string V8 can make
 * (numbers can grow when re-serialized: `1e20` becomes 21 digits).
 */
export function jsonText(value: unknown): string | null {
  try {
    return JSON.stringify(value) ?? "null";
  } catch (e) {
    // Too deep for the native serializer (RangeError: Maximum call stack size exceeded), or
    // too long (RangeError: Invalid string length): the explicit stack below handles the one
    // and reports the other as null. Anything else is a bug.
    if (!(e instanceof RangeError)) throw e;
  }
  return serializeIteratively(value);
}

function serializeIteratively(value: unknown): string | null {
  const out: string[] = [];
  let length = 0;
  const emit = (s: string): boolean => {
    length += s.length;
    out.push(s);
    return length <= constants.MAX_STRING_LENGTH;
  };
  const stack: Frame[] = [];
  // `pending` is the next value to write; undefined once a container's members are exhausted.
  let pending: unknown = value;
  let has = true;
  for (;;) {
    if (has) {
      has = false;
      if (Array.isArray(pending)) {
        if (!emit("[")) return null;
        stack.push({ array: pending, next: 0 });
      } else if (typeof pending === "object" && pending !== null) {
        if (!emit("{")) return null;
        const object = pending as Record<string, unknown>;
        stack.push({ object, keys: Object.keys(object), next: 0 });
      } else if (!emit(JSON.stringify(pending) ?? "null")) {
        return null;
      }
    }
    const top = stack[stack.length - 1];
    if (top === undefined) break;
    if ("array" in top) {
      if (top.next < top.array.length) {
        if (top.next > 0 && !emit(",")) return null;
        pending = top.array[top.next++];
        has = true;
        continue;
      }
      stack.pop();
      if (!emit("]")) return null;
    } else {
      if (top.next < top.keys.length) {
        const key = top.keys[top.next++]!;
        if (!emit(`${top.next > 1 ? "," : ""}${JSON.stringify(key)}:`)) return null;
        pending = top.object[key];
        has = true;
        continue;
      }
      stack.pop();
      if (!emit("}")) return null;
    }
  }
  return out.join("");
}
