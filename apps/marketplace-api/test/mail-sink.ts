import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';

export interface ReceivedMail {
  from: string;
  to: string[];
  subject: string;
  text: string;
  html: string;
}

/**
 * A real SMTP server on loopback that keeps every message it receives, parsed. Point the app at it
 * with `SMTP_URL: sink.url`, then `await t.app.mailer.idle()` before reading `sink.messages`.
 */
export async function startSmtpSink() {
  const messages: ReceivedMail[] = [];
  const server = new SMTPServer({
    logger: false,
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    onData(stream, session, callback) {
      simpleParser(stream)
        .then((parsed) => {
          messages.push({
            from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
            to: session.envelope.rcptTo.map((r) => r.address),
            subject: parsed.subject ?? '',
            text: parsed.text ?? '',
            html: typeof parsed.html === 'string' ? parsed.html : '',
          });
          callback();
        })
        .catch((error: Error) => callback(error));
    },
  });
  server.listen(0, '127.0.0.1');
  await once(server.server, 'listening');
  const { port } = server.server.address() as AddressInfo;
  return {
    url: `smtp://127.0.0.1:${port}`,
    messages,
    /** The messages sent to one address, oldest first. */
    to(address: string) {
      return messages.filter((m) => m.to.includes(address));
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

type Sink = Awaited<ReturnType<typeof startSmtpSink>>;

/** The newest message an address received, once every queued e-mail is out. */
export async function lastMailTo(app: { mailer: { idle(): Promise<void> } }, sink: Sink, address: string): Promise<ReceivedMail> {
  await app.mailer.idle();
  const mails = sink.to(address);
  if (mails.length === 0) throw new Error(`no e-mail reached ${address}`);
  return mails.at(-1)!;
}

/** The six-digit code in a message's text. */
export function codeIn(mail: ReceivedMail): string {
  const match = /\b(\d{6})\b/.exec(mail.text);
  if (!match) throw new Error(`no code in: ${mail.text}`);
  return match[1]!;
}

/** The token of the link to `path` (e.g. `/reset-password`) in a message's text. */
export function linkTokenIn(mail: ReceivedMail, path: string): string {
  const match = new RegExp(`${path.replace(/[/.]/g, '\\$&')}\\?token=(\\S+)`).exec(mail.text);
  if (!match) throw new Error(`no ${path} link in: ${mail.text}`);
  return decodeURIComponent(match[1]!);
}
