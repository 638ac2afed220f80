import { defineTemplate } from '../../integrations/mail/templates.js';

/** Tells the owner that the password changed, so that a change made by someone else does not go unnoticed. */
export const passwordChangedNotice = defineTemplate<{ firstName: string }>('password_changed', {
  fr: ({ firstName }) => ({
    subject: 'Votre mot de passe a été modifié',
    paragraphs: [
      `Bonjour ${firstName},`,
      'Le mot de passe de votre compte vient d’être modifié. Vos autres appareils ont été déconnectés.',
      'Si vous n’êtes pas à l’origine de ce changement, réinitialisez votre mot de passe sans attendre et contactez notre support.',
    ],
  }),
  en: ({ firstName }) => ({
    subject: 'Your password was changed',
    paragraphs: [
      `Hello ${firstName},`,
      'The password of your account has just been changed. Your other devices have been signed out.',
      'If you did not make this change, reset your password right away and contact our support.',
    ],
  }),
});
