#!/usr/bin/env node
import { callerDirectory } from '@reviews/runtime/caller-directory';
import { runGenerateCommand } from './command.js';

process.exitCode = await runGenerateCommand(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr, directory: callerDirectory(process.env, 'dataset:generate') });
