import { defineTemplate } from '../../integrations/mail/templates.js';

/** Paragraphs of the administrator's text: blank lines separate them. */
const paragraphsOf = (body: string) =>
  body
    .split(/\n\s*\n/)
    .map((p) => p.trim())
    .filter(Boolean);

/** A broadcast by e-mail: the administrator's title and text, framed in the recipient's language. */
export const broadcastMail = defineTemplate<{ firstName: string; title: string; body: string }>('broadcast', {
  fr: ({ firstName, title, body }) => ({
    subject: title,
    paragraphs: [`Bonjour ${firstName},`, ...paragraphsOf(body), "— L'équipe de la plateforme"],
  }),
  en: ({ firstName, title, body }) => ({
    subject: title,
    paragraphs: [`Hello ${firstName},`, ...paragraphsOf(body), "— The platform's team"],
  }),
});
