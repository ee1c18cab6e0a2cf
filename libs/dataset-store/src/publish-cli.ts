#!/usr/bin/env node
// Entry point of `npm run dataset:publish -- FILE`; the logic (and its tests) live in nats-publish.ts.
import { runPublishCli } from './nats-publish.js';

process.exitCode = await runPublishCli(process.argv.slice(2), process.env, {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
});
