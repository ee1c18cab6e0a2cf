#!/usr/bin/env node
import { runGenerateCommand } from './command.js';

process.exitCode = await runGenerateCommand(process.argv.slice(2), process);
