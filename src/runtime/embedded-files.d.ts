/** `import path from "x.so" with { type: "file" }` (Bun): the embedded file's path. Used by bun-compiled.ts. */
declare module "*.so" {
  const path: string;
  export default path;
}
