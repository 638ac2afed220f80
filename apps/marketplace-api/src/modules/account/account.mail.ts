import { defineTemplate } from '../../integrations/mail/templates.js';

/**
 * Sent to the former address when the account's e-mail changes: the owner hears of it even when
 * someone else holding a session made the change.
 */
export const emailChangedNotice = defineTemplate<{ firstName: string; newEmail: string }>('email_changed', {
  fr: ({ firstName, newEmail }) => ({
    subject: 'L’adresse e-mail de votre compte a été modifiée',
    paragraphs: [
      `Bonjour ${firstName},`,
      `L’adresse e-mail de votre compte est désormais ${newEmail}. Les messages ne seront plus envoyés à cette adresse.`,
      'Si vous n’êtes pas à l’origine de ce changement, contactez notre support sans attendre.',
    ],
  }),
  en: ({ firstName, newEmail }) => ({
    subject: 'The e-mail address of your account was changed',
    paragraphs: [
      `Hello ${firstName},`,
      `The e-mail address of your account is now ${newEmail}. Messages will no longer be sent to this address.`,
      'If you did not make this change, contact our support right away.',
    ],
  }),
});
