/** Longer lines are cut: the message keeps far less (65 536 characters), JSON context a little more. */
export const MAX_LINE_BYTES = 1024 * 1024;

/**
 * Cuts a byte stream into lines (LF or CRLF), decoding each as UTF-8. A line longer than
 * `maxLineBytes` keeps its beginning and drops the rest up to its end, so that output without
 * newlines cannot make it hold unbounded memory.
 */
export class LineSplitter {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private skipping = false;

  constructor(private readonly maxLineBytes = MAX_LINE_BYTES) {}

  /** The lines `chunk` completes. */
  push(chunk: Buffer): string[] {
    const lines: string[] = [];
    let start = 0;
    for (let end = chunk.indexOf(10); end !== -1; end = chunk.indexOf(10, start)) {
      this.take(chunk.subarray(start, end));
      if (!this.skipping || this.pendingBytes > 0) lines.push(this.line());
      this.skipping = false;
      start = end + 1;
    }
    this.take(chunk.subarray(start));
    if (this.pendingBytes >= this.maxLineBytes && !this.skipping) {
      lines.push(this.line());
      this.skipping = true;
    }
    return lines;
  }

  /** The last line, when the stream did not end with a newline. */
  end(): string[] {
    const last = this.pendingBytes > 0 ? [this.line()] : [];
    this.skipping = false;
    return last;
  }

  private take(part: Buffer): void {
    if (this.skipping || part.length === 0) return;
    const room = this.maxLineBytes - this.pendingBytes;
    const kept = part.length > room ? part.subarray(0, room) : part;
    // Copied: the chunk's memory is the stream's, and a short piece would hold all of it.
    this.pending.push(Buffer.from(kept));
    this.pendingBytes += kept.length;
  }

  private line(): string {
    const text = this.pending.length === 1 ? this.pending[0]!.toString('utf8') : Buffer.concat(this.pending, this.pendingBytes).toString('utf8');
    this.pending = [];
    this.pendingBytes = 0;
    return text;
  }
}
