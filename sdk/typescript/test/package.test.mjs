// The package itself: metadata, no runtime dependencies, the checked-in
// dist/ matches src/, and the published types work for TypeScript users
// (and type-check the todo example).

import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { after, it } from "node:test";

import { cleanup, run, SDK_DIR, tempDir } from "./helpers/proc.mjs";

after(cleanup);

const TSC = join(SDK_DIR, "node_modules", "typescript", "bin", "tsc");

it("package.json declares types, exports and engines, and no runtime dependencies", () => {
  const pkg = JSON.parse(readFileSync(join(SDK_DIR, "package.json"), "utf8"));
  assert.equal(pkg.name, "@zot/ext");
  assert.equal(pkg.type, "module");
  assert.equal(pkg.types, "./dist/index.d.ts");
  assert.deepEqual(pkg.exports["."], { types: "./dist/index.d.ts", import: "./dist/index.js", default: "./dist/index.js" });
  assert.equal(pkg.engines.node, ">=18");
  assert.equal(pkg.dependencies, undefined);
  assert.ok(pkg.files.includes("dist"));
  // dist imports only Node built-ins and itself.
  for (const file of readdirSync(join(SDK_DIR, "dist")).filter((f) => f.endsWith(".js"))) {
    const source = readFileSync(join(SDK_DIR, "dist", file), "utf8");
    const specs = [
      ...source.matchAll(/^\s*(?:import|export)\b[^;]*?\bfrom\s*["']([^"']+)["']/gm),
      ...source.matchAll(/^\s*import\s*["']([^"']+)["']/gm),
      ...source.matchAll(/\bimport\(\s*["']([^"']+)["']/g),
    ];
    for (const [, spec] of specs) {
      assert.ok(spec.startsWith("node:") || spec.startsWith("./"), `${file} imports ${spec}`);
    }
  }
});

it("the checked-in dist/ is what src/ compiles to (run `npm run build` if not)", async () => {
  const out = tempDir();
  const result = await run(process.execPath, [TSC, "-p", join(SDK_DIR, "tsconfig.json"), "--outDir", out], {
    cwd: SDK_DIR,
    timeout: 120000,
  });
  assert.equal(result.code, 0, `tsc failed:\n${result.stdout}${result.stderr}`);
  const built = readdirSync(out).sort();
  assert.deepEqual(readdirSync(join(SDK_DIR, "dist")).sort(), built);
  for (const file of built) {
    assert.equal(
      readFileSync(join(SDK_DIR, "dist", file), "utf8"),
      readFileSync(join(out, file), "utf8"),
      `dist/${file} is stale: run \`npm run build\` in sdk/typescript`,
    );
  }
});

it("the types compile for an extension author (test/types/usage.ts)", async () => {
  const result = await run(process.execPath, [TSC, "-p", join(SDK_DIR, "test", "types", "tsconfig.json")], {
    cwd: SDK_DIR,
    timeout: 120000,
  });
  assert.equal(result.code, 0, `${result.stdout}${result.stderr}`);
});

it("the todo example type-checks against the SDK (// @ts-check)", async () => {
  const result = await run(process.execPath, [TSC, "-p", join(SDK_DIR, "test", "types", "tsconfig.examples.json")], {
    cwd: SDK_DIR,
    timeout: 120000,
  });
  assert.equal(result.code, 0, `${result.stdout}${result.stderr}`);
});
