/**
 * The directory a command's relative paths are relative to. npm runs a script in the package's
 * directory whatever directory it was typed in, and names that one INIT_CWD: `cd data && npm run
 * dataset:publish -- --check mine.json` looked for the repository root's mine.json. Only when npm
 * ran `script` itself: a process that another npm script started inherits both variables, and its
 * own working directory is where it runs.
 */
export function callerDirectory(env: NodeJS.ProcessEnv, script: string): string {
  return env.npm_lifecycle_event === script && env.INIT_CWD ? env.INIT_CWD : process.cwd();
}
