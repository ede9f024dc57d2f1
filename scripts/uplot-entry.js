// The Console's chart library, re-exported as one ES module for build-console.mjs to bundle.
export { default } from "uplot";
