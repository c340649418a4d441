import { spawn } from 'node:child_process';
import { BIN, outputOf, type CliResult } from './process.js';

/**
 * Runs python3's pty module as the terminal: the command's stderr is a pseudo-terminal 120 columns wide,
 * its stdout a pipe (so that a test sees them apart, as a user redirecting an export does). `stderr` is
 * what the terminal received (line ends as \r\n).
 */
const TERMINAL = `
import fcntl, os, pty, struct, subprocess, sys, termios
master, slave = pty.openpty()
fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack('HHHH', 24, 120, 0, 0))
child = subprocess.Popen(sys.argv[1:], stdin=subprocess.DEVNULL, stderr=slave)
os.close(slave)
seen = b''
while True:
    try:
        chunk = os.read(master, 65536)
    except OSError:
        break
    if not chunk:
        break
    seen += chunk
code = child.wait()
sys.stderr.buffer.write(seen)
sys.exit(code)
`;

export async function runCliOnTerminal(args: string[], env: Record<string, string | undefined> = {}): Promise<CliResult> {
  const merged = { ...process.env, ...env };
  for (const [key, value] of Object.entries(merged)) if (value === undefined) delete merged[key];
  return outputOf(spawn('python3', ['-c', TERMINAL, process.execPath, BIN, ...args], { env: merged, stdio: ['ignore', 'pipe', 'pipe'], timeout: 60_000 }));
}
