/**
 * Headless Chromium (Debian's, driven by playwright-core) for the browser tests: the WebRTC leg
 * (test/media/webrtc-browser.test.ts) and the portal's softphone (test/web/portal.browser.test.ts). One set of
 * flags for a quiet, sandbox-free headless run as root on a box with no display, plus each test's own; `close()`
 * also kills any Chromium process of ours left behind.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

const BASE_FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--autoplay-policy=no-user-gesture-required',
];

export interface LaunchedChromium {
  browser: Browser;
  /** Closes the browser, then SIGKILLs the process group of every Chromium this process started. */
  close(): Promise<void>;
}

/** Starts /usr/bin/chromium headless with the common flags and `flags` (a test's own). */
export async function launchChromium(flags: readonly string[] = []): Promise<LaunchedChromium> {
  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: [...BASE_FLAGS, ...flags],
  });
  const pids = childChromiums();
  return {
    browser,
    async close() {
      await browser.close().catch(() => undefined);
      // Normally gone already; never leave a Chromium behind. Playwright starts it in its own process group.
      for (const pid of pids) {
        try {
          process.kill(-pid, 'SIGKILL');
        } catch {
          /* exited */
        }
      }
    },
  };
}

/** Chromium processes this test process started (their parent is us). */
function childChromiums(): number[] {
  const out: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      const m = /^\d+ \((.*)\) \S+ (\d+)/.exec(stat);
      if (m && Number(m[2]) === process.pid && /chrom/.test(m[1]!)) out.push(Number(d));
    } catch {
      /* gone */
    }
  }
  return out;
}
