/**
 * The directory a command's relative paths are relative to. npm runs a script in the package's
 * directory whatever directory it was typed in, and names that one INIT_CWD: `cd data && npm run
 * dataset:publish -- --check mine.json` looked for the repository root's mine.json.
 */
export function callerDirectory(env: NodeJS.ProcessEnv): string {
  return env.npm_lifecycle_event !== undefined && env.INIT_CWD ? env.INIT_CWD : process.cwd();
}
