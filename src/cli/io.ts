/** What the CLI touches outside itself, so tests can run it in-process too. */
export interface CliIo {
  out(text: string): void;
  err(text: string): void;
  readFile(path: string): string;
  /** Writes a file, creating its folder when missing. */
  writeFile(path: string, data: string | Uint8Array): void;
}

/** Exit codes: 0 done, 1 the schedule given is invalid or malformed, 2 bad usage (flags, values, files). */
export const EXIT_OK = 0;
export const EXIT_INVALID = 1;
export const EXIT_USAGE = 2;
