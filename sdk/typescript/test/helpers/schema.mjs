// Validates frames against the protocol's JSON Schema files under
// <repo>/schema/ (or $ZOT_SCHEMA_DIR): ext-frame.schema.json for what an
// extension sends, host-frame.schema.json for what the host (or our fake
// host) sends. When the files are missing the checks report "skipped".

import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

import Ajv from "ajv";
import Ajv2019 from "ajv/dist/2019.js";
import Ajv2020 from "ajv/dist/2020.js";

import { REPO } from "./proc.mjs";

export function schemaDir() {
  return process.env.ZOT_SCHEMA_DIR ?? join(REPO, "schema");
}

let cache;

function compile(file) {
  const schema = JSON.parse(readFileSync(file, "utf8"));
  const draft = String(schema.$schema ?? "");
  const AjvClass = draft.includes("2020-12") ? Ajv2020 : draft.includes("2019-09") ? Ajv2019 : Ajv;
  const options = { strict: false, allErrors: true, validateFormats: false };
  const validate = new AjvClass(options).compile(schema);
  // For readable errors: the oneOf variant for each frame type, compiled alone.
  const variants = new Map();
  for (const variant of schema.oneOf ?? []) {
    const type = variant?.properties?.type?.const;
    if (typeof type === "string") {
      const { oneOf: _oneOf, ...rest } = schema;
      variants.set(type, new AjvClass(options).compile({ ...rest, ...variant }));
    }
  }
  return { validate, variants, file };
}

/** `{ ext, host }` validators, or null when the schema files are not there. */
export function validators() {
  if (cache !== undefined) return cache;
  const dir = schemaDir();
  const extFile = join(dir, "ext-frame.schema.json");
  const hostFile = join(dir, "host-frame.schema.json");
  cache = existsSync(extFile)
    ? { ext: compile(extFile), host: existsSync(hostFile) ? compile(hostFile) : null, dir }
    : null;
  return cache;
}

function problems(compiled, frame) {
  if (compiled.validate(frame)) return null;
  const variant = compiled.variants.get(frame?.type);
  const errors = variant && !variant(frame) ? variant.errors : compiled.validate.errors;
  return (errors ?? [])
    .slice(0, 6)
    .map((e) => `${e.instancePath || "/"} ${e.message} ${e.params ? JSON.stringify(e.params) : ""}`)
    .join("\n    ");
}

function check(kind, frames, where) {
  const v = validators();
  if (!v || !v[kind]) return { skipped: true, count: 0 };
  const bad = [];
  for (const frame of frames) {
    const why = problems(v[kind], frame);
    if (why) bad.push(`  ${JSON.stringify(frame)}\n    ${why}`);
  }
  assert.equal(bad.length, 0, `${bad.length} frame(s) ${where} violate ${v[kind].file}:\n${bad.join("\n")}`);
  return { skipped: false, count: frames.length };
}

/** Asserts every frame is a valid extension → host frame. */
export function assertExtFrames(frames, where = "from the extension") {
  return check("ext", frames, where);
}

/** Asserts every frame is a valid host → extension frame. */
export function assertHostFrames(frames, where = "from the host") {
  return check("host", frames, where);
}

/**
 * Reads every `<name>.jsonl` frame log the fixtures wrote into `dir`
 * (see fixtures/_lib/ext.mjs), checks each line is one JSON object and
 * validates it. Resolves `{ frames: {name: [...]}, count, skipped }`.
 */
export function validateFrameLogs(dir) {
  const frames = {};
  let count = 0;
  let skipped = false;
  if (!existsSync(dir)) return { frames, count, skipped };
  for (const file of readdirSync(dir).filter((f) => f.endsWith(".jsonl"))) {
    const text = readFileSync(join(dir, file), "utf8");
    assert.ok(text.endsWith("\n"), `${file}: the last frame is not terminated by LF`);
    const list = text
      .slice(0, -1)
      .split("\n")
      .map((line) => {
        assert.ok(!line.includes("\r"), `${file}: a frame contains CR: ${line}`);
        return JSON.parse(line);
      });
    frames[file.replace(/\.jsonl$/, "")] = list;
    const result = assertExtFrames(list, `written by ${file}`);
    skipped ||= result.skipped;
    count += list.length;
  }
  return { frames, count, skipped };
}
