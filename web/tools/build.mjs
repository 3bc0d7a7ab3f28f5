// Bundles the page into one folder: index.html, app.js (the page, protobufjs
// and the protocol's descriptor), style.css. Run by the carom_web CMake
// target; needs only what `npm ci` installed (nothing is fetched).
//
//   node tools/build.mjs --out DIR [--proto DIR] [--dev]

import fs from "node:fs";
import path from "node:path";
import {fileURLToPath} from "node:url";
import {parseArgs} from "node:util";

import * as esbuild from "esbuild";

import {loadDescriptor} from "./descriptor.mjs";

const web = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const {values: args} = parseArgs({
  options: {
    out: {type: "string"},
    proto: {type: "string", default: path.join(web, "../proto")},
    dev: {type: "boolean", default: false},  // readable output, for debugging in a browser
  },
});
if (!args.out) {
  console.error("usage: node tools/build.mjs --out DIR [--proto DIR] [--dev]");
  process.exit(2);
}

// A module that exists only at build time: the protocol's descriptor.
const generated = {
  name: "carom-generated",
  setup(build) {
    build.onResolve({filter: /^carom:/}, (a) => ({path: a.path, namespace: "carom"}));
    build.onLoad({filter: /.*/, namespace: "carom"}, (a) => {
      if (a.path === "carom:descriptor")
        return {contents: JSON.stringify(loadDescriptor(args.proto)), loader: "json"};
      return {errors: [{text: `unknown generated module ${a.path}`}]};
    });
  },
};

fs.mkdirSync(args.out, {recursive: true});
await esbuild.build({
  entryPoints: [path.join(web, "src/main.js")],
  bundle: true,
  format: "iife",
  target: ["chrome100", "firefox100", "safari15"],
  minify: !args.dev,
  sourcemap: args.dev ? "inline" : false,
  legalComments: "linked",  // protobufjs's licence, next to app.js
  outfile: path.join(args.out, "app.js"),
  plugins: [generated],
  logLevel: "warning",
});
for (const f of ["index.html", "style.css"]) fs.copyFileSync(path.join(web, "src", f), path.join(args.out, f));
