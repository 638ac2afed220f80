import { createTransport } from 'nodemailer';

export interface OutgoingMail {
  to: string;
  subject: string;
  text: string;
  html?: string;
}

/** Hands one message to a mail server; rejects when it was not accepted. */
export interface MailTransport {
  readonly kind: 'smtp';
  /** Resolves with the server-assigned Message-ID (safe to log: it names, never quotes, the message). */
  send(message: OutgoingMail): Promise<{ messageId?: string }>;
  close(): Promise<void>;
}

/** Nodemailer over SMTP; credentials and TLS come from the URL (smtp://user:pass@host:port, smtps://…). */
export function createSmtpTransport(options: { url: string; from: string }): MailTransport {
  const transport = createTransport(
    {
      url: options.url,
      // Nodemailer's defaults wait minutes for a silent server; a request-triggered e-mail should not.
      connectionTimeout: 10_000,
      greetingTimeout: 10_000,
      socketTimeout: 30_000,
    },
    { from: options.from },
  );
  return {
    kind: 'smtp',
    async send(message) {
      const info = await transport.sendMail({
        to: message.to,
        subject: message.subject,
        text: message.text,
        ...(message.html ? { html: message.html } : {}),
      });
      if (info.rejected.length > 0) throw new Error(`SMTP server rejected ${message.to}: ${info.response}`);
      return { messageId: info.messageId };
    },
    async close() {
      transport.close();
    },
  };
}
